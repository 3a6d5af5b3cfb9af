-- grain: as sql/marts/storage_objects_current.sql, with `bucket_part` (the bucket) to partition the Parquet by
-- depends_on: the temporary views `inventory_objects` (sql/spark/staging/s3_inventory_objects.sql: the
--             objects of each bucket's newest snapshot), `snapshots` (sql/spark/warehouse/storage_snapshots.sql)
--             and `storage_patterns` (sql/spark/warehouse/storage_patterns.sql), handed over by the warehouse
-- Spark SQL's form of sql/marts/storage_objects_current.sql, matching paths the same way: each distinct head
-- (the path's first segments, as deep as the deepest pattern, and how many there are) is matched against
-- the patterns once, the first match wins. Where the two dialects differ: Spark's arrays and lambda indexes
-- start at 0 (try_element_at is 1-based and NULL out of range, as DuckDB's [] is), split() takes a regex
-- ('/' is a plain one), and a placeholder's {step} and {loss}/{score} are cast as DuckDB casts text: blanks
-- around, `_` between digits, 0x/0b integers, and a decimal step rounded half away from zero.
with objects as (
    select
        o.bucket,
        o.key,
        o.version_id,
        o.is_latest,
        o.size_bytes,
        o.last_modified,
        o.etag,
        o.is_multipart,
        o.storage_class,
        o.encryption_status,
        o.checksum_algorithm,
        o.checksum_type,
        o.checksum,
        s.inventory_date,
        s.store,
        s.inventory_at,
        s.source,
        s.region_id,
        s.resource_id,
        case when s.store = 's3' then concat('s3://', o.bucket, '/') else concat(o.bucket, '/') end || o.key as uri
    from inventory_objects as o
    inner join snapshots as s on s.x_file_id = o.x_file_id
    where not coalesce(o.is_delete_marker, false)
),

patterns as (
    select
        named_struct(
            'ord', ord, 'kind', kind, 'store', store, 'prefix', prefix, 'segments', segments,
            'open_ended', open_ended, 'project_idx', project_idx, 'run_idx', run_idx, 'step_idx', step_idx,
            'metric_idx', metric_idx, 'metric_name', metric_name, 'dataset_idx', dataset_idx
        ) as p,
        -- '/'-separated parts of a path the pattern looks at (its prefix's and its segments)
        size(split(prefix, '/')) - 1 + size(segments) as depth
    from storage_patterns
),

pattern_list as (
    select
        array_sort(
            collect_list(p), (a, b) -> case when a.ord < b.ord then -1 when a.ord > b.ord then 1 else 0 end
        ) as all_patterns,
        coalesce(max(depth), 0) as head_parts
    from patterns
),

paths as (
    -- the path's first segments (as many as the deepest pattern looks at) and how many there are, counting
    -- at most one more: all that matching needs, shared by every file of a folder
    select
        o.*,
        array_join(slice(split(o.uri, '/'), 1, pl.head_parts), '/') as head,
        least(size(split(o.uri, '/')), pl.head_parts + 1) as head_len
    from objects as o
    cross join pattern_list as pl
),

heads as (
    select distinct o.store, o.head, o.head_len
    from paths as o
    cross join pattern_list as pl
    where size(pl.all_patterns) > 0
),

candidates as (
    select
        h.store,
        h.head,
        h.head_len,
        transform(
            pl.all_patterns,
            p -> named_struct(
                'p', p,
                'parts', case
                    when p.store = h.store and startswith(h.head || '/', p.prefix)
                        then split(substr(h.head, length(p.prefix) + 1), '/')
                end,
                -- segments after the pattern's prefix in the whole path (capped one above the head)
                'n', h.head_len - (size(split(p.prefix, '/')) - 1)
            )
        ) as tried
    from heads as h
    cross join pattern_list as pl
),

head_matches as (
    select
        store,
        head,
        head_len,
        try_element_at(
            filter(
                tried,
                c -> c.parts is not null
                and (
                    case
                        when c.p.open_ended then c.n > size(c.p.segments)
                        else c.n = size(c.p.segments)
                    end
                )
                and coalesce(
                    forall(
                        transform(
                            c.p.segments,
                            (s, i) -> case
                                when s.exact then try_element_at(c.parts, i + 1) = s.lit_prefix
                                else length(try_element_at(c.parts, i + 1)) > length(s.lit_prefix) + length(s.lit_suffix)
                                    and startswith(try_element_at(c.parts, i + 1), s.lit_prefix)
                                    and endswith(try_element_at(c.parts, i + 1), s.lit_suffix)
                            end
                        ),
                        ok -> ok
                    ),
                    true
                )
            ),
            1
        ) as m
    from candidates
),

-- a placeholder's value: its segment without the literal text around it
values_of as (
    select
        store,
        head,
        head_len,
        m,
        case when m.p.project_idx is not null then
            substr(
                try_element_at(m.parts, m.p.project_idx),
                length(try_element_at(m.p.segments, m.p.project_idx).lit_prefix) + 1,
                length(try_element_at(m.parts, m.p.project_idx))
                - length(try_element_at(m.p.segments, m.p.project_idx).lit_prefix)
                - length(try_element_at(m.p.segments, m.p.project_idx).lit_suffix)
            )
        end as ckpt_project,
        case when m.p.run_idx is not null then
            substr(
                try_element_at(m.parts, m.p.run_idx),
                length(try_element_at(m.p.segments, m.p.run_idx).lit_prefix) + 1,
                length(try_element_at(m.parts, m.p.run_idx))
                - length(try_element_at(m.p.segments, m.p.run_idx).lit_prefix)
                - length(try_element_at(m.p.segments, m.p.run_idx).lit_suffix)
            )
        end as run_id,
        case when m.p.step_idx is not null then
            trim(substr(
                try_element_at(m.parts, m.p.step_idx),
                length(try_element_at(m.p.segments, m.p.step_idx).lit_prefix) + 1,
                length(try_element_at(m.parts, m.p.step_idx))
                - length(try_element_at(m.p.segments, m.p.step_idx).lit_prefix)
                - length(try_element_at(m.p.segments, m.p.step_idx).lit_suffix)
            ))
        end as step_text,
        case when m.p.metric_idx is not null then
            trim(substr(
                try_element_at(m.parts, m.p.metric_idx),
                length(try_element_at(m.p.segments, m.p.metric_idx).lit_prefix) + 1,
                length(try_element_at(m.parts, m.p.metric_idx))
                - length(try_element_at(m.p.segments, m.p.metric_idx).lit_prefix)
                - length(try_element_at(m.p.segments, m.p.metric_idx).lit_suffix)
            ))
        end as metric_text
    from head_matches
    where m is not null
),

lineage as (
    select
        store,
        head,
        head_len,
        m.p.kind as role,
        m.p.prefix || array_join(slice(m.parts, 1, coalesce(m.p.run_idx, m.p.dataset_idx)), '/') || '/'
            as folder,
        ckpt_project,
        run_id,
        -- DuckDB's text -> BIGINT: digits with single `_` between them, 0x.. and 0b.., or a decimal (with
        -- an exponent) rounded half away from zero; anything else, or too large, is NULL
        case
            when step_text rlike '^[+-]?[0-9]+(_[0-9]+)*$' then try_cast(replace(step_text, '_', '') as bigint)
            when step_text rlike '^0[xX][0-9a-fA-F]+$' then try_cast(conv(substr(step_text, 3), 16, 10) as bigint)
            when step_text rlike '^0[bB][01]+$' then try_cast(conv(substr(step_text, 3), 2, 10) as bigint)
            when step_text rlike '^[+-]?([0-9]+(_[0-9]+)*[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$'
                then try_cast(round(try_cast(replace(step_text, '_', '') as decimal(38, 18)), 0) as bigint)
        end as pattern_step,
        -- DuckDB's text -> DOUBLE: a decimal with `_` between digits and an exponent, inf, infinity or nan
        case
            when metric_text rlike '^[+-]?(([0-9]+(_[0-9]+)*[.]?([0-9]+(_[0-9]+)*)?|[.][0-9]+(_[0-9]+)*)([eE][+-]?[0-9]+)?)$'
                or lower(metric_text) in ('inf', '+inf', '-inf', 'infinity', '+infinity', '-infinity', 'nan')
                then try_cast(replace(metric_text, '_', '') as double)
        end as metric,
        m.p.metric_name as metric_name,
        m.p.step_idx is not null as step_in_pattern
    from values_of
),

classified as (
    select
        o.*,
        l.role,
        l.ckpt_project,
        l.run_id,
        case when l.role = 'checkpoint' then l.folder end as run_prefix,
        case when l.role = 'dataset' then l.folder end as dataset,
        l.metric,
        l.metric_name,
        l.step_in_pattern,
        l.pattern_step
    from paths as o
    left join lineage as l on l.store = o.store and l.head = o.head and l.head_len = o.head_len
)

select
    store,
    bucket,
    key,
    version_id,
    is_latest,
    size_bytes,
    last_modified,
    etag,
    try_cast(nullif(regexp_extract(etag, '-([0-9]+)$', 1), '') as int) as etag_parts,
    storage_class,
    encryption_status,
    checksum_algorithm,
    checksum_type,
    checksum,
    region_id,
    resource_id,
    inventory_date,
    inventory_at,
    source,
    role,
    ckpt_project,
    run_id,
    run_prefix,
    -- the step: from the pattern's {step}, else the first step-like number below the run's folder
    case
        when role <> 'checkpoint' then cast(null as bigint)
        when step_in_pattern then pattern_step
        else coalesce(
            try_cast(nullif(regexp_extract(
                substr(uri, length(run_prefix) + 1),
                '(?i)(?:global_step|step|iteration|iter)[-_ =]*([0-9]+)', 1
            ), '') as bigint),
            try_cast(nullif(regexp_extract(
                substr(uri, length(run_prefix) + 1), '(?i)(?:checkpoint|ckpt)[-_ =]*([0-9]+)', 1
            ), '') as bigint),
            try_cast(nullif(regexp_extract(
                substr(uri, length(run_prefix) + 1), '(?i)epoch[-_ =]*([0-9]+)', 1
            ), '') as bigint)
        )
    end as step,
    metric,
    metric_name,
    dataset,
    bucket as bucket_part
from classified
