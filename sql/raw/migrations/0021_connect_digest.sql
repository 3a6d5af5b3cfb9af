-- Version 21: connect_digest records what a writable connect last made the file agree with (today's
-- schema, comments and catalogues), so the next one skips re-checking them. A version, not a table created
-- on connect: an older wastewatch, which re-checks without updating the row, must refuse the file.
create table if not exists connect_digest (
    digest varchar not null,
    recorded_at timestamp not null
);
