-- A JSON object of tags -> MAP(varchar, varchar) with normalised keys; when two raw keys normalise to
-- the same key (" org" and "org"), the first one in the object wins. Empty keys are dropped.
create or replace temp macro dedupe_tag_entries(entries) as
    list_filter(
        entries,
        lambda e, i: e.key <> '' and list_position(list_transform(entries, lambda x: x.key), e.key) = i
    );

create or replace temp macro normalize_tags(j) as
    case
        when j is null or trim(j) in ('', '{}', 'null') then null
        else map_from_entries(
            dedupe_tag_entries(
                list_transform(
                    map_entries(json_transform(j, '"MAP(VARCHAR, VARCHAR)"')),
                    lambda e: {'key': normalize_tag_key(e.key), 'value': e.value}
                )
            )
        )
    end;
