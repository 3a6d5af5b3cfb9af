-- grain: one row, or none
-- params: $job
select recorded_at, config_digest, code_digest, ledger_digest
from ingest_state
where job = $job
