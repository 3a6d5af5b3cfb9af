-- GCP labels (a list of {key, value} records) -> a JSON object text {"key": "value", ...}; NULL when empty.
-- Takes the JSON array BigQuery's JSON export writes, or the Python-repr string CSV extracts carry
-- ("[{'key': 'env', 'value': 'prod'}]"). A key repeated after a merge keeps its first value.
create or replace temp macro gcp_labels_json(s) as
    case
        when s is null or trim(s) in ('', '[]', 'null') then null
        else nullif(
            to_json(map_from_entries(dedupe_tag_entries(list_transform(
                json_transform(
                    case
                        when starts_with(trim(s), '[{''')
                            then replace(replace(replace(replace(trim(s), '''', '"'), ': None', ': null'), ': True', ': true'), ': False', ': false')
                        else trim(s)
                    end,
                    '[{"key": "VARCHAR", "value": "VARCHAR"}]'
                ),
                lambda e: {'key': e.key, 'value': coalesce(e.value, '')}
            ))))::varchar,
            '{}'
        )
    end;
