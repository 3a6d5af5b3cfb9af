-- schema version 12 is the log-groups table of a parallel branch; this no-op stands in for it on the advice
-- branch so a version 11 warehouse upgrades here, and is replaced by that branch's 0012 at merge.
select 1;
