-- grain: none: the column list of billing_line_items, with types and meanings (this table never holds a row)
-- FOCUS 1.2 columns in snake_case, canonical tags promoted, x_ columns for everything else. The view
-- `billing_line_items` lists exactly these columns in this order; `billing_lines` stores the ones its
-- sources fill (a reader's staging SQL names them), the view shows the others as NULL.
create table if not exists billing_columns (
    availability_zone varchar,            -- provider's zone inside the region (e.g. us-east-1a), when the charge has one
    billed_cost decimal(38, 12),          -- invoiced cost: after negotiated discounts, upfront commitment fees not amortised
    billing_account_id varchar,           -- invoiced account (AWS payer, Azure billing account/profile, GCP billing account)
    billing_account_name varchar,         -- display name of billing_account_id
    billing_account_type varchar,         -- provider's label for that kind of billing account
    billing_currency varchar,             -- ISO 4217 currency of billed_cost, effective_cost, list_cost and contracted_cost
    billing_period_end timestamp,         -- UTC, exclusive end of the invoice period
    billing_period_start timestamp,       -- UTC, start of the invoice period the line is billed in
    capacity_reservation_id varchar,      -- capacity reservation the charge belongs to, when any
    capacity_reservation_status varchar,  -- Used | Unused (the reservation's idle share)
    charge_category varchar,              -- Usage | Purchase | Tax | Credit | Adjustment
    charge_class varchar,                 -- Correction when the line corrects an earlier billing period, else NULL
    charge_description varchar,           -- the provider's description of the charge
    charge_frequency varchar,             -- One-Time | Recurring | Usage-Based
    charge_period_end timestamp,          -- UTC, exclusive end of the time the charge covers
    charge_period_start timestamp,        -- UTC, start of the time the charge covers (cost_hourly spreads over it)
    commitment_discount_category varchar,  -- Spend | Usage (what the commitment is measured in)
    commitment_discount_id varchar,       -- Reserved Instance / Savings Plan / CUD applied or bought
    commitment_discount_name varchar,     -- display name of commitment_discount_id
    commitment_discount_quantity double,  -- amount of the commitment used or bought, in commitment_discount_unit
    commitment_discount_status varchar,   -- Used | Unused (the unused share of the commitment in the charge period)
    commitment_discount_type varchar,     -- provider's label (Reserved Instance, Savings Plan, Committed Use Discount, ...)
    commitment_discount_unit varchar,     -- unit of commitment_discount_quantity
    consumed_quantity double,             -- usage measured, in consumed_unit (e.g. instance-hours, GB-months)
    consumed_unit varchar,                -- unit of consumed_quantity
    contracted_cost decimal(38, 12),      -- cost at the negotiated unit price, before commitment discounts
    contracted_unit_price decimal(28, 12),  -- negotiated price per pricing_unit, in billing_currency
    effective_cost decimal(38, 12),       -- amortised, after all discounts and prepaid commitments: rules price from it
    invoice_id varchar,                   -- the invoice the line appears on (FOCUS 1.2)
    invoice_issuer_name varchar,          -- who issues the invoice (the provider, or a reseller)
    list_cost decimal(38, 12),            -- cost at public list prices (list_unit_price x pricing_quantity)
    list_unit_price decimal(28, 12),      -- public price per pricing_unit, in billing_currency
    pricing_category varchar,             -- Standard | Dynamic (spot, preemptible) | Committed | Other
    pricing_currency varchar,             -- currency prices are quoted in, when it differs from billing_currency (FOCUS 1.2)
    pricing_currency_contracted_unit_price decimal(28, 12),  -- contracted_unit_price in pricing_currency
    pricing_currency_effective_cost decimal(38, 12),  -- effective_cost in pricing_currency
    pricing_currency_list_unit_price decimal(28, 12),  -- list_unit_price in pricing_currency
    pricing_quantity double,              -- volume priced, in pricing_unit
    pricing_unit varchar,                 -- unit the price is quoted per (may differ from consumed_unit)
    provider_name varchar,                -- cloud or service provider (AWS, Microsoft, Google Cloud, ...)
    publisher_name varchar,               -- producer of the service (a marketplace vendor, or the provider itself)
    region_id varchar,                    -- provider's region code (e.g. us-east-1), NULL for global charges
    region_name varchar,                  -- display name of region_id
    resource_id varchar,                  -- provider's id of the billed resource (instance id, bucket, disk), or NULL
    resource_name varchar,                -- display name of the resource, when the provider gives one
    resource_type varchar,                -- provider's kind of resource (e.g. Virtual Machine)
    service_category varchar,             -- FOCUS category: Compute, Storage, Networking, AI and Machine Learning, ...
    service_name varchar,                 -- the provider's service (Amazon EC2, Virtual Machines, Compute Engine, ...)
    service_subcategory varchar,          -- finer FOCUS category inside service_category (FOCUS 1.1)
    sku_id varchar,                       -- provider's id of the product (SKU) charged
    sku_meter varchar,                    -- what the SKU meters (e.g. Compute Usage)
    sku_price_details json,               -- properties of the SKU price as JSON (e.g. GPU count, instance family)
    sku_price_id varchar,                 -- provider's id of the SKU price (SKU x term x region)
    sub_account_id varchar,               -- account the resource runs in (AWS member account, Azure subscription, GCP project)
    sub_account_name varchar,             -- display name of sub_account_id
    sub_account_type varchar,             -- provider's label for that kind of sub account
    tags map(varchar, varchar),           -- normalised keys (lower case, trimmed, provider prefixes removed)
    team varchar,                         -- canonical tags, resolved through the `tags:` config: `team`
    project varchar,                      -- canonical `project` tag
    owner varchar,                        -- canonical `owner` tag
    job_id varchar,                       -- canonical `job_id` tag (a scheduler job or training run)
    x_host varchar,                       -- canonical `host` tag (maps telemetry hosts to the bill)
    x_tags_raw json,                      -- the tags exactly as the file had them
    x_instance_type varchar,              -- instance / VM type from the bill (e.g. p5.48xlarge), when it names one
    x_gpu_count integer,                  -- GPUs of the instance, when the bill says (x_ column or SkuPriceDetails)
    x_extra json,                         -- non-FOCUS columns of the source file
    x_focus_version varchar,              -- FOCUS files: version their columns match (1.0, 1.1, 1.2)
    x_source_name varchar,                -- the source's name in wastewatch.yaml (from the ledger: ingest_files.source)
    x_source_format varchar,              -- reader kind: focus | aws_cur | aws_cur2 | azure | gcp (ingest_files.kind)
    x_source_file varchar,                -- the file's uri, absolute path or s3://bucket/key (ingest_files.uri)
    x_file_id varchar,                    -- the file in the ingestion ledger (ingest_files.file_id)
    x_source_row bigint,                  -- 1-based data row in the source file
    x_billing_period varchar,             -- YYYY-MM of billing_period_start (partition key)
    x_loaded_at timestamp,                -- UTC time the line was loaded (ingest_files.loaded_at)
    x_line_item_id varchar,               -- the provider's line item id (CUR identity_line_item_id), when it has one
    x_line_key bigint,                    -- the line's row id in billing_lines: unique within a query, not stable across loads
    x_tag_set ubigint                     -- the line's tag set in billing_tag_sets (tags, x_tags_raw and the canonical tags come from it)
);
