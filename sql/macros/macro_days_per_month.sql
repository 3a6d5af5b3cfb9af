-- days_per_month(): the days a monthly price covers (pipelines/units.py DAYS_PER_MONTH, same value and
-- type): a price per month x 7 / days_per_month() is the week's share of it.
create or replace temp macro days_per_month() as 30.44::decimal(4, 2);
