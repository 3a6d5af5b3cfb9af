"""`notify:` end to end: the weekly report asset, materialised in-process by Dagster, posts to the webhook.

The warehouse holds the report tests' hand-worked fleet (tests/helpers/report.py, figures in
test_figures.py) for 2026-W48 (spend USD 21,564.00, GPU001 waste USD 8,640.00 = 40.1 %, COST001-COST003
evaluated with the config's budgets). wastewatch.yaml's `notify:` points at a real HTTP server on
127.0.0.1; `reports/weekly_report` is materialised with `dg.materialize` from the code location's own
asset definitions, as the weekly schedule runs it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import dagster as dg
import yaml

from pipelines.config import load_config
from pipelines.definitions import defs
from pipelines.defs.partitions import definitions_for, week_to_partition
from pipelines.defs.resources import WastewatchResource
from pipelines.redact import url_label
from tests.helpers.config import write_config
from tests.helpers.empty_warehouse import open_copy
from tests.helpers.report import W48, evaluate_attention, fleet, put_findings
from tests.helpers.webhook import WebhookReceiver

REPORT = dg.AssetKey(["reports", "weekly_report"])


def _project(directory: Path, notify: dict[str, Any], empty_marts: Path) -> Path:
    # the fleet is written into the marts, not the landed tables: history_start names the first week
    body = {
        "history_start": "2026-11-23",
        "budgets": {"team": {"nlp": 10000, "vision": 50000}, "project": {"vit": 20000}},
        "notify": notify,
    }
    config_path = write_config(directory, yaml.safe_dump(body))
    config = load_config(config_path)
    con = open_copy(empty_marts, config.warehouse_path)
    try:
        fleet(con)
        put_findings(
            con, W48, "GPU001",
            [{"resource_id": "i-h100", "team": "nlp", "project": "llm", "estimated_waste": 8640,
              "evidence": {"idle_hours": 108, "host": "i-h100"}}],
        )  # fmt: skip
        evaluate_attention(con, config, W48)
        # one landed sample in the week: the asset reports only on a week with landed data
        con.execute(
            "insert into gpu_samples (ts, host, util_pct, source, x_source_file, x_file_id, x_sample_date)"
            " values (timestamp '2026-11-23 00:00', 'i-h100', 0, 'test', 'test', 'test', date '2026-11-23')"
        )
    finally:
        con.close()
    return config_path


def _materialise(
    config_path: Path, instance: dg.DagsterInstance
) -> tuple[dg.ExecuteInProcessResult, dict[str, Any]]:
    with definitions_for(config_path):  # the weeks start at this project's earliest data
        assets = [a for a in defs().assets or [] if isinstance(a, dg.AssetsDefinition)]
    result = dg.materialize(
        assets,
        selection=dg.AssetSelection.assets(REPORT),
        resources={"wastewatch": WastewatchResource(config_path=str(config_path))},
        partition_key=week_to_partition("2026-W48"),
        instance=instance,
    )
    [event] = result.get_asset_materialization_events()
    mat = event.materialization
    assert mat is not None and mat.asset_key == REPORT and mat.partition == "2026-11-23"
    return result, {k: v.value for k, v in mat.metadata.items()}


def test_weekly_report_asset_posts_the_headline_and_teams_to_the_configured_webhook(
    tmp_path: Path,
    receiver: tuple[str, type[WebhookReceiver]],
    empty_marts: Path,
) -> None:
    url, handler = receiver
    config_path = _project(
        tmp_path,
        {"webhook_url": url, "report_url": "https://finops.example.com/reports", "email_html": True},
        empty_marts,
    )
    result, metadata = _materialise(config_path, dg.DagsterInstance.ephemeral())
    assert result.success
    # the asset's own figures, and what delivery did
    assert (metadata["spend_USD"], metadata["waste_USD"]) == (21564.0, 8640.0)
    assert metadata["notify"] == (
        f"- wrote {tmp_path / 'reports' / '2026-W48' / 'email.html'}\n- posted to {url_label(url)}"
    )
    # the webhook received one Slack-compatible post with the week's headline and totals
    [post] = handler.received
    assert post["path"] == "/hooks/T000/B000/XXXX" and post["type"] == "application/json"
    text = post["body"]["text"]
    assert text.startswith(
        "*wastewatch 2026-W48* <https://finops.example.com/reports/2026-W48/report.html|open the report>"
    )
    assert (
        "Spend USD 21,564.00, waste USD 8,640.00 (40.1 % of spend) in 1 finding; last week not evaluated.\n"
        in text
    )
    assert "• GPU001 `i-h100` (nlp): USD 8,640.00" in text
    assert "COST001 unattributed-spend: 2 item(s), USD 2,496.00 at stake" in text
    assert "• nlp: waste USD 8,640.00 (63.9 %) of USD 13,524.00, budget 135 % used" in text
    assert "• vision: waste USD 0.00 (0.0 %) of USD 5,376.00" in text
    assert [b["text"]["text"] for b in post["body"]["blocks"]] == text.split("\n\n")
    # the report files the post links to are written, and the e-mail HTML carries the same headline
    week = tmp_path / "reports" / "2026-W48"
    assert (week / "report.html").is_file() and (week / "findings.csv").is_file()
    assert "Spend USD 21,564.00, waste USD 8,640.00" in (week / "email.html").read_text(encoding="utf-8")


def test_a_webhook_that_refuses_the_post_is_a_warning_not_a_failed_run(
    tmp_path: Path,
    receiver: tuple[str, type[WebhookReceiver]],
    empty_marts: Path,
) -> None:
    url, handler = receiver
    handler.status = 500
    config_path = _project(tmp_path, {"webhook_url": url}, empty_marts)
    instance = dg.DagsterInstance.ephemeral()
    result, metadata = _materialise(config_path, instance)
    assert result.success and len(handler.received) == 1
    problem = f"webhook {url_label(url)}: HTTP 500 Internal Server Error: invalid_payload"
    assert metadata["waste_USD"] == 8640.0 and metadata["notify"] == f"- {problem}"
    warnings = [e.user_message for e in instance.all_logs(result.run_id) if e.level == logging.WARNING]
    assert problem in warnings
    assert (tmp_path / "reports" / "2026-W48" / "report.html").is_file()  # the report is never lost
