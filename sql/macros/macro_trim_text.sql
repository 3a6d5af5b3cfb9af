-- trim_text(s): exactly DuckDB's trim(s) (VARCHAR; a JSON or other text argument is cast, as trim() casts
-- it), at a fraction of its cost when there is nothing to trim. trim() costs about 4 ns per byte of the
-- value, however few spaces it finds: 0.33 thread-s per million 80-byte tag texts. It only ever removes
-- U+0020 and the non-ASCII space separators (U+00A0, U+1680, U+2000-U+200A, U+202F, U+205F, U+3000; not
-- tabs or line breaks), so a value that neither starts nor ends with a space and is all ASCII (as many
-- bytes as characters) is returned as it is (tests/ingest/billing/test_storage.py checks every code point
-- against trim()). The guard compares bytes at both ends and two lengths: 0.04-0.05 thread-s per million
-- values, where testing the first and the last character (`s[-1]` walks the whole value) cost 0.07-0.09.
-- The cast matters: on JSON, `s[-1]` would index a JSON array.
create or replace temp macro trim_text(s) as
    case
        when starts_with(s::varchar, ' ') or suffix(s::varchar, ' ') or strlen(s::varchar) <> length(s::varchar)
            then trim(s::varchar)
        else s::varchar
    end;
