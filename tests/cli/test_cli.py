"""The `wastewatch` command line: exit codes, messages, ingestion with bad files, sql, rules, a weekly run."""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from importlib.metadata import version
from pathlib import Path

import duckdb
import polars as pl
import pytest
from click.testing import CliRunner, Result

from pipelines.cli import main
from pipelines.config import STARTER_CONFIG, load_config
from pipelines.ingest import ingest
from pipelines.report.model import PAGES
from pipelines.transform.publish import publish
from pipelines.warehouse import connect
from rules import ALL_RULES, DOC_HEADINGS, FINDING_COLUMNS, get_rule
from tests.helpers.config import write_config
from tests.helpers.paths import FOCUS_SAMPLE, copy_into

FOCUS_ONLY = """
sources:
  - {name: focus, kind: focus, uri: landing/billing/}
"""


def cli(*args: str) -> Result:
    """Run the real CLI in-process (WASTEWATCH_CONFIG unset so only --config or ./wastewatch.yaml count)."""
    return CliRunner(env={"WASTEWATCH_CONFIG": None}).invoke(main, list(args), catch_exceptions=False)


def _sample_rows() -> list[dict[str, str]]:
    with FOCUS_SAMPLE.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _drop_column(text: str, column: str) -> str:
    rows = list(csv.reader(io.StringIO(text)))
    i = rows[0].index(column)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(r[:i] + r[i + 1 :] for r in rows)
    return buf.getvalue()


def _parse_csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


# --- ingestion through the CLI: one real Dagster run shared by the tests that read its result --------

BAD_FILES = {
    "truncated.csv.gz": "cannot read",
    "no_billed_cost.csv": "missing required FOCUS column(s) BilledCost",
    "empty.csv": "file is empty",
}


@dataclass
class Landed:
    root: Path
    config: Path
    first: Result


@pytest.fixture(scope="module")
def landed(tmp_path_factory: pytest.TempPathFactory) -> Landed:
    """The FOCUS sample plus three broken files in a landing folder, ingested once with `wastewatch ingest`."""
    root = tmp_path_factory.mktemp("cli_ingest")
    landing = root / "landing" / "billing"
    copy_into(FOCUS_SAMPLE, landing)
    (landing / "truncated.csv.gz").write_bytes(gzip.compress(FOCUS_SAMPLE.read_bytes())[:20_000])
    (landing / "no_billed_cost.csv").write_text(
        _drop_column(FOCUS_SAMPLE.read_text(encoding="utf-8"), "BilledCost"), encoding="utf-8"
    )
    (landing / "empty.csv").write_bytes(b"")
    (landing / "part-00001.gz").write_bytes(gzip.compress(FOCUS_SAMPLE.read_bytes()))  # no reader claims it
    config = write_config(root, FOCUS_ONLY)
    return Landed(root, config, cli("--config", str(config), "ingest"))


def _sql(landed: Landed, query: str, fmt: str = "csv", *extra: str) -> Result:
    return cli("--config", str(landed.config), "sql", query, "--format", fmt, *extra)


def test_ingest_rejects_bad_files_loads_the_rest_and_exits_1(landed: Landed) -> None:
    result = landed.first
    assert result.exit_code == 1, result.output
    rejected = [line for line in result.stderr.splitlines() if line.startswith("rejected: ")]
    assert len(rejected) == len(BAD_FILES), result.stderr
    for name, problem in BAD_FILES.items():
        path = landed.root / "landing" / "billing" / name
        assert any(str(path) in line and problem in line for line in rejected), (name, rejected)
    assert not any("focus_sample_1.0.csv" in line for line in rejected)

    out = _sql(landed, "select count(*) from billing_line_items")
    assert out.exit_code == 0, out.output
    assert out.stdout.splitlines() == ["count_star()", "1000"]

    ledger = _parse_csv(
        _sql(
            landed, "select regexp_extract(uri, '[^/]+$') as name, status, rows from ingest_files order by 1"
        ).stdout
    )
    assert {r["name"]: (r["status"], r["rows"]) for r in ledger} == {
        "empty.csv": ("rejected", ""),
        "focus_sample_1.0.csv": ("loaded", "1000"),
        "no_billed_cost.csv": ("rejected", ""),
        "truncated.csv.gz": ("rejected", ""),
    }
    # the published read-only copy exists beside the warehouse
    config = load_config(landed.config)
    assert config.published_path.is_file() and config.published_path.parent == landed.root / "warehouse"


