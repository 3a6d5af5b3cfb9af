"""The daily alert for live, expensive waste (`wastewatch alert`, the daily_alert job and schedule): GPU001 and
GPU004 evaluated by their own SQL over the last 24 hours of a real DuckDB warehouse, posted to a real HTTP
server on 127.0.0.1, once per finding until it changes.

The fleet: i-idle, an 8×H100 billed 98.32 an hour and idle (0.4 % util, 70 W) from 2026-11-23 00:00, so
each full day of it is 24 × 98.32 = USD 2,359.68; i-cheap, idle too but billed 10.00 an hour (240.00 a
day, under the 500 threshold); i-woke, idle until 12:00 on the first day and busy since (not running at the
end of the data). The data's "now" is the end of the newest billed hour.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pytest
from click.testing import CliRunner, Result

from pipelines.cli import main
from pipelines.config import ConfigError, load_config
from pipelines.defs.resources import WastewatchResource
from pipelines.report.alert import AlertError, run_alert
from pipelines.transform.build import build_mart
from rules import get_rule
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import open_copy, open_prepared
from tests.helpers.mart_rows import load_given
from tests.helpers.marts import marts_needed
from tests.helpers.webhook import WebhookReceiver

# the marts the alert reads: its two rules' and its own queries' (sql/alerts/), with the marts they read
ALERT_READS = marts_needed(
    *get_rule("GPU001").requires, *get_rule("GPU004").requires, "gpu_billed_hours", "gpu_job_hours"
)
D0 = datetime(2026, 11, 23)
DAY = timedelta(days=1)
IDLE, CHEAP, WOKE = "i-0aaaaaaaaaaaaaaa1", "i-0bbbbbbbbbbbbbbb2", "i-0ccccccccccccccc3"


def action_id(rule_id: str, resource_id: str, kind: str) -> str:
    """The id `wastewatch remediate plan` gives the action (sql/macros/macro_remediation.sql)."""
    return hashlib.sha1(f"{rule_id}|{resource_id}|{kind}|{resource_id}".encode()).hexdigest()[:16]


def key(rule_id: str, resource_id: str) -> str:
    return hashlib.sha1(f"{rule_id}|{resource_id}".encode()).hexdigest()[:16]


@dataclass
class Site:
    path: Path
    url: str
    handler: type[WebhookReceiver]

    def cli(self, *args: str) -> Result:
        return CliRunner(env={"WASTEWATCH_CONFIG": None}).invoke(
            main, ["--config", str(self.path), "-q", "alert", *args], catch_exceptions=False
        )

    def load(
        self, until: datetime, idle_cost: float = 98.32, idle_busy: tuple[datetime, datetime] | None = None
    ) -> None:
        """The fleet's marts from D0 to `until`: i-idle idle at `idle_cost` an hour (busy in `idle_busy`)."""
        given: dict[str, list[dict[str, Any]]] = {
            "resources": [
                {"resource_id": r, "host": f"gpu-{r[-1]}", "team": "nlp", "owner": "ana"} for r in (IDLE, CHEAP, WOKE)
            ],
            "cost_hourly": [
                {"resource_id": IDLE, "from": D0, "to": until, "effective_cost": idle_cost},
                {"resource_id": CHEAP, "from": D0, "to": until, "effective_cost": 10.0},
                {"resource_id": WOKE, "from": D0, "to": until, "effective_cost": 98.32},
            ],
            "gpu_job_hours": [
                {"resource_id": CHEAP, "gpus": 8, "from": D0, "to": until, "util_mean": 0.4},
                {"resource_id": WOKE, "gpus": 8, "from": D0, "to": D0 + timedelta(hours=12), "util_mean": 0.4},
                {"resource_id": WOKE, "gpus": 8, "from": D0 + timedelta(hours=12), "to": until, "util_mean": 80.0,
                 "power_mean_w": 500.0},
            ],
        }  # fmt: skip
        spans = [(D0, until)]
        if idle_busy is not None:
            spans = [(D0, idle_busy[0]), (idle_busy[1], until)]
            given["gpu_job_hours"].append(
                {"resource_id": IDLE, "gpus": 8, "from": idle_busy[0], "to": idle_busy[1], "util_mean": 90.0,
                 "power_mean_w": 600.0}
            )  # fmt: skip
        for start, end in (s for s in spans if s[0] < s[1]):
            given["gpu_job_hours"].append(
                {"resource_id": IDLE, "gpus": 8, "from": start, "to": end, "util_mean": 0.4}
            )
        self.given(given)

    def given(self, given: dict[str, list[dict[str, Any]]]) -> None:
        """The marts hold exactly these rows (tests/helpers/mart_rows.py's syntax), and the shared marts the
        alert reads are built from them. The warehouse is a copy of `empty_marts` the CLI has only written
        rows to: opened as `connect` leaves it (tests/helpers/empty_warehouse.py)."""
        con = open_prepared(load_config(self.path).warehouse_path)
        try:
            load_given(con, given, {}, ALERT_READS)
        finally:
            con.close()

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        con = duckdb.connect(str(load_config(self.path).warehouse_path), read_only=True)
        try:
            return con.execute(sql).fetchall()
        finally:
            con.close()

    def posts(self) -> list[str]:
        return [p["body"]["text"] for p in self.handler.received]


