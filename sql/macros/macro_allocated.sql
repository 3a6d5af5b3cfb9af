-- allocated(cost, upto): the part of a line's cost allocated up to a point of its span, `upto` being the
-- share of the span before that point (a DOUBLE from 0 to 1): exactly 0 at the span's start, exactly the
-- cost at its end, and in between the cost times the share, rounded to the money scale (12 decimals).
-- cost_hourly gives each hour allocated(cost, share up to the hour's end) - allocated(cost, share up to its
-- start): consecutive hours share a boundary, so a line's hours add up to the line exactly (the sum
-- telescopes), whatever the rounding in between.
create or replace temp macro allocated(cost, upto) as
    case
        when upto >= 1 then cost
        when upto <= 0 then cost * 0
        else (cost * upto::decimal(18, 12))::decimal(38, 12)
    end;