def test_ingest_lists_a_file_no_reader_claims_as_skipped(landed: Landed) -> None:
    """Through Dagster's metadata to the CLI's stderr: listed with why, not counted as a rejection."""
    path = (landed.root / "landing" / "billing" / "part-00001.gz").resolve()
    assert (
        f"skipped: {path}: a gzip file whose name does not say what it holds (name it .csv.gz); "
        "kind focus reads .csv, .csv.gz, .parquet"
    ) in landed.first.stderr.splitlines(), landed.first.stderr


def test_a_second_ingest_adds_nothing(landed: Landed) -> None:
    query = "select uri, status, rows, loaded_at from ingest_files where status = 'loaded'"
    before = _parse_csv(_sql(landed, query).stdout)
    result = cli("--config", str(landed.config), "ingest")
    assert result.exit_code == 1  # the broken files are still there, still rejected
    assert sum(line.startswith("rejected: ") for line in result.stderr.splitlines()) == len(BAD_FILES)
    assert _sql(landed, "select count(*) as n from billing_line_items").stdout.splitlines() == ["n", "1000"]
    assert _parse_csv(_sql(landed, query).stdout) == before  # the loaded file was not read again
    assert _sql(landed, "select count(*) as n from ingest_files").stdout.splitlines() == ["n", "4"]


# --- sql ---------------------------------------------------------------------------------------------

MONEY_SCALE = Decimal("1e-12")
BY_PROVIDER = (
    "select provider_name, count(*) as n, sum(billed_cost) as billed, null as nothing "
    "from billing_line_items group by 1 order by 1"
)


def _expected_by_provider() -> dict[str, tuple[int, Decimal]]:
    out: dict[str, list] = defaultdict(lambda: [0, Decimal(0)])
    for r in _sample_rows():
        out[r["ProviderName"]][0] += 1
        # billed_cost is DECIMAL(38, 12): each line keeps the file's digits up to 12 decimals
        out[r["ProviderName"]][1] += Decimal(r["BilledCost"]).quantize(MONEY_SCALE, ROUND_HALF_UP)
    return {k: (n, cost) for k, (n, cost) in out.items()}


def test_sql_csv(landed: Landed) -> None:
    result = _sql(landed, BY_PROVIDER, "csv")
    assert result.exit_code == 0, result.output
    rows = _parse_csv(result.stdout)
    assert list(rows[0]) == ["provider_name", "n", "billed", "nothing"]
    expected = _expected_by_provider()
    assert [r["provider_name"] for r in rows] == sorted(expected)
    for r in rows:
        n, billed = expected[r["provider_name"]]
        assert int(r["n"]) == n
        assert Decimal(r["billed"]) == billed
        assert r["nothing"] == ""  # NULL is an empty field


def test_sql_csv_neutralises_formulas_unless_raw(landed: Landed) -> None:
    query = "select -12.5 as n, '-12.5' as t, '=1+1' as f, '@SUM(A1)' as a, '-1+2' as m, 'ok' as o"
    safe = _parse_csv(_sql(landed, query, "csv").stdout)
    assert safe == [{"n": "-12.5", "t": "-12.5", "f": "'=1+1", "a": "'@SUM(A1)", "m": "'-1+2", "o": "ok"}]
    raw = _parse_csv(_sql(landed, query, "csv", "--raw-csv").stdout)
    assert raw == [{"n": "-12.5", "t": "-12.5", "f": "=1+1", "a": "@SUM(A1)", "m": "-1+2", "o": "ok"}]


