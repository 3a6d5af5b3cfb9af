-- tag_set_id(raw): the id of a billing line's tag set (billing_lines.x_tag_set, billing_tag_sets.x_tag_set)
-- for every billing reader: 64 bits of the MD5 of the raw tags' text (anything but text, such as the MAP
-- CUR 2.0 and FOCUS Parquet carry tags in, is written as JSON first; the type test folds at bind time).
-- Not DuckDB's hash(): it hashes text 8 bytes at a time, and two texts that differ only in the last byte
-- of two consecutive 8-byte words can share a hash ({"team":"proj-0a-run-00a"} and
-- {"team":"proj-0n-run-00f"}), which would give one set's lines the other's tags. MD5 costs 0.2 thread-s
-- more per million CSV lines (0.25 for a MAP, with its JSON), and lets a file whose sets the warehouse
-- already knows skip reading its tags a second time (BillingReader._file_tag_sets).
create or replace temp macro tag_set_id(raw) as
    (md5_number(case when typeof(raw) = 'VARCHAR' then raw::varchar else to_json(raw)::varchar end) >> 64)::ubigint;
