-- grain: one row per distinct raw tag text among a FOCUS file's first 10,000 lines that `_billing_tag_ids`
--        lacks (inserted into it before the file's insert)
-- depends_on: `_billing_sample`, the first 10,000 lines of the file relation `_src` of
--             pipelines/ingest/billing/focus.py (`_tags_raw`); the temp table
--             `_billing_tag_ids` (k: raw tag text, v: tag_set_id(k))
-- tag_set_id() is MD5 of the raw text: 0.25-0.5 thread-s per million lines, where a bill holds a few
-- thousand distinct tag sets. The staging SQL looks a line's text up here and computes the MD5 itself only
-- for a text the table lacks, so a text's id is the same either way.
select k, tag_set_id(k) as v
from (select distinct _tags_raw as k from _billing_sample)
where k is not null and k not in (select k from _billing_tag_ids)
