-- grain: one row per distinct x_extra of the bill's lines (NULL included)
-- depends_on: billing_line_items
-- What the marts read from a line's x_extra (the provider's columns FOCUS does not name), parsed once per
-- distinct value: a bill of millions of lines repeats a few hundred of them, so a mart joins this on
-- x_extra instead of parsing the JSON of every line (sql/macros/macro_extra_fields.sql).
-- usage_type: the AWS usage type (CUR lineItem/UsageType, CUR 2.0 line_item_usage_type, FOCUS x_UsageType), trimmed; NULL when empty
-- cur_product_code: CUR's lineItem/ProductCode
-- cur2_product_code: CUR 2.0's line_item_product_code
select
    x_extra,
    extra_usage_type(x_extra) as usage_type,
    extra_cur_product_code(x_extra) as cur_product_code,
    extra_cur2_product_code(x_extra) as cur2_product_code
from (select distinct x_extra from billing_line_items)
