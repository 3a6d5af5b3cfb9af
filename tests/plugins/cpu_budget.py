"""Each test's CPU seconds (setup + call + teardown, its process and the children it waited for), summed per
test folder at the end of the run, and the tests over `LIMIT` named with the reason tests/slow_tests.yaml
gives for them.

CPU time, not wall time, so the figures hold on a loaded machine. `WASTEWATCH_CPU_REPORT=FILE` also writes
every test's seconds to FILE (JSON), for bench/README.md's per-folder table. With `WASTEWATCH_CPU_BUDGET=check` (CI) a
test the file does not list fails the run when it takes more than the limit times `WASTEWATCH_CPU_MARGIN`
(1.25: a test's CPU seconds move by a tenth to a quarter between a loaded and an idle machine, so one at the
limit's edge is named, not failed); it is moved down a level, into the `full` set, or listed with its reason.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

LIMIT = float(os.environ.get("WASTEWATCH_CPU_LIMIT", "5"))  # CPU seconds a test may take without a reason
MARGIN = float(
    os.environ.get("WASTEWATCH_CPU_MARGIN", "1.25")
)  # an unlisted test fails `check` above LIMIT x this
ENV = "WASTEWATCH_CPU_BUDGET"
REPORT_ENV = "WASTEWATCH_CPU_REPORT"
LISTED = Path(__file__).parents[1] / "slow_tests.yaml"
_PHASES = ("setup", "call", "teardown")


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _measure(item: pytest.Item, phase: str) -> Iterator[None]:
    start = _cpu()
    yield
    item.user_properties.append((f"cpu_{phase}", _cpu() - start))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    return (yield from _measure(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    return (yield from _measure(item, "call"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    return (yield from _measure(item, "teardown"))


def listed() -> dict[str, str]:
    """Node ids (or a file's path, for every test in it) allowed over the limit, with the reason why."""
    data = yaml.safe_load(LISTED.read_text(encoding="utf-8")) or {}
    return {str(k): str(v) for k, v in data.items()}


def reason(nodeid: str, allowed: dict[str, str]) -> str | None:
    base = nodeid.split("[", 1)[0]
    for key in (nodeid, base, nodeid.split("::", 1)[0]):
        if key in allowed:
            return allowed[key]
    return None


class CpuBudget:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # each phase's report carries the properties recorded so far: take this phase's own
        for name, value in report.user_properties:
            if name == f"cpu_{report.when}":
                self.seconds[report.nodeid] += float(value)

    def over(self, limit: float = LIMIT) -> list[tuple[str, float]]:
        return sorted(((n, s) for n, s in self.seconds.items() if s > limit), key=lambda x: -x[1])

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.seconds:
            return
        folders: dict[str, float] = defaultdict(float)
        for nodeid, s in self.seconds.items():
            folders["/".join(nodeid.split("::", 1)[0].split("/")[:2])] += s
        tr = terminalreporter
        tr.section(f"CPU seconds: {sum(self.seconds.values()):.0f} in {len(self.seconds)} tests")
        for folder, s in sorted(folders.items(), key=lambda x: -x[1]):
            tr.write_line(f"{s:8.1f}  {folder}")
        allowed = listed()
        over = self.over()
        if over:
            tr.section(f"tests over {LIMIT:g} CPU s")
            for nodeid, s in over:
                why = reason(nodeid, allowed)
                tr.write_line(f"{s:6.1f}  {nodeid}  ({why or 'NOT LISTED in tests/slow_tests.yaml'})")
            unlisted = [n for n, _ in self.over(LIMIT * MARGIN) if reason(n, allowed) is None]
            if unlisted and os.environ.get(ENV) == "check":
                tr.write_line(
                    f"error: {len(unlisted)} test(s) over {LIMIT * MARGIN:g} CPU s are not in tests/slow_tests.yaml: "
                    "test the promise at a lower level, mark the test `full`, or list it with its reason",
                    red=True,
                )

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput"):
            return
        if os.environ.get(REPORT_ENV):
            Path(os.environ[REPORT_ENV]).write_text(json.dumps(self.seconds, indent=0, sort_keys=True))
        if os.environ.get(ENV) != "check":
            return
        allowed = listed()
        if any(reason(n, allowed) is None for n, _ in self.over(LIMIT * MARGIN)) and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_configure(config: pytest.Config) -> None:
    # the controller (or a plain run) adds up what the workers measured
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(CpuBudget(), "wastewatch-cpu-budget")
