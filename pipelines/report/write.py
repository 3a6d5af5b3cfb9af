"""Writing the weekly report's files under <reports_dir>/<ISO week>/, each through a temporary file that
replaces the old one, so a reader never sees a half-written file: report.html and the pages it links
(findings.html, changes.html, ... teams/<team>.html, statements/<team>-<currency>.html), report.md (the digest) and report-full.md,
findings.csv and findings.parquet."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import duckdb
import polars as pl

from pipelines.config import Config
from pipelines.report.collect import collect_report
from pipelines.report.model import PAGES, WeeklyReport
from pipelines.report.render import (
    environment,
    findings_frame,
    neutralise_csv,
    page_html,
    report_html,
    report_markdown,
    report_markdown_full,
    team_html,
)
from pipelines.report.statement import Statement, collect_statements, statement_html
from rules import Window


def write_report(con: duckdb.DuckDBPyConnection, config: Config, window: Window) -> WeeklyReport:
    """Collect the week's figures and write the report files under <reports_dir>/<ISO week>/."""
    directory = config.reports_path / window.label
    directory.mkdir(parents=True, exist_ok=True)
    report = collect_report(con, config, window, directory)
    env = environment()
    # each team's monthly statement (showback), linked from its page and the teams page
    statements = collect_statements(
        con, window.start.date().replace(day=1), {t.name: t.slug for t in report.teams}
    )
    env.globals["statements"] = {(s.team, s.currency): s for s in statements}
    _write_atomic(report.files["report.md"], report_markdown(report, env))
    _write_atomic(report.files["report-full.md"], report_markdown_full(report, env))
    _write_atomic(report.files["report.html"], report_html(report, env))
    for stem, _ in PAGES:  # the main page's linked pages, beside it
        _write_atomic(report.files[f"{stem}.html"], page_html(report, stem, env))
    teams_dir = directory / "teams"
    teams_dir.mkdir(exist_ok=True)
    wanted = {f"{t.slug}.html" for t in report.teams}
    for stale in teams_dir.glob("*.html"):
        if stale.name not in wanted:  # a team that had a page last time this week was written
            stale.unlink()
    for team in report.teams:
        _write_atomic(teams_dir / f"{team.slug}.html", team_html(report, team, env))
    _write_pages(directory / "statements", {f"{s.slug}-{s.currency}.html": s for s in statements},
                 lambda st: statement_html(st, report, env))  # fmt: skip
    frame = findings_frame(report)
    # findings.csv is opened in spreadsheets: formula-like text is neutralised; findings.parquet stays raw
    _write_frame(neutralise_csv(frame), report.files["findings.csv"], "csv")
    _write_frame(frame, report.files["findings.parquet"], "parquet")
    return report


# the statement pages the last write of the week put in statements/, one name a line: only those are removed
WRITTEN = ".wastewatch-pages"


def _write_pages(folder: Path, pages: dict[str, Statement], render: Callable[[Statement], str]) -> None:
    """Write each page into `folder`, and remove the pages a previous write of this week left there that are
    not wanted now; a file wastewatch did not write there (not in the folder's list) is left alone."""
    folder.mkdir(exist_ok=True)
    listed = folder / WRITTEN
    before = listed.read_text(encoding="utf-8").split() if listed.exists() else []
    for name in before:
        if name not in pages and Path(name).name == name and name.endswith(".html"):
            (folder / name).unlink(missing_ok=True)
    for name, page in pages.items():
        _write_atomic(folder / name, render(page))
    _write_atomic(listed, "".join(f"{name}\n" for name in sorted(pages)))


def _write_frame(frame: pl.DataFrame, path: Path, kind: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    if kind == "csv":
        frame.write_csv(tmp)
    else:
        frame.write_parquet(tmp)
    tmp.replace(path)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
