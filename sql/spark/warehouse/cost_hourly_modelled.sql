-- grain: as sql/intermediate/int_cost_modelled.sql
-- depends_on: int_cost_modelled
-- The modelled hosts' hours kept in the warehouse when `engine: spark` builds the bill's part of
-- cost_hourly: a small table, so the cost_hourly view does not price the hosts again on every read.
create or replace table cost_hourly_modelled as
select * from int_cost_modelled
