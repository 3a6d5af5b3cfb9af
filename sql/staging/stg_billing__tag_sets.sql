-- grain: one row per distinct tag set of one file (CUR, CUR 2.0 and FOCUS files)
-- depends_on: `_billing_sets`, the file's distinct tag sets (g <= 1: `th` the hash of the raw tags text,
--             `tags_raw` the least raw text of its lines, `tags_other` the greatest), filled by the
--             aggregate pass over the file (readers/billing_common.py)
-- The reader stores the sets billing_tag_sets does not know yet, with their canonical tags resolved; two
-- raw texts with one hash reject the file (store_tag_sets).
select
    th as x_tag_set,
    tags_raw as raw,
    tags_other as raw_other,
    normalize_tags(tags_raw) as tags
from _billing_sets
where g <= 1 and tags_raw is not null
