"""GPU rule precedence is data: `gpu_claims` says which rule claims each GPU-slice, each rule's params are its
own, and a new GPU rule is its folder, a registry line and one claim.

The GPU rules are the registry's rules that read `gpu_claims` (rules/_claims.py); each claim's tests name
the thresholds they compare as `<rule id>.<param>`, the owning rule's own params, bound at evaluation
(`$claim_thresholds`). The scratch-rule test writes a rule in its own folder under tmp_path, registers it
(the registry's one line, patched for the test) and adds its one claim to the mart's SQL, then shows that the
no-double-counting check sees it and that the rule it comes before leaves its GPU-slices without an edit.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import duckdb
import pytest

import rules._registry
from pipelines.marts.registry import MARTS
from pipelines.warehouse import connect, sql_text
from rules import ALL_RULES, Rule, get_rule
from rules._claims import CLAIMS_MART, claim_thresholds, claiming_rules
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.gpu_precedence import GPU_RULES, WEEK, check_no_double_counting, claims_of, gpu_params
from tests.helpers.mart_rows import load_given
from tests.rules.test_gpu_precedence import COST, SCENARIO

ROOT = Path(__file__).resolve().parents[2]


def test_the_gpu_rules_are_the_registered_rules_that_read_gpu_claims() -> None:
    assert CLAIMS_MART in MARTS
    assert GPU_RULES == tuple(r.id for r in ALL_RULES if CLAIMS_MART in r.requires)
    assert GPU_RULES == ("GPU001", "GPU002", "GPU003", "GPU004", "GPU005", "GPU006")


def test_a_gpu_rules_params_are_its_own() -> None:
    """No GPU rule declares another rule's threshold: none of its params is named after another rule."""
    for rule in claiming_rules():
        mirrored = [n for n in rule.params.model_fields if re.match(r"(gpu|com|cost|net|sto)\d{3}_", n)]
        assert not mirrored, f"{rule.id} mirrors {mirrored}"
        assert rule.config_params is None, f"{rule.id} takes params from the config beside its own"


def test_every_threshold_a_claim_tests_is_its_rules_own_param() -> None:
    """Each `<rule id>.<param>` in gpu_claims.sql is a param of that rule, bound from it as `$claim_thresholds`."""
    named = set(re.findall(r"'param': '([A-Z]+\d{3})\.([a-z_0-9]+)'", sql_text("marts", CLAIMS_MART)))
    assert {rid for rid, _ in named} == {"GPU001", "GPU002", "GPU003", "GPU006"}
    bound = {
        t["key"]
        for t in claim_thresholds(get_rule("GPU005"), get_rule("GPU005").make_params())["claim_thresholds"]
    }
    for rule_id, param in named:
        assert param in get_rule(rule_id).params.model_fields, f"{rule_id} has no param {param}"
        assert f"{rule_id}.{param}" in bound


def test_a_threshold_reaches_the_claims_from_its_own_rules_config() -> None:
    """GPU001 configured at 40 % moves GPU-slices from GPU002 to GPU001 in GPU002's own evaluation."""
    raised = gpu_params({"GPU001": {"max_util_pct": 40}})["GPU002"]
    thresholds = {
        t["key"]: t["value"]
        for t in get_rule("GPU002").sql_params(WEEK, raised, "$claim_thresholds")["claim_thresholds"]
    }
    assert thresholds["GPU001.max_util_pct"] == 40.0
    assert thresholds["GPU002.unused_util_pct"] == 2.0
    assert "gpu001_max_util_pct" not in raised.model_dump()  # not a param of GPU002, not in its findings


# --- a scratch GPU rule ----------------------------------------------------------------------------------
# GPU099 claims the GPUs of jobs averaging at least `min_mean_util_pct` (20 %), after GPU002 and before
# GPU003 (precedence 35), and prices them at their whole cost. In the mixed week of
# tests/rules/test_gpu_precedence.py that is job 103's seven starved GPUs (22.9 %), GPU003's until now, and
# job 102's two busy GPUs.
SCRATCH_INIT = '''
    """GPU099 scratch-rule: a GPU rule written by a test, in its own folder."""

    from pathlib import Path

    from pydantic import Field

    from rules._claims import claim_thresholds
    from rules._contract import Rule, RuleParams


    class Params(RuleParams):
        min_mean_util_pct: float = Field(20.0, ge=0, le=100)


    RULE = Rule(
        id="GPU099",
        name="scratch-rule",
        category="efficiency",
        severity="low",
        status="preview",
        summary="A test's GPU rule.",
        doc=__doc__ or "",
        params=Params,
        requires=("resources", "gpu_billed_hours", "gpu_claims"),
        query=Path(__file__).with_name("query.sql"),
        shared_params=claim_thresholds,
    )
'''
SCRATCH_QUERY = """
    -- GPU099 scratch-rule: each GPU-slice gpu_claims gives it, at its share of the instance-hour
    with claims as (
        select resource_id, hour, slice_start, slice_end, gpu_id, job_key
        from gpu_claims
        where hour >= $window_start::timestamp and hour < $window_end::timestamp
            and claimed_by(claims, $claim_thresholds) = 'GPU099'
    ),

    priced_units as (
        select
            c.resource_id, c.hour, c.slice_start, c.slice_end, c.gpu_id, c.job_key, b.currency,
            b.cost / r.gpu_count * (epoch(c.slice_end) - epoch(c.slice_start)) / 3600 as cost
        from claims as c
        inner join gpu_billed_hours as b on b.resource_id = c.resource_id and b.hour = c.hour
        inner join resources as r on r.resource_id = c.resource_id
    )

    select
        job_key as resource_id, 'job' as resource_type, null as provider, null as account_id, null as region_id,
        null as team, null as project, null as owner, null as job_id, 'waste' as status,
        'claimed by the scratch rule' as reason, '{}' as evidence, sum(cost)::decimal(18, 6) as estimated_waste,
        currency, 'its GPU-slices' as waste_basis
    from priced_units
    group by job_key, currency
"""
# its one claim, an element of the mart's list of claims
SCRATCH_CLAIM = """
            case when job_runtime_minutes is not null then {'precedence': 35, 'rule_id': 'GPU099', 'claim': 'scratch',
                'tests': [{'param': 'GPU099.min_mean_util_pct', 'measure': job_util_mean, 'op': '>='}]} end"""
