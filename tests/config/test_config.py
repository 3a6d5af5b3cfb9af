"""`wastewatch.yaml`: validation messages name file, line and key; paths resolve against the file."""

from __future__ import annotations

import os
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from pipelines.config import DEFAULT_TAGS, STARTER_CONFIG, ConfigError, load_config, parse_config
from pipelines.sources.options import DcgmOptions, S3ListingOptions
from pipelines.sources.registry import kind_names, kinds_of
from rules import get_rule
from tests.helpers.config import write_config

# name -> (wastewatch.yaml body, substrings the error must contain; "{f}" is the config file's path)
BAD_CONFIGS: dict[str, tuple[str, list[str]]] = {
    "unknown top-level key": (
        """
        warehouse: w.duckdb
        reportsdir: out
        """,
        ["{f}:2: reportsdir: unknown key"],
    ),
    "unknown key inside a source": (
        """
        sources:
          - name: focus
            kind: focus
            uri: landing/
            url: http://127.0.0.1:9000
        """,
        ["{f}:5: sources[0].url: unknown key"],
    ),
    "unknown key inside prices": (
        """
        prices:
          storage_gb_month: {STANDARD: 0.023}
          gpu_hours: {H100: 2.5}
        """,
        ["{f}:3: prices.gpu_hours: unknown key"],
    ),
    "price that is not a number": (
        """
        prices:
          storage_gb_month:
            STANDARD: cheap
        """,
        ["{f}:3: prices.storage_gb_month.STANDARD:", "decimal"],
    ),
    "sources is not a list": (
        """
        warehouse: w.duckdb
        sources: 5
        """,
        ["{f}:2: sources:", "valid list"],
    ),
    "misspelt source kind": (
        """
        sources:
          - {name: a, kind: focus, uri: x/}
          - name: b
            kind: focuss
            uri: y/
        """,
        ["{f}:4: sources[1].kind: got 'focuss', expected one of", "'focus'", "'nvidia_smi'"],
    ),
    "source without uri": (
        """
        sources:
          - name: a
            kind: focus
        """,
        ["{f}:2: sources[0].uri: required key is missing"],
    ),
    "source name with a space": (
        """
        sources:
          - {name: "my source", kind: focus, uri: x/}
        """,
        ["{f}:2: sources[0].name:", "pattern"],
    ),
    "enabled that is not a boolean": (
        """
        sources:
          - name: a
            kind: focus
            uri: x/
            enabled: perhaps
        """,
        ["{f}:5: sources[0].enabled:", "boolean"],
    ),
    "budget per region": (
        """
        currency: USD
        budgets:
          team: {nlp: 40000}
          region: {eu-west-1: 5000}
        """,
        ["{f}:4: budgets.region: unknown key"],
    ),
    "budget that is not a number": (
        """
        budgets:
          team:
            nlp: lots
        """,
        ["{f}:3: budgets.team.nlp:", "decimal"],
    ),
    "unknown canonical tag": (
        """
        tags:
          team: [team]
          colour: [color]
        """,
        ["{f}:3: tags.colour: got 'colour'", "'job_id'"],
    ),
    "duplicate source names": (
        """
        sources:
          - {name: focus, kind: focus, uri: a/}
          - {name: smi, kind: nvidia_smi, uri: b/}
          - {name: focus, kind: aws_cur2, uri: c/}
        """,
        ["{f}:4: sources[2].name: two sources are named 'focus' (sources[0] too)"],
    ),
    "unknown rule id": (
        """
        rules:
          GPU001: {max_util_pct: 3}
          GPU999: {max_util_pct: 3}
        """,
        ["{f}:3: rules.GPU999: unknown rule 'GPU999'", "GPU001"],
    ),
    "unknown rule parameter": (
        """
        rules:
          GPU001:
            max_util_pct: 3
            max_idle_pct: 4
        """,
        ["{f}:4: rules.GPU001.max_idle_pct: unknown key"],
    ),
    "rule parameter above its range": (
        """
        rules:
          GPU001:
            max_util_pct: 500
        """,
        ["{f}:3: rules.GPU001.max_util_pct:", "less than or equal to 100"],
    ),
    "rule parameter below its range": (
        """
        rules:
          GPU001: {min_idle_hours: 0}
        """,
        ["{f}:2: rules.GPU001.min_idle_hours:", "greater than 0"],
    ),
    "rule parameter of the wrong type": (
        """
        rules:
          GPU001:
            min_coverage: most
        """,
        ["{f}:3: rules.GPU001.min_coverage:", "number"],
    ),
    "rule configured twice under two of its names": (
        """
        rules:
          GPU001: {max_util_pct: 3}
          idle-gpu-instance: {max_util_pct: 4}
        """,
        ["{f}:3: rules.idle-gpu-instance: GPU001 is already configured as rules.GPU001"],
    ),
    "history_start that is not a date": (
        """
        history_start: last year
        """,
        ["{f}:1: history_start:", "date"],
    ),
    "history_start that is not a real day": (
        """
        currency: USD
        history_start: 2020-13-01
        """,
        ["{f}:2 ('2020-13-01'): not a valid date: month must be in 1..12"],
    ),
    "metrics_csv metric that is not a name": (
        """
        sources:
          - {name: trace, kind: metrics_csv, uri: t/, options: {metric: ""}}
        """,
        ["{f}:2: sources[0].options.metric:", "at least 1 character"],
    ),
    "invalid YAML (bad indentation)": (
        """
        sources:
          - name: a
           kind: focus
        """,
        ["{f}:3: not valid YAML"],
    ),
    "invalid YAML (unclosed bracket)": (
        """
        warehouse: w.duckdb
        sources: [
        """,
        ["{f}:3: not valid YAML"],
    ),
    "top level is a list": (
        """
        - warehouse: w.duckdb
        """,
        ["{f}:1: the top level must be a mapping of keys, got list"],
    ),
    "pricing entry with both cost models": (
        """
        pricing:
          - match: {host: "dgx-*"}
            contract: {per_gpu_hour: 2.10, currency: USD}
            owned: {purchase_price: 1000, currency: USD, life_years: 4, gpus: 8, pue: 1.3, kwh_price: 0.1}
        """,
        ["{f}:2: pricing[0]: give exactly one of contract: or owned:"],
    ),
    "pricing entry without a cost model": (
        """
        pricing:
          - match: {host: "dgx-*"}
        """,
        ["{f}:2: pricing[0]: give exactly one of contract: or owned:"],
    ),
    "contract with two rates": (
        """
        pricing:
          - match: {host: "*"}
            contract: {per_gpu_hour: 2.10, per_node_hour: 16, currency: USD}
        """,
        ["{f}:3: pricing[0].contract: give exactly one of per_gpu_hour or per_node_hour"],
    ),
    "contract ending before it starts": (
        """
        pricing:
          - match: {cluster: rented}
            contract:
              per_node_hour: 16
              currency: USD
              valid_from: 2026-03-01
              valid_to: 2026-02-01
        """,
        ["{f}:3: pricing[0].contract: valid_to 2026-02-01 is before valid_from 2026-03-01"],
    ),
    "owned pue below one": (
        """
        pricing:
          - match: {gpu_model: H100}
            owned:
              purchase_price: 320000
              currency: USD
              life_years: 4
              gpus: 8
              pue: 0.9
              kwh_price: 0.11
        """,
        ["{f}:8: pricing[0].owned.pue:", "greater than or equal to 1"],
    ),
    "owned without a life": (
        """
        pricing:
          - match: {host: "dgx-*"}
            owned: {purchase_price: 320000, currency: USD, gpus: 8, pue: 1.3, kwh_price: 0.11}
        """,
        ["{f}:3: pricing[0].owned.life_years: required key is missing"],
    ),
    "owned residual above the price": (
        """
        pricing:
          - match: {host: "dgx-*"}
            owned: {purchase_price: 1000, residual_value: 1000, currency: USD, life_years: 4, gpus: 8,
                    pue: 1.3, kwh_price: 0.11}
        """,
        ["{f}:3: pricing[0].owned: residual_value 1000 must be below purchase_price 1000"],
    ),
    "misspelt match key": (
        """
        pricing:
          - match: {hostname: "dgx-*"}
            contract: {per_gpu_hour: 2.10, currency: USD}
        """,
        ["{f}:2: pricing[0].match.hostname: unknown key"],
    ),
    "empty match": (
        """
        pricing:
          - match: {}
            contract: {per_gpu_hour: 2.10, currency: USD}
        """,
        ["{f}:2: pricing[0].match: match needs at least one of host, gpu_model, cluster, tag"],
    ),
    "currency in lower case": (
        """
        pricing:
          - match: {host: "*"}
            contract: {per_gpu_hour: 2.10, currency: usd}
        """,
        ["{f}:3: pricing[0].contract.currency:", "[A-Z]{{3}}"],
    ),
}


