-- job_type(name): a recurring job's type, its name without the trailing run number (llm-pretrain-train-41871
-- is llm-pretrain-train): how the advisors (ADV002, ADV003) and the estimator's failure rate group jobs.
create or replace temp macro job_type(name) as regexp_replace(coalesce(name, ''), '[-_.]?[0-9]+$', '');