CLAIMS_END = "\n        ] as claim_list\n"


def _scratch_rule(folder: Path) -> Rule:
    folder.mkdir()
    (folder / "__init__.py").write_text(textwrap.dedent(SCRATCH_INIT), encoding="utf-8")
    (folder / "query.sql").write_text(textwrap.dedent(SCRATCH_QUERY).lstrip(), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"scratch_{folder.name}", folder / "__init__.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.RULE


@pytest.fixture
def mixed_week(tmp_path: Path, empty_marts: Path) -> duckdb.DuckDBPyConnection:
    con = open_copy(empty_marts, tmp_path / "wastewatch.duckdb")  # every mart built, empty
    load_given(con, SCENARIO, {})
    yield con
    con.close()


def test_a_scratch_gpu_rule_is_its_folder_a_registry_line_and_one_claim(
    mixed_week: duckdb.DuckDBPyConnection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = check_no_double_counting(mixed_week, WEEK, gpu_params({}))
    assert float(before["GPU003"]) == pytest.approx(7 * 8 * COST / 8 * (1 - 0.229), abs=0.02)

    scratch = _scratch_rule(tmp_path / "gpu099_scratch_rule")  # its own folder
    monkeypatch.setattr(rules._registry, "ALL_RULES", (*ALL_RULES, scratch))  # the registry line
    mart = sql_text("marts", CLAIMS_MART)
    assert mart.count(CLAIMS_END) == 1
    with_claim = mart.replace(CLAIMS_END, "," + SCRATCH_CLAIM + CLAIMS_END)  # its one claim
    mixed_week.execute(f"create or replace table {CLAIMS_MART} as\n{with_claim}")

    assert [r.id for r in claiming_rules()] == [*GPU_RULES, "GPU099"]  # the check sees it
    after = check_no_double_counting(mixed_week, WEEK, gpu_params({}))
    # job 103's seven GPUs for 8 h are the scratch rule's now, priced whole, and GPU003 leaves them; so are
    # job 102's two busy GPUs (63.75 % over the job) for the 6 h they worked, which no rule claimed before
    # but GPU005 (it prices only low-MFU jobs: none here)
    assert float(after["GPU099"]) == pytest.approx((7 * 8 + 2 * 6) * COST / 8, abs=0.02)
    assert after["GPU003"] == 0
    assert {r: after[r] for r in GPU_RULES if r != "GPU003"} == {
        r: before[r] for r in GPU_RULES if r != "GPU003"
    }
    # its threshold is its own: raised above job 103 (22.9 %) and job 102 (63.75 %), the GPUs go back to GPU003
    raised = check_no_double_counting(mixed_week, WEEK, gpu_params({"GPU099": {"min_mean_util_pct": 70}}))
    assert raised["GPU099"] == 0 and raised["GPU003"] == before["GPU003"]


def test_the_rules_and_the_report_name_jobs_from_one_catalogue(tmp_path: Path) -> None:
    """The scheduler names the GPU rules' SQL reads (a temporary table of every connection) are the job
    resource types the report tells job findings by (a job finding is not 'resolved' when its job ends)."""
    from pipelines.config import parse_config
    from pipelines.report.collect import _params

    con = connect(tmp_path / "wastewatch.duckdb")
    try:
        names = con.execute("select scheduler, job_type, job_name_type from scheduler_names").fetchall()
    finally:
        con.close()
    assert ("slurm", "Slurm job", "Slurm job name") in names
    assert ("kubernetes", "Kubernetes pod", "Kubernetes job") in names
    assert ("*", "job", "job name") in names
    config = parse_config('{"sources": []}', tmp_path / "wastewatch.yaml")
    assert set(_params(WEEK, config)["job_resource_types"]) == {n for row in names for n in row[1:]}


# --- spare pools ------------------------------------------------------------------------------------------
# `spares:` names hot-spare hosts; their time with no job on the instance is the `spare` claim's, ahead of
# GPU001, so an idle spare is never GPU001's waste. Three idle 8-GPU instances on Monday 00-10 (GPU util 0):
# s-1 (host gpu-spare-1, named by the host glob), s-2 (host gpu-b7, tagged role=hot-spare on its bill) and
# n-1 (host gpu-n1, neither). s-1 then runs job 901 at 1 % for 10-12: a parked job on a spare is GPU001's.
SPARE_COST = 80.0  # an 8-GPU instance-hour
SPARES: dict[str, Any] = {
    "resources": [
        {"resource_id": "s-1", "host": "gpu-spare-1"},
        {"resource_id": "s-2", "host": "gpu-b7", "tags": "{role=hot-spare, team=infra}"},
        {"resource_id": "n-1", "host": "gpu-n1", "tags": "{role=worker}"},
    ],
    "jobs_enriched": [
        {"job_id": "901", "started_at": "2026-11-23T10:00", "ended_at": "2026-11-23T12:00", "resource_ids": ["s-1"]},
    ],
    "cost_hourly": [
        {"resource_id": r, "from": "2026-11-23T00:00", "to": f"2026-11-23T{end}:00", "effective_cost": SPARE_COST}
        for r, end in (("s-1", 12), ("s-2", 10), ("n-1", 10))
    ],
    "gpu_job_hours": [
        *({"resource_id": r, "gpus": 8, "from": "2026-11-23T00:00", "to": "2026-11-23T10:00", "util_mean": 0.0}
          for r in ("s-1", "s-2", "n-1")),
        {"resource_id": "s-1", "job_id": "901", "gpus": 8, "from": "2026-11-23T10:00", "to": "2026-11-23T12:00",
         "util_mean": 1.0},
    ],
}  # fmt: skip


def _spare_week(tmp_path: Path, empty_marts: Path, spares: str | None) -> duckdb.DuckDBPyConnection:
    from pipelines.config import parse_config
    from pipelines.transform.spares import write_spares

    con = open_copy(empty_marts, tmp_path / "wastewatch.duckdb")
    body = "sources: []\n" + (f"spares: {spares}\n" if spares else "")
    write_spares(con, parse_config(body, tmp_path / "wastewatch.yaml"))
    load_given(con, SPARES, {})  # builds gpu_claims from the rows (and spare_pools)
    return con


def _winners(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, int], str]:
    """Per resource and hour of Monday, the rules that win its GPU-slices at the default thresholds
    ("GPU001", or "GPU001/spare" when its GPUs went to two)."""
    found = claims_of(con, get_rule("GPU001"), WEEK, gpu_params({})["GPU001"])
    out: dict[tuple[str, int], set[str]] = {}
    for c in found:
        out.setdefault((c["resource_id"], c["slice_start"].hour), set()).add(str(c["claimed_by"]))
    return {k: "/".join(sorted(v)) for k, v in out.items()}


def test_a_spare_hosts_idle_hours_are_the_spare_claims_not_gpu001s(tmp_path: Path, empty_marts: Path) -> None:
    con = _spare_week(tmp_path, empty_marts, '{match: {host: "gpu-spare-*"}, policy_share: 0.05}')
    try:
        winners = _winners(con)
        assert {winners[("s-1", h)] for h in range(10)} == {"spare"}
        assert {winners[("s-1", h)] for h in (10, 11)} == {"GPU001"}  # a job ran on it: not spare time
        assert {winners[(r, h)] for r in ("s-2", "n-1") for h in range(10)} == {"GPU001"}
        # every spare claim comes ahead of GPU001's and after GPU004's
        claim = con.execute(
            "select c.precedence from gpu_claims, unnest(claims) as u(c) where c.claim = 'spare' limit 1"
        ).fetchone()
        assert claim == (15,)
        waste = check_no_double_counting(con, WEEK, gpu_params({}))
        # GPU001: s-2 and n-1 idle 10 h each, and s-1's 2 h parked job; nothing of s-1's idle 10 h
        assert float(waste["GPU001"]) == pytest.approx((10 + 10 + 2) * SPARE_COST, abs=0.01)
    finally:
        con.close()


def test_a_tag_names_spares_and_without_spares_gpu001_keeps_every_idle_hour(
    tmp_path: Path, empty_marts: Path
) -> None:
    tagged = _spare_week(
        tmp_path / "tag", empty_marts, "{match: {tag: {Role: hot-spare}}, policy_share: 0.1}"
    )
    try:
        winners = _winners(tagged)
        assert {winners[("s-2", h)] for h in range(10)} == {"spare"}  # its bill's tag (key normalised)
        assert {winners[(r, h)] for r in ("s-1", "n-1") for h in range(10)} == {"GPU001"}
    finally:
        tagged.close()
    plain = _spare_week(tmp_path / "none", empty_marts, None)
    try:
        assert set(_winners(plain).values()) == {"GPU001"}
        waste = check_no_double_counting(plain, WEEK, gpu_params({}))
        assert float(waste["GPU001"]) == pytest.approx((12 + 10 + 10) * SPARE_COST, abs=0.01)
    finally:
        plain.close()
