-- `v` spelled as in `allowed` when it matches one of them ignoring case and spaces, else `v` trimmed.
-- FOCUS files drift in case ("Usage-based" vs "Usage-Based").
create or replace temp macro canonical_value(v, allowed) as
    coalesce(
        list_filter(allowed, lambda a: lower(a) = lower(trim(v)))[1],
        nullif(trim(v), '')
    );
