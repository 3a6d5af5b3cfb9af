-- grain: one row per incomplete multipart upload per listing
-- Written by the s3_listing reader (ListMultipartUploads + ListParts): uploads started and never completed
-- or aborted keep their parts, and the parts are billed like objects.
create table if not exists storage_uploads (
    listed_at timestamp not null,         -- UTC time of the listing
    store varchar not null,               -- s3
    bucket varchar not null,
    key varchar not null,
    upload_id varchar not null,
    initiated timestamp,                  -- UTC
    storage_class varchar,
    parts integer,                        -- parts uploaded so far (NULL when parts were not listed)
    size_bytes bigint,                    -- bytes in those parts
    region_id varchar,
    resource_id varchar,
    source varchar not null,
    x_source_file varchar not null,
    x_file_id varchar not null
);
