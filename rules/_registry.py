"""The explicit, ordered list of rules. Add a rule here and nowhere else."""

from __future__ import annotations

from rules._contract import Rule
from rules.com001_unused_commitment import RULE as COM001
from rules.cost001_unattributed_spend import RULE as COST001
from rules.cost002_budget_overrun import RULE as COST002
from rules.cost003_spend_anomaly import RULE as COST003
from rules.cost004_storage_growth import RULE as COST004
from rules.gpu001_idle_gpu_instance import RULE as GPU001
from rules.gpu002_overprovisioned_job import RULE as GPU002
from rules.gpu003_input_starved_job import RULE as GPU003
from rules.gpu004_failed_job_and_zombie import RULE as GPU004
from rules.gpu005_low_efficiency_job import RULE as GPU005
from rules.gpu006_poor_scaling import RULE as GPU006
from rules.net001_cross_region_transfer import RULE as NET001
from rules.sto001_orphaned_checkpoint import RULE as STO001
from rules.sto002_duplicate_dataset import RULE as STO002
from rules.sto003_cold_checkpoint_tiering import RULE as STO003
from rules.sto004_incomplete_multipart_upload import RULE as STO004
from rules.sto005_log_retention import RULE as STO005

ALL_RULES: tuple[Rule, ...] = (
    GPU001, GPU002, GPU003, GPU004, GPU005, GPU006, COM001,
    COST001, COST002, COST003, COST004,
    NET001,
    STO001, STO002, STO003, STO004, STO005,
)  # fmt: skip


def get_rule(rule_id: str) -> Rule:
    """Look a rule up by id, name or alias (case-insensitive)."""
    wanted = rule_id.strip().lower()
    for rule in ALL_RULES:
        if wanted in {rule.id.lower(), rule.name, *(a.lower() for a in rule.aliases)}:
            return rule
    known = ", ".join(r.id for r in ALL_RULES)
    raise KeyError(f"unknown rule {rule_id!r}; known rules: {known}")
