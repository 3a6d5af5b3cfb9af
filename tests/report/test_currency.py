"""The consolidated view in one reporting currency: dated rates from the config (validated, never fetched),
converted beside the per-currency figures, labelled with the rate and its date, a currency without a rate
named as not converted, and nothing at all when no rates are configured."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from pipelines.config import ConfigError, load_config
from pipelines.report.model import WeeklyReport
from pipelines.report.render import environment, report_html, report_markdown_full
from pipelines.report.rows import ExchangeRate, Headline
from rules import Window
from tests.helpers.config import write_config


def _week() -> Window:
    return Window.containing(date(2026, 11, 23))


def _headline(currency: str, spend: str, waste: str, prev_spend: str, prev_waste: str | None) -> Headline:
    return Headline.of({
        "currency": currency, "spend": Decimal(spend), "waste": Decimal(waste), "waste_pct": None,
        "waste_findings": 1, "findings": 1, "acknowledged_waste": Decimal(0), "acknowledged_findings": 0,
        "attention_findings": 0, "prev_spend": Decimal(prev_spend),
        "prev_waste": None if prev_waste is None else Decimal(prev_waste), "spend_change_pct": None,
        "prev_waste_pct": None, "billed": Decimal(spend), "billed_spend": Decimal(spend),
        "owned_spend": Decimal(0), "contract_spend": Decimal(0), "modelled_spend": Decimal(0),
    })  # fmt: skip


def _report(tmp_path: Path, headline: list[Headline], rates: list[ExchangeRate]) -> WeeklyReport:
    return WeeklyReport(
        week="2026-W48", window=_week(), directory=tmp_path, headline=headline, by_rule=[], by_project=[],
        spend_by_category=[], findings=[], resolved=[], gpu_fleet=[], idle_cells={}, util_bands={},
        unobserved_gpu_hours=0.0, trend={}, data_quality=[], budgets=[], rejected_files=[], idle_util_pct=5.0,
        reporting_currency="USD" if rates else None, exchange_rates=rates,
    )  # fmt: skip


def _rates(tmp_path: Path) -> list[ExchangeRate]:
    config = load_config(
        write_config(
            tmp_path,
            """
            reporting_currency: USD
            exchange_rates:
              - {from: EUR, to: USD, rate: 1.05, valid_from: 2026-10-01}
              - {from: EUR, to: USD, rate: 1.08, valid_from: 2026-11-01}
              - {from: EUR, to: USD, rate: 1.20, valid_from: 2026-12-01}
            """,
        )
    )
    return [
        ExchangeRate(from_=r.from_, to=r.to, rate=r.rate, valid_from=r.valid_from)
        for r in config.exchange_rates
    ]


def test_converted_at_the_rate_in_force_and_a_currency_without_one_named(tmp_path: Path) -> None:
    headline = [
        _headline("USD", "1000.00", "100.00", "900.00", "90.00"),
        _headline("EUR", "500.00", "50.00", "400.00", "40.00"),
        _headline("GBP", "300.00", "30.00", "300.00", "30.00"),
    ]
    report = _report(tmp_path, headline, _rates(tmp_path))
    c = report.consolidated()
    assert c is not None
    # EUR at 1.08 (valid from 2026-11-01, the latest on the week's Monday 2026-11-23; 1.20 starts later)
    assert (c["spend"], c["waste"]) == (Decimal("1540.00"), Decimal("154.00"))
    assert (c["prev_spend"], c["prev_waste"]) == (Decimal("1332.00"), Decimal("133.20"))
    assert c["converted"] == [{"currency": "EUR", "rate": Decimal("1.08"), "valid_from": date(2026, 11, 1)}]
    assert c["not_converted"] == ["GBP"]  # left out, never added unconverted
    html = report_html(report, environment())
    assert 'id="consolidated-spend">USD 1,540.00<' in html
    assert "EUR converted at 1.08 USD per EUR (2026-11-01)" in html
    assert 'data-currency="GBP">GBP not converted</b>' in html
    assert 'id="spend-EUR">500.00<' in html  # the per-currency figures stay beside it
    md = report_markdown_full(report, environment())
    assert "EUR converted at 1.08 USD per EUR (2026-11-01)" in md and "**GBP not converted**" in md


def test_no_rates_no_consolidated_view(tmp_path: Path) -> None:
    headline = [
        _headline("USD", "1000.00", "100.00", "900.00", "90.00"),
        _headline("EUR", "5", "1", "4", "1"),
    ]
    report = _report(tmp_path, headline, [])
    assert report.consolidated() is None
    html = report_html(report, environment())
    assert "converted" not in html.lower().replace("not converted", "")
    assert 'id="consolidated' not in html
    # rates given, but every figure is already in the reporting currency: nothing to consolidate
    only_usd = _report(tmp_path, [_headline("USD", "1", "0", "1", "0")], _rates(tmp_path))
    assert only_usd.consolidated() is None


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("exchange_rates:\n  - {from: EUR, to: USD, rate: 1.08, valid_from: 2026-11-01}\n",
         "exchange_rates needs reporting_currency"),
        ("reporting_currency: USD\nexchange_rates:\n  - {from: EUR, to: GBP, rate: 0.9, valid_from: 2026-11-01}\n",
         "converts to GBP, but reporting_currency is USD"),
        ("reporting_currency: USD\nexchange_rates:\n  - {from: EUR, to: USD, rate: 0, valid_from: 2026-11-01}\n",
         "rate"),
        ("reporting_currency: USD\nexchange_rates:\n  - {from: EUR, to: USD, rate: 1.1, valid_from: 2026-11-01}\n"
         "  - {from: EUR, to: USD, rate: 1.2, valid_from: 2026-11-01}\n",
         "a second EUR rate valid from 2026-11-01"),
        ("reporting_currency: usd\n", "reporting_currency"),
    ],
)  # fmt: skip
def test_bad_exchange_rates_are_refused_naming_the_file(tmp_path: Path, body: str, expected: str) -> None:
    path = write_config(tmp_path, body)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(path) in str(err.value) and expected in str(err.value)
