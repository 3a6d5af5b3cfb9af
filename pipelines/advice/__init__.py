"""Commitment and spot advice: what buying a commitment or moving a recurring job type to spot would save.

Advice is not a finding: it lands in its own `advice` table (sql/raw/advice.sql) with the finding contract's
identity, reason, evidence and basis, and no waste or spend total ever reads it. Each advisor reads marts
only (gpu_purchase_hours, jobs_enriched, storage_checkpoints) through its SQL in sql/advice/ and works out
the money here; docs/advice.md gives the formulas and their sources. Nothing here imports Dagster.
"""

from pipelines.advice.contract import ADVICE_COLUMNS, AdviceParams, Advisor
from pipelines.advice.run import ADVISORS, AdviceOutcome, advise_week, get_advisor, run_advisor, write_advice

__all__ = [
    "ADVICE_COLUMNS",
    "ADVISORS",
    "AdviceOutcome",
    "AdviceParams",
    "Advisor",
    "advise_week",
    "get_advisor",
    "run_advisor",
    "write_advice",
]
