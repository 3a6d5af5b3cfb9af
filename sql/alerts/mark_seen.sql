-- params: $live, $as_of
-- A check's verdict on every finding sent before: those still running ($live: their finding_keys) were seen
-- at $as_of; the others stopped since they were sent, so running again is a change worth a new post.
update alerts_sent
set
    last_live_as_of = case when list_contains($live::varchar[], finding_key) then $as_of::timestamp
        else last_live_as_of end,
    stopped_since_sent = stopped_since_sent or not list_contains($live::varchar[], finding_key)