@pytest.fixture
def site(tmp_path: Path, empty_marts: Path, receiver: tuple[str, type[WebhookReceiver]]) -> Iterator[Site]:
    url, handler = receiver
    path = write_config(
        tmp_path,
        f"""
        notify: {{webhook_url: "{url}"}}
        alert: {{min_daily_waste: 500, live_hours: 3, change_pct: 25, retries: 1, retry_backoff_s: 0}}
        """,
    )
    open_copy(empty_marts, load_config(path).warehouse_path).close()
    yield Site(path, url, handler)


def test_an_idle_instance_above_the_threshold_alerts_once_with_its_planned_action(site: Site) -> None:
    site.load(until=D0 + DAY)
    result = site.cli()
    assert result.exit_code == 0, result.output
    [text] = site.posts()
    stop = action_id("GPU001", IDLE, "stop_instance")
    assert "1 live finding(s) costing at least 500 a day (the 24 h of data to 2026-11-24 00:00 UTC" in text
    assert (
        f"GPU001 idle-gpu-instance `{IDLE}` (nlp/ana): USD 2,359.68 in the last 24 h, still running (new)"
        in text
    )
    assert f"Action: stop_instance {stop}, not planned yet: `wastewatch remediate plan`" in text
    # under the threshold (240.00 a day) and no longer running (busy since 12:00): not posted
    assert CHEAP not in text and WOKE not in text
    assert "T000" not in result.output and "XXXX" not in result.output  # the webhook's path is its secret
    assert (
        f"not sent: GPU001 {CHEAP}: USD 240.00 in the last 24 h, under min_daily_waste 500" in result.output
    )
    assert site.query(
        "select finding_key, rule_id, resource_id, daily_waste, currency, as_of, action_id, action_kind, sends, "
        "stopped_since_sent from alerts_sent"
    ) == [
        (key("GPU001", IDLE), "GPU001", IDLE, Decimal("2359.680000"), "USD", D0 + DAY, stop, "stop_instance", 1,
         False)
    ]  # fmt: skip
    # the same data again, and the next day's unchanged finding (the same 24 h amount): nothing new to post
    assert site.cli().exit_code == 0
    site.load(until=D0 + 2 * DAY)
    again = site.cli()
    assert again.exit_code == 0 and "nothing new to post" in again.output
    assert f"not sent: GPU001 {IDLE}: sent at" in again.output
    assert len(site.posts()) == 1
    assert site.query("select sends, last_live_as_of from alerts_sent") == [(1, D0 + 2 * DAY)]