def test_pricing_section_of_the_issue_parses(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """
        pricing:
          - match: {host: "dgx-*"}                 # glob on host; or gpu_model, cluster, tag: {team: nlp}
            owned: {purchase_price: 320000, currency: USD, life_years: 4, gpus: 8,
                    pue: 1.3, kwh_price: 0.11, facility_per_month: 900}
          - match: {host: "*"}
            contract: {per_gpu_hour: 2.10, currency: USD}
          - match: {tag: {team: nlp}, cluster: "rented-*"}
            contract: {per_node_hour: 16.5, currency: EUR, valid_from: 2026-01-01, valid_to: 2026-12-31}
        """,
    )
    owned, contract, tagged = load_config(path).pricing
    assert owned.basis == "owned" and owned.owned is not None
    assert owned.owned.purchase_price == Decimal("320000") and owned.owned.gpus == 8
    assert owned.owned.host_overhead == Decimal("1.5") and owned.owned.residual_value == 0
    assert contract.basis == "contract" and contract.contract is not None
    assert contract.contract.per_gpu_hour == Decimal("2.10") and contract.contract.valid_to is None
    assert tagged.match.tag == {"team": "nlp"} and tagged.contract is not None
    assert str(tagged.contract.valid_to) == "2026-12-31"


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_bad_config_names_file_line_and_key(case: str, tmp_path: Path) -> None:
    body, expected = BAD_CONFIGS[case]
    path = write_config(tmp_path, body)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    message = str(err.value)
    for part in expected:
        assert part.format(f=path) in message, f"{part.format(f=path)!r} not in {message!r}"


