-- Whether text has the shape of an ISO 8601 date or date/time: four digits of year, then month and day
-- with two digits each (`2024-11-01...`; `2024/11/01...` too, which no reading could take for another
-- day). The TIMESTAMPTZ cast checks the rest; this only keeps it from guessing: it reads `4/1/25` as
-- the year 4 and `25-04-01` as the year 25. Position checks, not a regular expression: billing_ts runs
-- this on every timestamp of a bill.
create or replace temp macro billing_ts_form(t) as
    length(t) >= 10
    and substr(t, 1, 1) between '0' and '9' and substr(t, 2, 1) between '0' and '9'
    and substr(t, 3, 1) between '0' and '9' and substr(t, 4, 1) between '0' and '9'
    and substr(t, 5, 1) in ('-', '/') and substr(t, 8, 1) = substr(t, 5, 1)
    and (length(t) = 10 or substr(t, 11, 1) in ('T', ' '));
