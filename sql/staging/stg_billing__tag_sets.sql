-- grain: one row per distinct tag set of one file (CUR, CUR 2.0 and FOCUS files)
-- depends_on: `_file_tags`, the file's distinct tag sets (`th` the id its lines store in x_tag_set,
--             tag_set_id; `tags_raw` the least raw text of its lines as JSON text, `tags_other` the
--             greatest), filled after the insert by BillingReader._file_tag_sets
--             (readers/billing_common.py): read from the file when it has sets the warehouse does not
--             know, else taken from billing_tag_sets
-- The reader stores the sets billing_tag_sets does not know yet, with their canonical tags resolved; two
-- raw texts with one id reject the file (store_tag_sets).
select
    th as x_tag_set,
    tags_raw as raw,
    tags_other as raw_other,
    normalize_tags(tags_raw) as tags
from _file_tags
where tags_raw is not null