def test_every_problem_in_a_file_is_reported_at_once(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """
        warehouse: w.duckdb
        colour: blue
        sources:
          - {name: a, kind: focuss, uri: x/}
          - {name: a, kind: focus, uri: y/}
        """,
    )
    with pytest.raises(ConfigError) as err:
        load_config(path)
    lines = str(err.value).splitlines()
    assert f"{path}:2: colour: unknown key" in lines
    assert any(line.startswith(f"{path}:4: sources[0].kind: got 'focuss'") for line in lines)
    assert any(line.startswith(f"{path}:5: sources[1].name: two sources are named 'a'") for line in lines)
    assert len(lines) == 3


def test_rule_problems_are_all_reported(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """
        rules:
          NOPE: {}
          GPU001:
            max_util_pct: -1
            colour: red
        """,
    )
    with pytest.raises(ConfigError) as err:
        load_config(path)
    lines = str(err.value).splitlines()
    assert [line.split(": ")[0:2] for line in lines] == [
        [f"{path}:2", "rules.NOPE"],
        [f"{path}:4", "rules.GPU001.max_util_pct"],
        [f"{path}:5", "rules.GPU001.colour"],
    ]


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope" / "wastewatch.yaml"
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value).startswith(f"{path}: configuration file not found")
    assert "wastewatch init" in str(err.value)