def test_a_finding_whose_daily_waste_moved_is_sent_again(site: Site) -> None:
    site.load(until=D0 + DAY)
    assert site.cli().exit_code == 0
    # the second day billed at 150.00 an hour: 3,600.00 in the last 24 h, 52.6 % up
    site.load(until=D0 + 2 * DAY, idle_cost=150.0)
    result = site.cli()
    assert result.exit_code == 0, result.output
    assert len(site.posts()) == 2
    assert (
        f"`{IDLE}` (nlp/ana): USD 3,600.00 in the last 24 h, still running (up from USD 2,359.68)"
        in site.posts()[1]
    )
    assert site.query("select daily_waste, sends from alerts_sent") == [(Decimal("3600.000000"), 2)]


def test_a_finding_that_stopped_and_came_back_is_sent_again(site: Site) -> None:
    site.load(until=D0 + DAY)
    assert site.cli().exit_code == 0
    # busy through the second day: no longer running, so not posted, and marked as stopped
    site.load(until=D0 + 2 * DAY, idle_busy=(D0 + DAY, D0 + 2 * DAY))
    assert site.cli().exit_code == 0 and len(site.posts()) == 1
    assert site.query("select stopped_since_sent from alerts_sent") == [(True,)]
    # idle again from the third day: the same amount as sent, but it stopped in between
    site.load(until=D0 + 3 * DAY, idle_busy=(D0 + DAY, D0 + 2 * DAY))
    assert site.cli().exit_code == 0
    assert len(site.posts()) == 2
    assert "running again: it had stopped since it was sent at" in site.posts()[1]
    assert site.query("select sends, stopped_since_sent from alerts_sent") == [(2, False)]


def test_a_zombie_instance_is_sent_with_no_automatic_action(site: Site) -> None:
    # GPU004: job 5 ran 00:00-04:00 on i-zombie, then the instance billed 50.00 an hour for 20 h with no job
    # and no telemetry up to the end of the data (i-busy's telemetry and the bill reach 2026-11-24 00:00):
    # 20 × 50.00 = 1,000.00 in the last 24 h, still running
    zombie, busy = "i-0ddddddddddddddd4", "i-0eeeeeeeeeeeeeee5"
    site.given(
        {
            "resources": [{"resource_id": zombie, "team": "vision"}, {"resource_id": busy, "team": "vision"}],
            "jobs_enriched": [
                {"job_id": "5", "started_at": D0, "ended_at": D0 + timedelta(hours=4), "resource_ids": [zombie]}
            ],
            "cost_hourly": [
                {"resource_id": zombie, "from": D0, "to": D0 + DAY, "effective_cost": 50.0},
                {"resource_id": busy, "from": D0, "to": D0 + DAY, "effective_cost": 50.0},
            ],
            "gpu_job_hours": [
                {"resource_id": zombie, "job_id": "5", "gpus": 8, "from": D0, "to": D0 + timedelta(hours=4),
                 "util_mean": 80.0, "power_mean_w": 500.0},
                {"resource_id": busy, "gpus": 8, "from": D0, "to": D0 + DAY, "util_mean": 80.0, "power_mean_w": 500.0},
            ],
        }
    )  # fmt: skip
    result = site.cli()
    assert result.exit_code == 0, result.output
    [text] = site.posts()
    assert f"GPU004 failed-job-and-zombie `{zombie}` (vision): USD 1,000.00 in the last 24 h" in text
    assert "Action: no automatic action for GPU004: stop or release the node and fix the job" in text
    assert site.query(
        "select rule_id, resource_id, daily_waste, action_id, action_kind from alerts_sent"
    ) == [("GPU004", zombie, Decimal("1000.000000"), None, None)]


def test_an_acknowledged_finding_is_not_sent(site: Site) -> None:
    site.load(until=D0 + DAY)
    con = open_prepared(load_config(site.path).warehouse_path)
    try:
        con.execute(
            "insert into finding_acks values ($k, 'GPU001', $r, null, '2026-12-31', 'warm pool', 'ops', now())",
            {"k": key("GPU001", IDLE), "r": IDLE},
        )
    finally:
        con.close()
    result = site.cli()
    assert result.exit_code == 0 and "nothing new to post" in result.output
    assert f"not sent: GPU001 {IDLE}: acknowledged" in result.output
    assert site.posts() == [] and site.query("select count(*) from alerts_sent") == [(0,)]


