"""The GPU rules' precedence as data: the `gpu_claims` mart and the thresholds its claims are judged by.

`gpu_claims` (sql/marts/gpu_claims.sql) lists, per GPU-slice, every claim a GPU rule makes on it in
precedence order, each with tests naming a threshold `<rule id>.<param>`; `claimed_by(claims,
$claim_thresholds)` (sql/macros/macro_claimed_by.sql) picks the first claim that holds. A rule that reads
`gpu_claims` (it names it in `requires`) is a claiming rule: it prices only the slices it claims, and its
query gets `$claim_thresholds`, every claiming rule's numeric params, from `claim_thresholds`. So each
threshold is declared once, in its own rule's params, and a new GPU rule adds one claim to the mart.
"""

from __future__ import annotations

from typing import Any

from rules._contract import Rule, RuleParams

CLAIMS_MART = "gpu_claims"


def claiming_rules() -> tuple[Rule, ...]:
    """The registered rules that read `gpu_claims` (the GPU rules), in registry order."""
    from rules._registry import (
        ALL_RULES,
    )  # imported here: the registry imports every rule, this module's users

    return tuple(r for r in ALL_RULES if CLAIMS_MART in r.requires)


def claim_thresholds(rule: Rule, own: RuleParams, config: Any = None) -> dict[str, Any]:
    """`$claim_thresholds`: the numeric params of every claiming rule as {key: '<rule id>.<param>', value}:
    `rule`'s from `own`, the others' from their `rules:` overrides in `config` (their defaults without one)."""
    thresholds: list[dict[str, Any]] = []
    others = [r for r in claiming_rules() if r.id != rule.id]
    for other in [rule, *others]:
        params = (
            own if other is rule else other.make_params(config.rule_overrides(other.id) if config else None)
        )
        for name, value in params.model_dump().items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                thresholds.append({"key": f"{other.id}.{name}", "value": float(value)})
    return {"claim_thresholds": thresholds}