def test_sql_json(landed: Landed) -> None:
    result = _sql(landed, BY_PROVIDER, "json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    expected = _expected_by_provider()
    assert [r["provider_name"] for r in rows] == sorted(expected)
    for r in rows:
        n, billed = expected[r["provider_name"]]
        assert r["n"] == n and isinstance(r["n"], int)
        assert Decimal(str(r["billed"])) == billed
        assert r["nothing"] is None


def test_sql_table(landed: Landed) -> None:
    result = _sql(landed, BY_PROVIDER, "table")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    expected = _expected_by_provider()
    assert lines[0].split() == ["provider_name", "n", "billed", "nothing"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    body = lines[2:-1]
    assert [line.split()[0] for line in body] == sorted(expected)
    assert [int(line.split()[1]) for line in body] == [expected[p][0] for p in sorted(expected)]
    assert all(line.split()[-1] == "NULL" for line in body)
    assert lines[-1] == f"({len(expected)} rows)"
    # the default format is the table
    assert cli("--config", str(landed.config), "sql", BY_PROVIDER).stdout == result.stdout
    one = _sql(landed, "select 'a' as x", "table").stdout.splitlines()
    assert one[-1] == "(1 row)" and one[2].strip() == "a"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("selec 1", "syntax error"),
        ("select * from no_such_table", "no_such_table"),
    ],
)
def test_sql_bad_query_exits_2_with_a_message(landed: Landed, query: str, message: str) -> None:
    result = _sql(landed, query, "csv")
    assert result.exit_code == 2
    config_line, error = result.stderr.splitlines()  # which config was read, then the one error line
    assert config_line == f"config: {landed.config} (from --config)"
    assert error.startswith("error: query failed:") and message in error
    assert result.stdout == ""


def test_sql_a_write_is_refused_with_exit_1(landed: Landed) -> None:
    """A statement DuckDB refuses on the locked connection (tests/warehouse/test_query_lockdown.py tries
    every kind) is exit 1, not a usage error."""
    result = _sql(landed, "delete from billing_lines", "csv")
    assert result.exit_code == 1
    error = result.stderr.splitlines()[-1]
    assert (
        error.startswith("error: line 1: refused: `wastewatch sql` only reads the warehouse")
        and "read-only" in error
    )
    assert result.stdout == ""


def _sql_in(landed: Landed, *args: str, stdin: str | None = None) -> Result:
    return CliRunner(env={"WASTEWATCH_CONFIG": None}).invoke(
        main, ["--config", str(landed.config), "sql", *args], input=stdin, catch_exceptions=False
    )


QUESTION = """-- question: How many lines does each provider bill?
-- grain: provider

select provider_name, count(*) as n
from billing_line_items
group by all
order by provider_name;

-- and how many in all
select count(*) as total from billing_line_items;
"""