def test_now_is_the_newest_hour_both_the_bill_and_the_telemetry_reach(site: Site) -> None:
    # the bill runs 6 h past the telemetry (an exporter down): now is the telemetry's newest hour, so the
    # unobserved hours make no zombie and the idle instances are judged up to 2026-11-24 00:00
    site.load(until=D0 + DAY)
    con = open_prepared(load_config(site.path).warehouse_path)
    try:
        con.execute(
            "insert into cost_hourly by name select hour + interval 6 hour as hour, * exclude (hour) "
            "from cost_hourly where hour >= $h",
            {"h": D0 + timedelta(hours=18)},
        )
        build_mart(con, "gpu_billed_hours")
        assert con.execute("select max(hour) from gpu_billed_hours").fetchall() == [
            (D0 + DAY + timedelta(hours=5),)
        ]
    finally:
        con.close()
    result = site.cli("--dry-run")
    assert result.exit_code == 0, result.output
    assert "(the 24 h of data to 2026-11-24 00:00 UTC" in result.output
    assert f"GPU001 idle-gpu-instance {IDLE} (nlp/ana): USD 2,359.68 in the last 24 h" in result.output
    assert "GPU004" not in result.output


def test_a_failed_post_exits_non_zero_and_records_nothing_as_sent(site: Site) -> None:
    site.load(until=D0 + DAY)
    site.handler.status = 500
    result = site.cli()
    assert result.exit_code == 1
    assert "HTTP 500 Internal Server Error" in result.output and "(after 2 attempts)" in result.output
    assert "1 finding(s) not recorded as sent" in result.output
    assert "T000" not in result.output and "XXXX" not in result.output
    assert len(site.handler.received) == 2  # the first try and one retry (retries: 1)
    assert site.query("select count(*) from alerts_sent") == [(0,)]
    # a refusal (4xx) is not retried
    site.handler.status = 400
    assert site.cli().exit_code == 1 and len(site.handler.received) == 3
    # once the webhook takes it, the same finding is posted: nothing had been recorded
    site.handler.status = 200
    assert site.cli().exit_code == 0
    assert len(site.handler.received) == 4 and site.query("select sends from alerts_sent") == [(1,)]


def test_dry_run_prints_what_would_be_sent_and_changes_nothing(site: Site) -> None:
    site.load(until=D0 + DAY)
    result = site.cli("--dry-run")
    assert result.exit_code == 0, result.output
    assert f"GPU001 idle-gpu-instance {IDLE} (nlp/ana): USD 2,359.68 in the last 24 h" in result.output
    assert f"action: stop_instance {action_id('GPU001', IDLE, 'stop_instance')}" in result.output
    assert "dry run: 1 finding(s) would be posted; nothing posted or recorded" in result.output
    assert site.posts() == [] and site.query("select count(*) from alerts_sent") == [(0,)]


def test_as_of_judges_an_earlier_day(site: Site) -> None:
    # at 12:00 on the first day i-woke had been idle 12 h, still running then: 12 × 98.32 = 1,179.84
    site.load(until=D0 + 2 * DAY)
    result = site.cli("--dry-run", "--as-of", "2026-11-23T12:00")
    assert result.exit_code == 0, result.output
    assert f"GPU001 idle-gpu-instance {WOKE} (nlp/ana): USD 1,179.84 in the last 24 h" in result.output


