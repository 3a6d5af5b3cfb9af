"""The explicit, ordered list of rules. Add a rule here and nowhere else."""

from __future__ import annotations

from rules._contract import Rule
from rules.gpu001_idle_gpu_instance import RULE as GPU001

ALL_RULES: tuple[Rule, ...] = (GPU001,)


def get_rule(rule_id: str) -> Rule:
    """Look a rule up by id, name or alias (case-insensitive)."""
    wanted = rule_id.strip().lower()
    for rule in ALL_RULES:
        if wanted in {rule.id.lower(), rule.name, *(a.lower() for a in rule.aliases)}:
            return rule
    known = ", ".join(r.id for r in ALL_RULES)
    raise KeyError(f"unknown rule {rule_id!r}; known rules: {known}")
