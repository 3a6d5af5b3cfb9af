-- What the alert last sent for each finding (sql/raw/alerts_sent.sql), by finding_key.
select *
from alerts_sent
