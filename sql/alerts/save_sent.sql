-- params: $finding_key, $rule_id, $resource_id, $status, $daily_waste, $currency, $as_of, $action_id,
--         $action_kind, $reason, $sent_at
-- A finding posted: what was sent replaces what was sent before, the count goes up, and it is running now.
insert into alerts_sent (
    finding_key, rule_id, resource_id, status, daily_waste, currency, as_of, action_id, action_kind, reason,
    sent_at, sends, last_live_as_of, stopped_since_sent
) values (
    $finding_key, $rule_id, $resource_id, $status, $daily_waste::decimal(18, 6), $currency,
    $as_of::timestamp, $action_id, $action_kind, $reason, $sent_at::timestamp, 1, $as_of::timestamp, false
)
on conflict (finding_key) do update set
    rule_id = excluded.rule_id,
    resource_id = excluded.resource_id,
    status = excluded.status,
    daily_waste = excluded.daily_waste,
    currency = excluded.currency,
    as_of = excluded.as_of,
    action_id = excluded.action_id,
    action_kind = excluded.action_kind,
    reason = excluded.reason,
    sent_at = excluded.sent_at,
    sends = alerts_sent.sends + 1,
    last_live_as_of = excluded.last_live_as_of,
    stopped_since_sent = false