def test_sql_runs_a_file_of_several_statements_with_a_question_header(landed: Landed, tmp_path: Path) -> None:
    path = tmp_path / "question.sql"
    path.write_text(QUESTION, encoding="utf-8")
    result = _sql_in(landed, "--file", str(path))
    assert result.exit_code == 0, result.output
    providers = defaultdict(int)
    for r in _sample_rows():
        providers[r["ProviderName"]] += 1
    first, second = result.stdout.split("\n\n")
    assert [line.split() for line in first.splitlines()[2:-1]] == [
        [p, str(n)] for p, n in sorted(providers.items())
    ]
    assert second.splitlines() == ["total", "-----", " 1000", "(1 row)"]  # numbers right-aligned
    # the same text from stdin, and given as the argument (it starts with `--`, which is not an option)
    assert _sql_in(landed, "-", stdin=QUESTION).stdout == result.stdout
    assert _sql_in(landed, "--file", "-", stdin=QUESTION).stdout == result.stdout
    assert _sql_in(landed, QUESTION).stdout == result.stdout
    # csv and json print one result: two are refused, naming the lines they start on
    refused = _sql_in(landed, "--file", str(path), "--format", "csv")
    assert refused.exit_code == 2 and refused.stdout == ""
    assert f"{path}: 2 statements return rows (lines 4, 10)" in refused.stderr


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("-- question: typo\n\nselect count(*)\nfrm billing_line_items;\n", 4, "Parser Error: syntax error"),
        ("select 1;\n\n-- a note\nselect *\n  from no_such_table;\n", 5, "no_such_table does not exist"),
        (
            "select 1;\nselect count(*) from billing_line_items\nwhere provider_name = $who;\n",
            2,
            "needs $who",
        ),
    ],
)
def test_sql_errors_name_the_file_and_line(
    landed: Landed, tmp_path: Path, text: str, line: int, message: str
) -> None:
    path = tmp_path / "broken.sql"
    path.write_text(text, encoding="utf-8")
    result = _sql_in(landed, "--file", str(path), "--format", "csv")
    assert result.exit_code == 2 and result.stdout == ""
    config_line, error = result.stderr.splitlines()  # which config was read, then the one error line
    assert config_line.startswith("config: ") and config_line.endswith(" (from --config)")
    assert error.startswith(f"error: query failed: {path}:{line}: "), result.stderr
    assert message in error
    piped = _sql_in(landed, "-", "--format", "csv", stdin=text)
    assert piped.stderr.splitlines()[-1].startswith(f"error: query failed: <stdin>:{line}: ")


def test_sql_binds_named_parameters_as_values(landed: Landed) -> None:
    query = "select count(*) as n from billing_line_items where provider_name = $who"
    aws = sum(r["ProviderName"] == "AWS" for r in _sample_rows())
    assert 0 < aws < 1000
    assert _sql(landed, query, "csv", "--param", "who=AWS").stdout == f"n\n{aws}\n"
    # a value is a value: text that would change the query if pasted into it matches nothing
    assert _sql(landed, query, "csv", "--param", "who=AWS' or '1'='1").stdout == "n\n0\n"
    week = _sql(landed, "select $week as w, $week_start as s, $week_end as e", "csv", "--week", "2026-W48")
    assert week.stdout == "w,s,e\n2026-W48,2026-11-23,2026-11-30\n"
    same = _sql(landed, "select $week_start as s", "csv", "--param", "week=2026-W48")
    assert same.stdout == "s\n2026-11-23\n"
    unused = _sql(landed, "select 1 as x", "csv", "--param", "team=nlp")
    assert unused.exit_code == 0 and "note: --param team is not used by the query" in unused.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["select $week_start", "--week", "2026-W60"], "week 60 does not exist in 2026"),
        (["select 1", "--param", "oops"], "expected NAME=VALUE"),
        (["select 1", "--param", "a=1", "--param", "a=2"], "given twice"),
        (["select 1", "--file", "x.sql"], "not both"),
        (["--file", "no/such/file.sql"], "no/such/file.sql: cannot read"),
        (["select $week_start"], "needs $week_start"),
    ],
)
def test_sql_usage_errors_exit_2(landed: Landed, args: list[str], message: str) -> None:
    result = _sql_in(landed, *args)
    assert result.exit_code == 2 and result.stdout == ""
    assert message in result.stderr, result.stderr


def test_sql_reads_the_published_copy_unless_live(tmp_path: Path) -> None:
    config_path = write_config(tmp_path, FOCUS_ONLY)
    missing = cli("--config", str(config_path), "sql", "select 1")
    assert missing.exit_code == 2 and "no warehouse here yet" in missing.stderr

    config = load_config(config_path)
    copy_into(FOCUS_SAMPLE, tmp_path / "landing" / "billing")
    con = connect(config.warehouse_path)
    ingest(con, config)
    con.close()
    publish(config)
    con = connect(config.warehouse_path)
    con.execute("delete from billing_lines where provider_name = 'AWS'")
    con.close()
    aws = sum(r["ProviderName"] == "AWS" for r in _sample_rows())
    assert aws > 0

    query = "select count(*) as n from billing_line_items"
    assert cli("--config", str(config_path), "sql", query, "--format", "csv").stdout == "n\n1000\n"
    live = cli("--config", str(config_path), "sql", query, "--format", "csv", "--live")
    assert live.stdout == f"n\n{1000 - aws}\n"


