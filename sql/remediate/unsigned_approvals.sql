-- Approvals recorded before signing began (no place in the chain): they no longer count.
select count(*) from remediation_log where seq is null and event = 'approve'
