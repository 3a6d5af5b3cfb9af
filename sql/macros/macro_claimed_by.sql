-- claimed_by(claims, thresholds): the rule whose claim on a GPU-slice wins (gpu_claims.claims, sorted by
-- precedence): the first claim whose every test holds, NULL when none does. `thresholds` is a list of
-- {key, value} (rules/_claims.py binds it as $claim_thresholds: every claiming rule's params as
-- `<rule id>.<param>`); a test of a NULL measure, or of a threshold not given, fails.
create or replace temp macro claimed_by(claims, thresholds) as
    list_filter(claims, lambda c: coalesce(list_bool_and(list_transform(c.tests, lambda t: coalesce(
        case t.op
            when '<=' then t.measure <= map_from_entries(thresholds)[t.param]
            when '>=' then t.measure >= map_from_entries(thresholds)[t.param]
        end,
        false
    ))), true))[1].rule_id;