# --- rules -------------------------------------------------------------------------------------------


def test_rules_list() -> None:
    result = cli("rules", "list")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert len(lines) == len(ALL_RULES)
    assert [line.split()[0] for line in lines] == [r.id for r in ALL_RULES]
    rule = get_rule("GPU001")
    gpu001 = lines[[r.id for r in ALL_RULES].index("GPU001")].split()
    assert gpu001[:5] == ["GPU001", "idle-gpu-instance", "idle", rule.severity, rule.status]
    assert " ".join(gpu001[5:]) == " ".join(rule.summary.split())
    # every column starts at the same place on every line, whatever the length of ids and names
    for column in range(1, 5):
        starts = {_column_start(line, column) for line in lines}
        assert len(starts) == 1, (column, starts)
    assert {len(r.id) for r in ALL_RULES} >= {6, 7}  # GPU001 and COST001 side by side


def _column_start(line: str, column: int) -> int:
    """Where the `column`-th (0-based) space-separated field of a line starts."""
    pos = 0
    for _ in range(column):
        pos = line.index(" ", pos)
        while line[pos] == " ":
            pos += 1
    return pos


def test_rules_show_documents_the_rule_with_effective_params_from_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(tmp_path, "rules:\n  GPU001: {max_util_pct: 3, min_idle_hours: 4}\n")
    monkeypatch.chdir(tmp_path)  # ./wastewatch.yaml is the default config
    result = cli("rules", "show", "GPU001")
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.stdout.splitlines()]
    for heading in DOC_HEADINGS:
        assert heading in lines, heading
    assert "Parameters (default -> effective):" in lines
    params = {
        line.split(":")[0]: line.split(":", 1)[1].split()[:3]
        for line in lines
        if line.split(":")[0] in get_rule("GPU001").params.model_fields
    }
    fields = get_rule("GPU001").params.model_fields
    assert set(params) == set(fields)
    assert params["max_util_pct"] == ["5.0", "->", "3.0"]
    assert params["min_idle_hours"] == ["2", "->", "4"]
    for name in set(fields) - {"max_util_pct", "min_idle_hours"}:  # not overridden: default -> default
        assert params[name] == [str(fields[name].default), "->", str(fields[name].default)], name
    # by name, case-insensitively, with --config from elsewhere: the same text
    monkeypatch.chdir(tmp_path.parent)
    again = cli("--config", str(tmp_path / "wastewatch.yaml"), "rules", "show", "Idle-GPU-Instance")
    assert again.exit_code == 0 and again.stdout == result.stdout


def test_rules_show_without_a_config_shows_the_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = cli("rules", "show", "gpu001")
    assert result.exit_code == 0
    assert "max_util_pct: 5.0 -> 5.0" in result.stdout and "min_idle_hours: 2 -> 2" in result.stdout


