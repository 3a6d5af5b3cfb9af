-- placeholder for schema version 12, which another branch ships: DROP THIS FILE AT MERGE (the
-- prom branch's 0013 needs versions 11 and 12 to exist for its upgrade tests to run alone).
select 1;
