-- remediation_kind(rule_id): the remediation action a rule's finding calls for (NULL: none), and
-- remediation_action_id(rule_id, resource_id): that action's stable id, a hash of rule, resource, kind and
-- target (the resource id). sql/remediate/candidates.sql plans with them; the weekly report names the
-- same ids (sql/reports/rpt_weekly_actions.sql) before or after `wastewatch remediate plan` ran.
create or replace temp macro remediation_kind(rule_id) as
    case rule_id
        when 'GPU001' then 'stop_instance'
        when 'STO004' then 'abort_multipart_uploads'
        when 'STO003' then 'lifecycle_transition'
        when 'STO001' then 'delete_prefix'
    end;
create or replace temp macro remediation_action_id(rule_id, resource_id) as
    substr(
        sha1(
            rule_id || '|' || coalesce(resource_id, '') || '|' || remediation_kind(rule_id) || '|'
            || coalesce(resource_id, '')
        ),
        1,
        16
    );
