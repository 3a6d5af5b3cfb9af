"""The starter `wastewatch.yaml` that `wastewatch init` writes, every setting shown and explained."""

STARTER_CONFIG = """\
# wastewatch configuration. Paths are relative to this file's folder.
# Reference: README.md, section "Configuration".

# The embedded DuckDB warehouse (written by ingest/evaluate; a read-only copy is published beside it
# as <name>.published.duckdb after every run, for ad-hoc queries).
warehouse: warehouse/wastewatch.duckdb

# Weekly reports land in <reports_dir>/<ISO week>/ (report.html and its pages, report.md, findings.csv, ...).
reports_dir: reports

# Billing currency used when a bill names none.
currency: USD

# The first week that can be evaluated and reported: the week of this day (default: the week of the
# earliest data in the warehouse). Set it to report on a historical trace, or to hide older weeks.
# history_start: 2020-01-06

# Resource limits of the warehouse connection (unset: DuckDB's defaults, i.e. 80% of RAM and every core).
# Beyond memory_limit DuckDB spills to temp_directory (default: <warehouse>.tmp beside the warehouse).
duckdb: {}
# e.g. duckdb: {memory_limit: 1GB, threads: 2, temp_directory: warehouse/spill}

# Raw GPU samples older than this many days are dropped once rolled up to the hour; the hourly roll-up and
# the marts keep them (unset: every sample is kept). A large fleet grows gpu_samples by millions a day.
# retention: {gpu_samples_days: 35}

# Where to read from. Each source: name (unique), kind (one reader each), uri (a file, a folder, a glob,
# or s3://bucket/prefix/), optional endpoint_url/region for S3-compatible stores, and reader options.
sources:
  - name: focus-main
    kind: focus                # FOCUS 1.0, 1.1, 1.2 (and 1.3's renamed columns); CSV, CSV.gz or Parquet
    uri: landing/billing/focus/
  - name: gpu-nodes
    kind: nvidia_smi           # nvidia-smi --query-gpu=... --format=csv output, one file per host
    uri: landing/telemetry/nvidia-smi/
    options:
      timezone: UTC            # zone of nvidia-smi's local timestamps
      # host: gpu-node-01      # fixed host for every file; default: the file name up to its first '_' or '.csv'
      # host_pattern: '(?P<host>[^/]+)/[^/]+$'   # or a regex over the path relative to uri
#  - name: cur2-prod
#    kind: aws_cur2           # CUR 2.0 / Data Exports: Parquet or CSV.gz, BILLING_PERIOD= folders + manifests
#    uri: s3://acme-billing/cur2/
#    endpoint_url: http://127.0.0.1:9000   # S3-compatible stores only; AWS needs none
# Other billing kinds (docs/billing.md lists every option):
# - {name: cur-legacy, kind: aws_cur, uri: landing/billing/cur/}     # legacy CUR, manifests followed
# - {name: azure-ea, kind: azure, uri: landing/billing/azure/, options: {dataset: amortized}}  # or actual
# - {name: gcp-billing, kind: gcp, uri: landing/billing/gcp/}        # BigQuery export, CSV or NDJSON
# Telemetry kept in a metrics store: hourly statistics asked by PromQL, not raw samples (docs/telemetry.md):
# - {name: prom, kind: prometheus, uri: "https://prometheus:9090", options: {match: 'job="dcgm-exporter"', bearer_token_env: PROM_TOKEN}}

# Canonical tag keys and the billing tag keys they come from (first match wins; matching ignores case,
# surrounding spaces and the prefixes user:, resourceTags/user:, user_). `host` maps telemetry host
# names to billed resources.
tags:
  team: [team, Team, "user:team", user_team]
  project: [project, "user:project"]
  owner: [owner, created_by]
  job_id: [job_id, run_id, slurm_job_id]
  host: [hostname, Name, host]

# Where checkpoints live and how a path names its run (used by the storage rules).
checkpoints: []
#  - "s3://acme-ckpt/{project}/{run_id}/**"

# Roots whose sub-folders are datasets (used by the duplicate-dataset rule).
datasets: []
#  - "s3://acme-data/datasets/"

# Per-rule parameter overrides; `wastewatch rules show GPU001` lists each rule's parameters.
rules: {}
#  GPU001: {max_util_pct: 5, min_idle_hours: 2}

# Settings of the commitment and spot advice (docs/advice.md); advice is never added to waste or spend.
advice: {}
#  commitment: {lookback_weeks: 4, percentile: 0.1, discounts: {p4d: 0.3}}
#  spot: {interruption_rate: 0.005, restart_minutes: 15, spot_discounts: {p5: 0.5}}

# Monthly spend budgets in the billing currency (COST002), and how much stored bytes may grow a month
# (COST004): per bucket or prefix, file-system path, team:NAME or project:NAME; a share or an amount.
budgets: {}
#  team: {nlp: 40000, vision: 15000}
#  storage_growth: {"s3://acme-ckpt/": 10%, "team:vision": 500 GiB}

# A consolidated view in one currency beside the per-currency figures (leave out for none). Rates are given
# here, dated, and never fetched; a currency without a rate is named in the report as not converted.
# reporting_currency: USD
# exchange_rates: [{from: EUR, to: USD, rate: 1.08, valid_from: 2026-11-01}]

# Fallback prices where the bill gives no unit price.
prices:
  storage_gb_month: {STANDARD: 0.023, STANDARD_IA: 0.0125, GLACIER_IR: 0.004}

# Cost models for GPU hosts no bill lists (owned or rented clusters); first match wins, a billed host
# keeps its bill. docs/gpu.md "Cost models" gives the formulas.
pricing: []
#  - match: {host: "dgx-*"}              # glob on host; or gpu_model, cluster, tag: {team: nlp}
#    owned: {purchase_price: 320000, currency: USD, life_years: 4, gpus: 8,
#            pue: 1.3, kwh_price: 0.11, facility_per_month: 900}
#  - match: {host: "*"}
#    contract: {per_gpu_hour: 2.10, currency: USD}

# The daily alert for live, expensive waste (`wastewatch alert`, docs/alerts.md): idle GPU instances
# (GPU001) and failed jobs and zombies (GPU004) still running and costing at least min_daily_waste over the
# last 24 hours of data, posted once per finding until it changes (to notify.webhook_url unless it names its own).
# alert: {min_daily_waste: 100, live_hours: 3, change_pct: 25}

# `wastewatch remediate apply` (docs/remediation.md): targets tagged protect_tag are never touched.
# remediation: {protect_tag: "wastewatch:protect", s3_endpoint_url: http://127.0.0.1:9000}
"""
