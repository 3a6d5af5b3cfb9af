-- params: $digest $now
-- What a writable connect made the file agree with, recorded once its schema check and catalogue reload
-- are done (the previous row deleted first, in the same transaction).
insert into connect_digest (digest, recorded_at) values ($digest, $now)
