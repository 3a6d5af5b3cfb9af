-- grain: one row per advisor x subject (instance family and region, or job type) x ISO week
-- Commitment and spot advice: what buying a commitment or moving a job type to spot would save, with the
-- finding contract's identity, reason, evidence and basis. Advice is never waste and never spend: no
-- waste or spend total reads this table.
create table if not exists advice (
    advice_id varchar primary key,        -- stable: sha1(advisor_id, resource_id, ISO week)
    advisor_id varchar not null,          -- ADV001 commitment, ADV002 spot
    advisor_name varchar not null,
    kind varchar not null,                -- commitment | spot
    week_start date not null,
    week_end date not null,
    resource_id varchar,                  -- the subject: provider/region/instance family, or the job type
    resource_type varchar,
    provider varchar,
    account_id varchar,
    region_id varchar,
    team varchar,
    project varchar,
    owner varchar,
    job_id varchar,
    status varchar not null,              -- recommended | not_recommended | insufficient_data
    reason varchar not null,              -- one sentence with the numbers
    evidence json,
    estimated_saving decimal(18, 6) not null,   -- expected saving a week if the advice is taken (0 unless recommended)
    currency varchar,
    basis varchar,                        -- the formula in words and where the discount comes from
    risk varchar,                         -- what could make the advice lose money, in words
    params json,
    detected_at timestamp not null
);
