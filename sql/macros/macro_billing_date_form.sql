-- Whether text has the shape of a date billing_date reads: ISO (`2024-09-01...`: four digits of year, then
-- two of month and day) or month/day/four-digit year (`9/2/2023`, `09/21/2023`); never a two-digit year.
-- (billing_ts_form's checks, repeated: macros are created in file order, and this one comes first.)
create or replace temp macro billing_date_form(t) as
    (
        length(t) >= 10
        and substr(t, 1, 1) between '0' and '9' and substr(t, 4, 1) between '0' and '9'
        and substr(t, 5, 1) = '-' and substr(t, 8, 1) = '-'
    )
    or (length(t) between 8 and 10 and substr(t, -5, 1) = '/' and substr(t, -4, 1) between '0' and '9'
        and substr(t, -1, 1) between '0' and '9' and t not like '%/%/%/%');
