-- spread_start(cs, ce, bs, period) / spread_end(cs, ce, bs, be, period): the span cost_hourly spreads a
-- billing line over (and bill_months.sql reaches by). A line longer than 31 days (a commitment, contract or
-- annual fee, an end-of-contract true-up, a credit for a past year) is spread over its billing period
-- (billing_period_start to billing_period_end; without them the month x_billing_period names), not its
-- charge period: it lands in the month it was billed, so a 5-year fee rebuilds that month alone, not the
-- 60 of its term. Every other line keeps its charge period (cs to ce).
create or replace temp macro spread_start(cs, ce, bs, period) as
    case
        when epoch(ce) - epoch(cs) > 2678400 then coalesce(bs, strptime(period || '-01', '%Y-%m-%d'))
        else cs
    end;
create or replace temp macro spread_end(cs, ce, bs, be, period) as
    case
        when epoch(ce) - epoch(cs) > 2678400
            then coalesce(be, coalesce(bs, strptime(period || '-01', '%Y-%m-%d')) + interval 1 month)
        else ce
    end;
