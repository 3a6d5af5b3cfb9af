-- grain: as sql/marts/cost_hourly.sql
-- depends_on: cost_hourly_modelled
-- cost_hourly when `engine: spark` and the bill spread to no hours (Spark wrote no Parquet to read).
create or replace view cost_hourly as
select * from cost_hourly_modelled
