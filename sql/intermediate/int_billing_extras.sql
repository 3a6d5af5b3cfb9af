-- grain: one row per distinct x_extra of the bill's lines (NULL included)
-- depends_on: billing_line_items
-- What the marts read from a line's x_extra (the provider's columns FOCUS does not name), parsed once per
-- distinct value: a bill of millions of lines repeats a few hundred of them, so a mart joins this on
-- x_extra instead of parsing the JSON of every line.
-- usage_type: the AWS usage type (CUR lineItem/UsageType, CUR 2.0 line_item_usage_type, FOCUS x_UsageType), trimmed; NULL when empty
-- cur_product_code: CUR's lineItem/ProductCode
-- cur2_product_code: CUR 2.0's line_item_product_code
select
    x_extra,
    nullif(trim(coalesce(
        json_extract_string(x_extra, '$."lineItem/UsageType"'),
        json_extract_string(x_extra, '$.line_item_usage_type'),
        json_extract_string(x_extra, '$.x_UsageType'),
        json_extract_string(x_extra, '$.x_usagetype'),
        json_extract_string(x_extra, '$.x_usage_type')
    )), '') as usage_type,
    json_extract_string(x_extra, '$."lineItem/ProductCode"') as cur_product_code,
    json_extract_string(x_extra, '$.line_item_product_code') as cur2_product_code
from (select distinct x_extra from billing_line_items)