def test_the_alert_config_is_validated_naming_the_key(tmp_path: Path) -> None:
    path = write_config(tmp_path, "reports_dir: r\nalert:\n  min_daily_waste: 100\n")
    with pytest.raises(ConfigError, match=r"wastewatch.yaml:2: alert.webhook_url: required key is missing"):
        load_config(path)
    path = write_config(tmp_path, "notify: {webhook_url: 'http://127.0.0.1:9/h'}\nalert:\n  live_hours: 48\n")
    with pytest.raises(ConfigError, match=r"wastewatch.yaml:3: alert.live_hours: Input should be less than"):
        load_config(path)
    path = write_config(
        tmp_path, "notify: {webhook_url: 'http://127.0.0.1:9/h'}\nalert:\n  rules: [GPU002]\n"
    )
    with pytest.raises(
        ConfigError, match=r"alert.rules\[0\]: got 'GPU002', expected one of 'GPU001' or 'GPU004'"
    ):
        load_config(path)
    path = write_config(tmp_path, "notify: {webhook_url: 'http://127.0.0.1:9/h'}\nalert:\n  treshold: 5\n")
    with pytest.raises(ConfigError, match=r"wastewatch.yaml:3: alert.treshold: unknown key"):
        load_config(path)
    # without an `alert:` section the command is a config error: exit 2, nothing done
    path = write_config(tmp_path, "reports_dir: r\n")
    result = CliRunner(env={"WASTEWATCH_CONFIG": None}).invoke(main, ["--config", str(path), "-q", "alert"])
    assert result.exit_code == 2 and "no `alert:` section" in result.output


