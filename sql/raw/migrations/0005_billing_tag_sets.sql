-- schema version 5: billing lines point at their tag set (billing_tag_sets, created on connect like any
-- new table) instead of carrying the tags. The view billing_line_items and the column list it is built
-- from (billing_columns, which holds no rows; it gains x_tag_set) are dropped here and created again on
-- connect from sql/raw/. Lines stored before keep their own tag columns, which the view still reads.
drop view if exists billing_line_items;
drop table if exists billing_columns;