def test_rules_show_with_an_explicit_missing_config_exits_2(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    result = cli("--config", str(missing), "rules", "show", "GPU001")
    assert result.exit_code == 2
    assert f"{missing}: configuration file not found" in result.stderr


def test_rules_show_unknown_rule_exits_2() -> None:
    result = cli("rules", "show", "NOPE")
    assert result.exit_code == 2
    assert "unknown rule 'NOPE'" in result.stderr and "GPU001" in result.stderr
    assert result.stdout == ""


def test_rules_show_with_a_broken_config_exits_2(tmp_path: Path) -> None:
    path = write_config(tmp_path, "rules:\n  GPU001:\n    max_util_pct: 500\n")
    result = cli("--config", str(path), "rules", "show", "GPU001")
    assert result.exit_code == 2
    assert f"{path}:3: rules.GPU001.max_util_pct:" in result.stderr


# --- usage and configuration errors: exit 2, before anything is written --------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--week", "2026-W60"], "week 60 does not exist in 2026"),
        (["evaluate", "--week", "2026-48"], "'2026-48' is not an ISO week"),
        (["report", "--week", "W48"], "is not an ISO week"),
        (["ingest", "--frobnicate"], "No such option"),
        (["sql"], "Missing argument"),
        (["sql", "select 1", "--format", "xml"], "'xml' is not one of"),
        (["explode"], "No such command"),
    ],
)
def test_usage_errors_exit_2_and_write_nothing(tmp_path: Path, args: list[str], message: str) -> None:
    config = write_config(tmp_path, FOCUS_ONLY)
    copy_into(FOCUS_SAMPLE, tmp_path / "landing" / "billing")
    result = cli("--config", str(config), *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert not (tmp_path / "warehouse").exists() and not (tmp_path / "reports").exists()


def test_missing_config_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "conf" / "wastewatch.yaml"
    result = cli("--config", str(missing), "ingest")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {missing}: configuration file not found")
    monkeypatch.chdir(tmp_path)
    default = cli("run", "--week", "2024-W38")
    assert default.exit_code == 2
    assert "error: wastewatch.yaml: configuration file not found" in default.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_folder_as_config_exits_2(tmp_path: Path) -> None:
    result = cli("--config", str(tmp_path), "ingest")
    assert result.exit_code == 2 and "is a directory" in result.stderr


def test_config_with_an_unknown_key_exits_2_naming_file_line_and_key(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """
        warehouse: w.duckdb
        sources:
          - {name: focus, kind: focus, uri: landing/billing/, colour: red}
        """,
    )
    for command in (["ingest"], ["run", "--week", "2024-W38"], ["sql", "select 1"]):
        result = cli("--config", str(path), *command)
        assert result.exit_code == 2, command
        assert f"error: {path}:3: sources[0].colour: unknown key" in result.stderr, command
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wastewatch.yaml"]


def test_version() -> None:
    result = cli("--version")
    assert result.exit_code == 0 and version("wastewatch") in result.stdout


# --- init --------------------------------------------------------------------------------------------


def test_init_writes_the_starter_config_and_refuses_to_overwrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = cli("init")
    assert result.exit_code == 0, result.output
    target = tmp_path / "wastewatch.yaml"
    assert target.read_text(encoding="utf-8") == STARTER_CONFIG
    assert [s.name for s in load_config(target).sources] == ["focus-main", "gpu-nodes"]

    target.write_text("currency: EUR\n", encoding="utf-8")
    refused = cli("init")
    assert refused.exit_code == 2
    assert "already exists" in refused.stderr and "--force" in refused.stderr
    assert target.read_text(encoding="utf-8") == "currency: EUR\n"

    forced = cli("init", "--force")
    assert forced.exit_code == 0
    assert target.read_text(encoding="utf-8") == STARTER_CONFIG


def test_init_to_a_path_creates_its_folder(tmp_path: Path) -> None:
    target = tmp_path / "etc" / "ww" / "wastewatch.yaml"
    assert cli("init", str(target)).exit_code == 0
    assert target.read_text(encoding="utf-8") == STARTER_CONFIG
    # --config names the file init writes when no PATH is given
    other = tmp_path / "other.yaml"
    assert cli("--config", str(other), "init").exit_code == 0
    assert other.read_text(encoding="utf-8") == STARTER_CONFIG


# --- a whole weekly run, as cron would start it: from another directory, the config named relative to it ---


def _spend_in_week(start: datetime, end: datetime) -> Decimal:
    """Effective cost of the sample spread evenly over each line's charge period, inside [start, end)."""
    total = Decimal(0)
    for r in _sample_rows():
        s = datetime.fromisoformat(r["ChargePeriodStart"].replace("Z", "")[:19])
        e = datetime.fromisoformat(r["ChargePeriodEnd"].replace("Z", "")[:19])
        overlap = (min(e, end) - max(s, start)).total_seconds()
        if overlap > 0:
            total += Decimal(r["EffectiveCost"]) * Decimal(overlap) / Decimal((e - s).total_seconds())
    return total


def test_run_writes_the_weekly_report_with_a_relative_config_from_another_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI in this process, in the other directory (the real script's exit codes and processes are
    tests/cli/test_boundary.py's)."""
    project = tmp_path / "project"
    copy_into(FOCUS_SAMPLE, project / "landing" / "billing")
    write_config(project, FOCUS_ONLY)
    cwd = tmp_path / "cron"
    cwd.mkdir()
    monkeypatch.chdir(cwd)

    result = cli("--config", "../project/wastewatch.yaml", "run", "--week", "2024-W38")
    assert result.exit_code == 0, result.stderr
    assert list(cwd.iterdir()) == []  # nothing resolved against the working directory

    week = project / "reports" / "2024-W38"
    pages = [f"{stem}.html" for stem, _ in PAGES]  # report.html's linked pages, beside it
    assert sorted(p.name for p in week.iterdir()) == sorted(
        [
            "findings.csv",
            "findings.parquet",
            "report.html",
            "report.md",
            "report-full.md",
            "teams",
            "statements",
            *pages,
        ]
    )
    assert (project / "warehouse" / "wastewatch.duckdb").is_file()
    assert (project / "warehouse" / "wastewatch.published.duckdb").is_file()

    md = (week / "report.md").read_text(encoding="utf-8")
    assert md.splitlines()[0].endswith("2024-W38")
    spend = _spend_in_week(datetime(2024, 9, 16), datetime(2024, 9, 23))
    assert f"**Spend:** USD {spend:,.2f}" in md
    html = (week / "report.html").read_text(encoding="utf-8")
    assert "2024-W38" in html and f"{spend:,.2f}" in html

    findings = pl.read_parquet(week / "findings.parquet")
    # the finding contract's columns come first; lifecycle columns (finding_key, first seen, ...) follow
    assert findings.columns[: len(FINDING_COLUMNS)] == list(FINDING_COLUMNS)
    with (week / "findings.csv").open(newline="", encoding="utf-8") as f:
        assert next(csv.reader(f))[: len(FINDING_COLUMNS)] == list(FINDING_COLUMNS)
    # the files hold what the warehouse holds for that week
    con = duckdb.connect(str(project / "warehouse" / "wastewatch.published.duckdb"), read_only=True)
    try:
        n = con.execute("select count(*) from findings where week_start = date '2024-09-16'").fetchall()[0][0]
    finally:
        con.close()
    assert findings.height == n


def test_sql_tables_show_money_with_its_scale_trimmed_and_csv_keeps_it_exact() -> None:
    """Money is DECIMAL(38, 12): the table prints 16,776.48 and 0, not 16776.480000000000 and 0E-12, right-
    aligned; csv and json keep the stored value."""
    from decimal import Decimal

    from pipelines.cli.query import format_rows

    cols, data = (
        ["team", "waste", "n"],
        [("nlp", Decimal("16776.480000000000"), 3), ("ops", Decimal("0E-12"), 12)],
    )
    assert format_rows(cols, data, "table").splitlines() == [
        "team      waste   n",
        "----  ---------  --",
        "nlp   16,776.48   3",
        "ops           0  12",
        "(2 rows)",
    ]
    assert format_rows(cols, data, "csv").splitlines()[1:] == ["nlp,16776.480000000000,3", "ops,0E-12,12"]
    assert '"waste": "16776.480000000000"' in format_rows(cols, data, "json")
