-- params: $job $now $config $code $ledger
-- What a full run built every mart from, recorded just before it publishes.
insert or replace into ingest_state (job, recorded_at, config_digest, code_digest, ledger_digest)
values ($job, $now, $config, $code, $ledger)
