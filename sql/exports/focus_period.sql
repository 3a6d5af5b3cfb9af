-- grain: one row per billing line of one billing period ($period)
-- depends_on: focus
-- The lines of one billing period as the export writes them, in the order of their source files and rows
-- (a restated period is written again whole). x_Extra stays a column here: the export spreads its keys.
select * exclude (x_BillingPeriod)
from focus
where x_BillingPeriod = $period
order by x_SourceName, x_SourceFile, x_SourceRow
