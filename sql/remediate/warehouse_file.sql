-- The file of the open warehouse: the key under which its chain's newest row is kept beside the key.
select path from duckdb_databases() where database_name = current_database()
