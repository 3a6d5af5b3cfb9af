-- params: $names
-- Which of the tables remediation reads and writes are views instead (planted to run other SQL).
select view_name from duckdb_views() where not internal and list_contains($names, view_name)
