-- The first non-empty value of a normalised tag MAP among `keys` (a list of normalised keys).
create or replace temp macro tag_lookup(m, keys) as
    case when m is null then null else
        list_filter(list_transform(keys, lambda k: nullif(trim(m[k]), '')), lambda v: v is not null)[1]
    end;