def test_default_path_is_wastewatch_yaml_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"^wastewatch\.yaml: configuration file not found"):
        load_config()
    write_config(tmp_path, "currency: EUR\n")
    config = load_config()
    assert config.currency == "EUR"
    assert config.path == tmp_path.resolve() / "wastewatch.yaml"


def test_a_folder_is_not_a_config(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "conf")
    assert str(err.value) == f"{tmp_path / 'conf'}: is a folder, expected a wastewatch.yaml file"


def test_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "wastewatch.yaml"
    path.write_bytes(b"currency: \xff\xfe\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value).startswith(f"{path}: cannot read configuration")


def test_empty_file_means_defaults(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, "# nothing yet\n"))
    assert config.sources == [] and config.rules == {} and config.budgets == {}
    assert config.currency == "USD"
    assert config.tags == DEFAULT_TAGS
    assert config.warehouse_path == tmp_path.resolve() / "warehouse" / "wastewatch.duckdb"
    assert config.published_path == tmp_path.resolve() / "warehouse" / "wastewatch.published.duckdb"
    assert config.reports_path == tmp_path.resolve() / "reports"


def test_relative_paths_resolve_against_the_config_folder_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf_dir = tmp_path / "etc" / "ww"
    conf_dir.mkdir(parents=True)
    absolute = tmp_path / "abs" / "fixed.duckdb"
    write_config(
        conf_dir,
        f"""
        warehouse: data/ww.duckdb
        reports_dir: ../reports
        sources:
          - {{name: local, kind: focus, uri: landing/billing/}}
          - {{name: one-file, kind: hosts_csv, uri: inventory/hosts.csv}}
          - {{name: bucket, kind: aws_cur2, uri: "s3://acme-billing/cur2/", endpoint_url: "http://127.0.0.1:9000"}}
          - {{name: pinned, kind: nvidia_smi, uri: "{absolute.parent}"}}
        """,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = load_config(Path("..") / "etc" / "ww" / "wastewatch.yaml")
    base = conf_dir.resolve()
    assert config.path == base / "wastewatch.yaml"
    assert config.warehouse_path == base / "data" / "ww.duckdb"
    assert config.published_path == base / "data" / "ww.published.duckdb"
    assert config.reports_path.resolve() == (tmp_path / "etc" / "reports").resolve()
    by_name = {s.name: s for s in config.sources}
    assert config.source_location(by_name["local"]) == str(base / "landing" / "billing")
    assert config.source_location(by_name["one-file"]) == str(base / "inventory" / "hosts.csv")
    assert config.source_location(by_name["bucket"]) == "s3://acme-billing/cur2/"
    assert by_name["bucket"].is_s3 and not by_name["local"].is_s3
    assert by_name["bucket"].endpoint_url == "http://127.0.0.1:9000"
    assert config.source_location(by_name["pinned"]) == str(absolute.parent)
    # nothing was resolved against the working directory
    assert not any(str(p).startswith(str(elsewhere)) for p in (config.warehouse_path, config.reports_path))


def test_absolute_and_home_paths_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    config = load_config(
        write_config(
            tmp_path,
            f"""
            warehouse: ~/ww/w.duckdb
            reports_dir: {tmp_path / "out"}
            """,
        )
    )
    assert config.warehouse_path == tmp_path / "home" / "ww" / "w.duckdb"
    assert config.reports_path == tmp_path / "out"


def test_tag_aliases_override_per_key_and_keep_the_other_defaults(tmp_path: Path) -> None:
    config = load_config(
        write_config(
            tmp_path,
            """
            tags:
              team: [squad, "user:squad"]
              job_id: [training_run]
            """,
        )
    )
    assert config.tags["team"] == ["squad", "user:squad"]
    assert config.tags["job_id"] == ["training_run"]
    for key in ("project", "owner", "host"):
        assert config.tags[key] == DEFAULT_TAGS[key]
    assert set(config.tags) == set(DEFAULT_TAGS)
    # the module default is not modified by a config's overrides
    assert DEFAULT_TAGS["team"] == ["team", "Team", "user:team", "user_team"]


def test_history_start_is_a_date_and_unset_by_default(tmp_path: Path) -> None:
    assert load_config(write_config(tmp_path, "currency: USD\n")).history_start is None
    config = load_config(write_config(tmp_path, "history_start: 2020-03-04\n"))
    assert config.history_start == date(2020, 3, 4)


def test_values_are_typed(tmp_path: Path) -> None:
    config = load_config(
        write_config(
            tmp_path,
            """
            currency: EUR
            sources:
              - {name: focus, kind: focus, uri: a/}
              - {name: old, kind: focus, uri: b/, enabled: false}
              - {name: smi, kind: nvidia_smi, uri: c/, options: {timezone: Europe/Berlin}}
            budgets:
              team: {nlp: 40000, vision: "15000.50"}
              project: {llm-pretrain: 100000}
            prices:
              storage_gb_month: {STANDARD: "0.023"}
              gpu_hour: {H100: "2.49"}
            checkpoints: ["s3://acme-ckpt/{project}/{run_id}/**"]
            datasets: ["s3://acme-data/datasets/"]
            """,
        )
    )
    assert config.currency == "EUR"
    assert config.budgets == {
        "team": {"nlp": Decimal("40000"), "vision": Decimal("15000.50")},
        "project": {"llm-pretrain": Decimal("100000")},
    }
    assert config.prices.storage_gb_month == {"STANDARD": Decimal("0.023")}
    assert config.prices.gpu_hour == {"H100": Decimal("2.49")}
    assert config.checkpoints == ["s3://acme-ckpt/{project}/{run_id}/**"]
    assert config.datasets == ["s3://acme-data/datasets/"]
    # disabled sources are skipped by kind lookups
    assert [s.name for s in config.sources_of(kinds_of("billing"))] == ["focus"]
    assert [s.name for s in config.sources_of(kinds_of("telemetry"))] == ["smi"]
    assert config.sources[2].options == {"timezone": "Europe/Berlin"}


def test_rule_overrides_are_kept_under_the_rule_id(tmp_path: Path) -> None:
    config = load_config(
        write_config(
            tmp_path,
            """
            rules:
              GPU001: {max_util_pct: 3, min_idle_hours: 4}
            """,
        )
    )
    assert config.rule_overrides("GPU001") == {"max_util_pct": 3, "min_idle_hours": 4}
    assert config.rule_overrides("GPU002") == {}
    params = get_rule("GPU001").make_params(config.rule_overrides("GPU001"))
    assert (params.max_util_pct, params.min_idle_hours, params.min_coverage) == (3.0, 4, 0.5)


@pytest.mark.parametrize("key", ["gpu001", "idle-gpu-instance"])
def test_a_rule_named_by_lower_case_id_or_name_gets_its_overrides(key: str, tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, f"rules:\n  {key}: {{max_util_pct: 2.5}}\n"))
    # the evaluation and `rules show` look overrides up by the rule's id
    assert config.rule_overrides("GPU001") == {"max_util_pct": 2.5}
    assert config.rules == {"GPU001": {"max_util_pct": 2.5}}


