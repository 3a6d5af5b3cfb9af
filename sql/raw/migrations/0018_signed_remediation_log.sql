-- schema version 18: approvals are signed and remediation_log is a keyed chain (pipelines/remediate/audit.py).
-- New columns only; rows written before stay as they are, outside the chain, and their approvals no longer
-- count (the first signed row says so once and records how many rows came before it, with their digest).
alter table remediation_log add column seq bigint;
alter table remediation_log add column os_user varchar;
alter table remediation_log add column key_id varchar;
alter table remediation_log add column action_digest varchar;
alter table remediation_log add column signature varchar;
alter table remediation_log add column row_hmac varchar;