def test_the_schedule_requests_a_daily_run_and_the_job_posts(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.definitions import defs

    monkeypatch.setenv("WASTEWATCH_CONFIG", str(site.path))
    d = defs()
    schedule = d.resolve_schedule_def("daily_alert_schedule")
    assert (schedule.cron_schedule, schedule.execution_timezone, schedule.job_name) == (
        "0 5 * * *", "UTC", "daily_alert",
    )  # fmt: skip
    with dg.build_schedule_context(
        scheduled_execution_time=datetime(2026, 11, 24, 5, tzinfo=UTC),
        repository_def=d.get_repository_def(),
        resources={"wastewatch": WastewatchResource()},  # the config from $WASTEWATCH_CONFIG
    ) as context:
        data = schedule.evaluate_tick(context)
    assert data.skip_message is None
    [request] = data.run_requests or []
    assert request.run_key == "alert-2026-11-24"
    # the job it runs, in-process: the post goes out and is recorded
    site.load(until=D0 + DAY)
    job = d.resolve_job_def("daily_alert")
    outcome = job.execute_in_process(resources={"wastewatch": WastewatchResource(config_path=str(site.path))})
    assert outcome.success and len(site.posts()) == 1
    assert site.query("select resource_id from alerts_sent") == [(IDLE,)]
    # a failed post fails the run
    site.handler.status = 503
    site.load(until=D0 + 2 * DAY, idle_cost=150.0)
    failed = job.execute_in_process(
        resources={"wastewatch": WastewatchResource(config_path=str(site.path))}, raise_on_error=False
    )
    assert not failed.success
    assert site.query("select sends from alerts_sent") == [(1,)]


def test_the_schedule_skips_without_an_alert_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipelines.definitions import defs

    monkeypatch.setenv("WASTEWATCH_CONFIG", str(write_config(tmp_path, "reports_dir: r\n")))
    d = defs()
    with dg.build_schedule_context(
        scheduled_execution_time=datetime(2026, 11, 24, 5, tzinfo=UTC),
        repository_def=d.get_repository_def(),
        resources={"wastewatch": WastewatchResource()},  # the config from $WASTEWATCH_CONFIG
    ) as context:
        data = d.resolve_schedule_def("daily_alert_schedule").evaluate_tick(context)
    assert (
        not data.run_requests and data.skip_message is not None and "no `alert:` section" in data.skip_message
    )


def test_a_long_alert_goes_in_parts_and_after_a_failed_part_only_the_rest_is_sent(
    tmp_path: Path, empty_marts: Path, timed: tuple[str, Any]
) -> None:
    # 90 idle 8-GPU instances, each billed 50.00 + i an hour all day: 90 findings, too many for one post
    url, handler = timed
    path = write_config(
        tmp_path, f'notify: {{webhook_url: "{url}"}}\nalert: {{min_daily_waste: 500, retries: 0}}\n'
    )
    config = load_config(path)
    open_copy(empty_marts, config.warehouse_path).close()
    ids = [f"i-0{i:016x}" for i in range(90)]
    site = Site(path, url, handler)
    site.given(
        {
            "resources": [{"resource_id": r, "team": "nlp"} for r in ids],
            "cost_hourly": [
                {"resource_id": r, "from": D0, "to": D0 + DAY, "effective_cost": 50.0 + i} for i, r in enumerate(ids)
            ],
            "gpu_job_hours": [
                {"resource_id": r, "gpus": 8, "from": D0, "to": D0 + DAY, "util_mean": 0.4} for r in ids
            ],
        }
    )  # fmt: skip
    handler.fail = {2: 503}  # the webhook takes the first part, then fails
    con = open_prepared(config.warehouse_path)
    try:
        with pytest.raises(AlertError) as failed:
            run_alert(con, config, pace_s=0)
    finally:
        con.close()
    [first, _refused] = [p["body"] for p in handler.received]
    n = int(first["blocks"][0]["text"]["text"].rsplit(" of ", 1)[1].rstrip(")"))
    assert n >= 3 and "(part 1 of " in first["blocks"][0]["text"]["text"]
    in_first = re.findall(r"`(i-0[0-9a-f]{16})`", first["text"])
    message = str(failed.value)
    assert (
        f"HTTP 503 Service Unavailable: invalid_payload; part 2 of {n} not posted, part 1 was posted"
        in message
    )
    assert (
        f"; {90 - len(in_first)} finding(s) not recorded as sent, {len(in_first)} posted and recorded"
        in message
    )
    assert "XXXX" not in message
    # exactly the first part's findings are recorded as sent
    assert sorted(r for (r,) in site.query("select resource_id from alerts_sent")) == sorted(in_first)
    # the next check posts only the rest, each once, within Slack's limits
    handler.received.clear()
    handler.fail = {}
    con = open_prepared(config.warehouse_path)
    try:
        run = run_alert(con, config, pace_s=0)
    finally:
        con.close()
    rest = [p["body"] for p in handler.received]
    assert run.parts == len(rest) >= 2
    in_rest = [r for body in rest for r in re.findall(r"`(i-0[0-9a-f]{16})`", body["text"])]
    assert sorted(in_first + in_rest) == sorted(ids)
    assert rest[0]["blocks"][0]["text"]["text"].startswith(f"*wastewatch alert: {90 - len(in_first)} live")
    assert site.query("select count(*), sum(sends) from alerts_sent") == [(90, 90)]


def test_alert_file_stands_in_for_a_webhook_one_json_line_per_post(site: Site) -> None:
    """`alert.file` (the demo's): each post appended as its Slack payload on one line, recorded as sent, so
    the alert can be tried without a chat; the next check finds nothing new."""
    config = site.path.read_text().replace(f'notify: {{webhook_url: "{site.url}"}}\n', "")
    site.path.write_text(config.replace("retry_backoff_s: 0}", "retry_backoff_s: 0, file: out/alerts.jsonl}"))
    site.load(until=D0 + DAY)
    result = site.cli()
    assert result.exit_code == 0, result.output
    sink = site.path.parent / "out" / "alerts.jsonl"
    assert f"posted 1 finding(s) to file {sink}" in result.output and site.posts() == []
    [line] = sink.read_text().splitlines()
    payload = json.loads(line)
    assert "USD 2,359.68 in the last 24 h" in payload["text"] and payload["blocks"][0]["type"] == "section"
    assert site.query("select resource_id, sends from alerts_sent") == [(IDLE, 1)]
    again = site.cli()
    assert "nothing new to post" in again.output and len(sink.read_text().splitlines()) == 1