def test_starter_config_parses(tmp_path: Path) -> None:
    config = parse_config(STARTER_CONFIG, tmp_path / "wastewatch.yaml")
    assert [(s.name, s.kind) for s in config.sources] == [
        ("focus-main", "focus"),
        ("gpu-nodes", "nvidia_smi"),
    ]
    assert config.source_location(config.sources[0]) == str(tmp_path / "landing" / "billing" / "focus")
    assert config.sources[1].options == {"timezone": "UTC"}
    assert config.warehouse_path == tmp_path / "warehouse" / "wastewatch.duckdb"
    assert config.reports_path == tmp_path / "reports"
    assert config.prices.storage_gb_month == {
        "STANDARD": Decimal("0.023"),
        "STANDARD_IA": Decimal("0.0125"),
        "GLACIER_IR": Decimal("0.004"),
    }
    assert config.tags["team"] == ["team", "Team", "user:team", "user_team"]
    assert config.tags["project"] == ["project", "user:project"]


def test_starter_config_commented_examples_are_valid_when_uncommented(tmp_path: Path) -> None:
    text = STARTER_CONFIG
    for key in ("checkpoints: []", "datasets: []", "rules: {}", "advice: {}", "budgets: {}", "pricing: []"):
        assert key in text
        text = text.replace(key, key.split(":")[0] + ":")
    uncommented = "\n".join(line[1:] if line.startswith("#  ") else line for line in text.splitlines())
    config = parse_config(uncommented, tmp_path / "wastewatch.yaml")
    assert [s.name for s in config.sources] == ["focus-main", "gpu-nodes", "cur2-prod"]
    assert config.sources[2].endpoint_url == "http://127.0.0.1:9000"
    assert config.rule_overrides("GPU001") == {"max_util_pct": 5, "min_idle_hours": 2}
    assert config.advice["commitment"]["discounts"] == {"p4d": 0.3}
    assert config.advice["spot"]["restart_minutes"] == 15
    assert config.budgets == {
        "team": {"nlp": Decimal(40000), "vision": Decimal(15000)},
        "storage_growth": {"s3://acme-ckpt/": {"percent": 10.0}, "team:vision": {"gib": 500.0}},
    }
    assert config.checkpoints == ["s3://acme-ckpt/{project}/{run_id}/**"]
    assert config.datasets == ["s3://acme-data/datasets/"]
    assert [e.basis for e in config.pricing] == ["owned", "contract"]


