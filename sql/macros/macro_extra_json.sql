-- extra_json(x): the provider's other fields of a CUR line (a STRUCT of VARCHAR) as the JSON object stored
-- in x_extra: empty and NULL fields left out, NULL when none is left. The staging SQL runs it once per
-- distinct combination of a file's fields (a few per bill), and per line only for the lines whose
-- combination the sets it was given lack (stg_aws__cur2.sql).
create or replace temp macro extra_json(x) as
    nullif(
        to_json(map_from_entries(list_filter(
            map_entries(json_transform(to_json(x), '"MAP(VARCHAR, VARCHAR)"')),
            lambda e: e.value is not null and e.value <> ''
        ))),
        '{}'
    );
