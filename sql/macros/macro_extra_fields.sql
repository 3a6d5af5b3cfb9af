-- extra_usage_type(x), extra_cur_product_code(x), extra_cur2_product_code(x): what the marts read from a
-- bill line's x_extra (the provider's columns FOCUS does not name). The usage type is CUR's
-- lineItem/UsageType, CUR 2.0's line_item_usage_type or FOCUS's x_UsageType, trimmed, NULL when empty.
-- Run once per distinct x_extra (a bill of millions of lines repeats a few hundred), never per line:
-- int_billing_extras does so for the whole bill, the line marts for the lines of the files they build.
create or replace temp macro extra_usage_type(x) as
    nullif(trim(coalesce(
        json_extract_string(x, '$."lineItem/UsageType"'),
        json_extract_string(x, '$.line_item_usage_type'),
        json_extract_string(x, '$.x_UsageType'),
        json_extract_string(x, '$.x_usagetype'),
        json_extract_string(x, '$.x_usage_type')
    )), '');

create or replace temp macro extra_cur_product_code(x) as json_extract_string(x, '$."lineItem/ProductCode"');

create or replace temp macro extra_cur2_product_code(x) as json_extract_string(x, '$.line_item_product_code');