def test_written_starter_config_loads_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "proj" / "wastewatch.yaml"
    path.parent.mkdir()
    path.write_text(STARTER_CONFIG, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    config = load_config(os.path.join("proj", "wastewatch.yaml"))
    assert config.warehouse_path == (tmp_path / "proj").resolve() / "warehouse" / "wastewatch.duckdb"


def test_config_is_immutable(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, "currency: USD\n"))
    with pytest.raises(ValueError):
        config.currency = "EUR"  # type: ignore[misc]


@pytest.mark.parametrize("kind", kind_names())
def test_an_unknown_option_of_any_kind_is_a_config_error(tmp_path: Path, kind: str) -> None:
    """Every kind's options come from its registry model: a misspelt key stops the run at config load."""
    uri = "http://127.0.0.1:9090" if kind == "prometheus" else "x/"  # an HTTP API's uri is its URL
    path = write_config(
        tmp_path, f"sources:\n  - {{name: s, kind: {kind}, uri: '{uri}', options: {{colour: blue}}}}\n"
    )
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value) == f"{path}:2: sources[0].options.colour: unknown key"


def test_registered_options_load_with_their_defaults(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """
        sources:
          - {name: s, kind: s3_listing, uri: "s3://b/", options: {page_size: 2}}
          - {name: d, kind: dcgm, uri: d/, options: {file_time: mtime}}
        """,
    )
    config = load_config(path)
    listing = config.sources[0].options_as(S3ListingOptions)
    assert (listing.page_size, listing.workers, listing.checksums) == (2, 16, False)
    assert config.sources[1].options_as(DcgmOptions).file_time == "mtime"
    with pytest.raises(TypeError, match="kind 'dcgm' has DcgmOptions options, not S3ListingOptions"):
        config.sources[1].options_as(S3ListingOptions)
