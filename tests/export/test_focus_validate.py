"""`make focus-validate`'s parts that run without the validator: the allow-list is what docs/billing.md shows,
a composite failure is allowed only through its children, and a machine without Python 3.12 gets a clear
error instead of a validator that never ran."""

from __future__ import annotations

import csv
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from tests.helpers.paths import REPO

CI = REPO / ".ci"


def _harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location("focus_validate", CI / "focus_validate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


def test_every_allow_list_entry_is_shown_in_docs_billing_with_its_reason() -> None:
    docs = (REPO / "docs" / "billing.md").read_text(encoding="utf-8")
    with (CI / "focus_validator_allowlist.csv").open(newline="", encoding="utf-8") as f:
        entries = list(csv.DictReader(f))
    assert entries, "the allow-list is empty: then docs/billing.md should say no failure is allowed"
    for e in entries:
        assert e["category"] in ("source", "ours"), e
        row = f"| `{e['fixture']}` | `{e['rule_id']}` | {e['reason']} |"
        assert row in docs, f"docs/billing.md lacks the allow-list row {row}"


def test_a_composite_failure_is_allowed_only_when_each_failed_child_is() -> None:
    h = _harness()
    failures = {
        "ServiceName-C-000-M": (
            1,
            "ServiceName-C-000-M: AND failed - failed child rules: [ServiceName-C-004-C]",
        ),
        "ServiceName-C-004-C": (
            1,
            "ServiceName-C-004-C: AND failed - failed child rules: [ServiceName-C-005-C]",
        ),
        "ServiceName-C-005-C": (
            1,
            "For each ServiceName, there MUST be exactly 1 distinct ServiceCategory values.",
        ),
        "InvoiceId-C-005-C": (9, "InvoiceId MUST NOT be NULL."),
    }
    allow = {
        ("a.csv", "ServiceName-C-005-C"): "one service in two categories in the source",
        ("*", "InvoiceId-C-005-C"): "no invoice id",
    }
    assert h.allowed_rule("a.csv", "ServiceName-C-000-M", failures, allow) is not None
    assert (
        h.allowed_rule("b.csv", "ServiceName-C-000-M", failures, allow) is None
    )  # the child is allowed for a.csv only
    assert h.allowed_rule("b.csv", "InvoiceId-C-005-C", failures, allow) == "no invoice id"


def test_the_validator_output_is_read_for_its_summary_and_failures() -> None:
    h = _harness()
    line = "❌ BilledCost-C-005-C: FAIL  (violations=615, msg=BilledCost MUST equal '0'., 13.9ms)"
    m = h.FAILED.match(line)
    assert m and (m.group("rule"), m.group("n")) == ("BilledCost-C-005-C", "615")
    assert h.SUMMARY.search("Total: 578 | Pass: 122 | Fail: 15 | Skipped: 441").groups() == (
        "578",
        "122",
        "15",
        "441",
    )


def test_without_python_3_12_the_finder_fails_saying_where_it_looked(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "FOCUS_PYTHON": str(tmp_path / "nope")}
    found = [p for p in ("/usr/local/bin/python3.12", "/usr/bin/python3.12") if os.path.exists(p)]
    proc = subprocess.run(
        ["bash", str(CI / "find_python312.sh")], env=env, capture_output=True, text=True, check=False
    )
    if found:  # this machine has a system 3.12: the finder must return it
        assert proc.returncode == 0 and proc.stdout.strip() in found
        return
    assert proc.returncode == 1
    assert "make focus-validate needs Python 3.12" in proc.stderr
    assert f"{tmp_path}/.pyenv/versions/3.12*/bin/python3.12" in proc.stderr
