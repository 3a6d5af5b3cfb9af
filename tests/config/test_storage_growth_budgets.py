"""`budgets: storage_growth:` (COST004's limits): read into the shape the rule takes, next to the spend budgets
COST002 keeps reading; a scope or amount that cannot be is a config error naming the file, line and key
(the CLI exits 2 with that one line)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pipelines.cli import main
from pipelines.config import ConfigError, load_config
from rules import get_rule
from tests.helpers.config import write_config


def test_scopes_and_amounts_are_read_beside_the_spend_budgets(tmp_path: Path) -> None:
    config = load_config(
        write_config(
            tmp_path,
            """
            currency: EUR
            budgets:
              team: {nlp: 40000}
              storage_growth:
                "s3://acme-ckpt": 10%
                "s3://acme-data/datasets/": 2 TiB
                "/lustre/scratch": "1.5 GiB a month"
                "team:vision": 500 GiB/month
                "project:llm": 12.5 %
            """,
        )
    )
    assert config.budgets["storage_growth"] == {
        "s3://acme-ckpt/": {"percent": 10.0},
        "s3://acme-data/datasets/": {"gib": 2048.0},
        "/lustre/scratch/": {"gib": 1.5},
        "team:vision": {"gib": 500.0},
        "project:llm": {"percent": 12.5},
    }
    cost004, cost002 = get_rule("COST004"), get_rule("COST002")
    p4 = cost004.make_params(config.rule_overrides("COST004"), config)
    assert p4.budgets["s3://acme-ckpt/"].percent == 10.0 and p4.budgets["team:vision"].gib == 500.0
    assert p4.currency == "EUR"
    # COST002 takes the spend budgets only, as before
    p2 = cost002.make_params(config.rule_overrides("COST002"), config)
    assert {k: dict(v) for k, v in p2.budgets.items()} == {"team": {"nlp": 40000}}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('"s3://acme-ckpt/": 10', "4: budgets.storage_growth.s3://acme-ckpt/: '10' is not a monthly growth"),
        (
            '"s3://acme-ckpt/": lots',
            "4: budgets.storage_growth.s3://acme-ckpt/: 'lots' is not a monthly growth",
        ),
        ('"s3://acme-ckpt/": 10 GB', "'10 GB' is not a monthly growth: write a share of the stored bytes"),
        ('"s3://acme-ckpt/": -5%', "'-5%' is not a monthly growth"),
        (
            '"gs://acme-ckpt/": 10%',
            "budgets.storage_growth.gs://acme-ckpt/: not a storage scope: write s3://",
        ),
        ('"s3://Acme_Ckpt/": 10%', "'Acme_Ckpt' is not an S3 bucket name"),
        ('"s3://acme-ckpt/a/b/c/d/": 10%', "a prefix 4 folders deep; storage growth is measured at most 3"),
        ('"team:": 10%', "budgets.storage_growth.team:: not a storage scope"),
        (
            '"s3://acme-ckpt": 10%\n                "s3://acme-ckpt/": 20%',
            "3: budgets.storage_growth: 's3://acme-ckpt' and",
        ),
    ],
)
def test_a_growth_budget_that_cannot_be_names_file_line_and_key(
    tmp_path: Path, body: str, expected: str
) -> None:
    path = write_config(
        tmp_path,
        f"""
            budgets:
              team: {{nlp: 40000}}
              storage_growth:
                {body}
            """,
    )
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert expected in str(err.value)
    assert str(err.value).startswith(str(path))


def test_an_unknown_key_under_budgets_is_named(tmp_path: Path) -> None:
    path = write_config(tmp_path, 'budgets:\n  storage: {"s3://acme-ckpt/": 10%}\n')
    with pytest.raises(ConfigError, match=r"wastewatch.yaml:2: budgets.storage: unknown key"):
        load_config(path)


def test_the_cli_exits_2_with_one_line_naming_the_key(tmp_path: Path) -> None:
    path = write_config(tmp_path, 'budgets:\n  storage_growth:\n    "s3://acme-ckpt/": 10\n')
    result = CliRunner().invoke(main, ["--config", str(path), "evaluate", "--week", "2026-W48"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "wastewatch.yaml:3: budgets.storage_growth.s3://acme-ckpt/:" in lines[0]
    assert "Traceback" not in result.output
    assert not (tmp_path / "warehouse").exists()  # nothing done


def test_the_rules_own_form_is_checked_at_load_too(tmp_path: Path) -> None:
    # `{percent: -5}` under budgets and text under `rules: COST004:` are named when the file is read
    path = write_config(tmp_path, 'budgets:\n  storage_growth:\n    "s3://acme-ckpt/": {percent: -5}\n')
    with pytest.raises(
        ConfigError, match=r"wastewatch.yaml:3: budgets.storage_growth.s3://acme-ckpt/: .*not below 0"
    ):
        load_config(path)
    path = write_config(tmp_path, 'rules:\n  COST004: {budgets: {"s3://acme-ckpt/": 10%}}\n')
    with pytest.raises(ConfigError, match=r"rules.COST004.budgets.s3://acme-ckpt/: '10%': write it under"):
        load_config(path)
