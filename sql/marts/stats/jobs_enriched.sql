-- What the `jobs_enriched` asset's metadata shows after a build: jobs, those with telemetry, without a team,
-- and with their team taken from their hosts' billing tags.
select
    count(*) as jobs,
    count(*) filter (where gpus_observed > 0) as with_telemetry,
    count(*) filter (where team is null) as without_team,
    count(*) filter (where team_source = 'host billing tags') as team_from_hosts
from jobs_enriched
