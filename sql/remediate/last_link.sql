-- The chain's newest row: the next row's seq follows it and its row_hmac is chained into the next.
select seq, row_hmac from remediation_log where seq is not null order by seq desc limit 1
