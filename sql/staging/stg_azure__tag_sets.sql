-- grain: one row per distinct tag set of one Azure cost export file
-- depends_on: the file relation `_src` (`_tags_raw`: the Tags column as JSON text, braces restored),
--             built by pipelines/ingest/readers/azure.py
select
    tag_set_id(_tags_raw) as x_tag_set,
    min(_tags_raw) as raw,
    max(_tags_raw) as raw_other,
    normalize_tags(min(_tags_raw)) as tags
from _src
where _tags_raw is not null
group by 1
