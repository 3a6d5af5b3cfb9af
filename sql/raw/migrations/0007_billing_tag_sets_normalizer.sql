-- schema version 7: each tag set records which normalising SQL made its `tags` (x_normalizer, a digest of
-- the macros and staging files that turn raw tags into tags). A known set is normalised again only when
-- that digest differs from the running code's, not for every file that has it. Sets stored before have
-- none, so each is normalised again the next time a file with it loads, as every set was until now.
alter table billing_tag_sets add column if not exists x_normalizer varchar;
