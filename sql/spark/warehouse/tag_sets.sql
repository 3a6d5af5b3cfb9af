-- grain: one row per billing tag set: its raw text as the files have it and its canonical tags
-- depends_on: billing_tag_sets
-- Handed to Spark (the `tag_sets` view of sql/spark/staging/), which gives each line its set's team,
-- project and owner by the line's raw tags, as billing_line_items does by the set's id.
select x_tags_raw::varchar as raw, team, project, owner
from billing_tag_sets
where x_tags_raw is not null
