"""`checkpoints:` patterns and `datasets:` roots: parsing, their errors, and the marts' SQL matching agreeing with
the documented semantics (pipelines.ingest.storage_patterns.PathPattern.matches) on hundreds of generated paths."""

from __future__ import annotations

import random
from datetime import datetime
from pathlib import Path

import pytest

from pipelines.errors import PatternError
from pipelines.ingest.storage_patterns import parse_pattern, sync_config
from pipelines.transform.build import build_mart
from tests.helpers.empty_warehouse import new_warehouse
from tests.helpers.storage import project, table


def test_a_pattern_splits_into_a_literal_prefix_and_segments() -> None:
    p = parse_pattern("s3://acme-ckpt/{project}/run-{run_id}/**", "checkpoint")
    assert (p.store, p.prefix, p.open_ended) == ("s3", "s3://acme-ckpt/", True)
    assert [(s.name, s.lit_prefix, s.lit_suffix) for s in p.segments] == [
        ("project", "", ""),
        ("run_id", "run-", ""),
    ]
    assert p.index == {"project": 1, "run_id": 2}
    assert p.matches("s3://acme-ckpt/llm/run-7/step_1/x.pt") == {"project": "llm", "run_id": "7"}
    assert p.matches("s3://acme-ckpt/llm/7/step_1/x.pt") is None  # the literal `run-` is missing
    assert p.matches("s3://acme-ckpt/llm/run-7") is None  # ** needs something below the run
    d = parse_pattern("s3://acme-data/datasets/", "dataset")
    assert (d.prefix, d.index) == ("s3://acme-data/datasets/", {"dataset": 1})
    assert d.matches("s3://acme-data/datasets/imagenet/train/0.tar") == {"dataset": "imagenet"}
    wild = parse_pattern("s3://*/datasets/", "dataset")
    assert wild.prefix == "s3://" and wild.matches("s3://any-bucket/datasets/c4/x") == {"dataset": "c4"}
    fs = parse_pattern("file:///lustre/ckpt/{run_id}/", "checkpoint")
    assert (fs.store, fs.prefix) == ("fs", "/lustre/ckpt/")
    closed = parse_pattern("s3://b/{run_id}/ckpt-{step}/loss{loss}.pt", "checkpoint")
    assert not closed.open_ended
    assert closed.matches("s3://b/r1/ckpt-100/loss0.25.pt") == {"run_id": "r1", "step": "100", "loss": "0.25"}


@pytest.mark.parametrize(
    ("text", "kind", "problem"),
    [
        ("s3://acme-ckpt/{project}/**", "checkpoint", "needs {run_id}"),
        ("s3://b/{run_id}/{run_id}/**", "checkpoint", "{run_id} appears twice"),
        ("s3://b/{run}/**", "checkpoint", "unknown placeholder {run}"),
        ("s3://b/{run_id}-{step}/**", "checkpoint", "more than one placeholder or '*'"),
        ("s3://b/**/{run_id}/x", "checkpoint", "'**' may only be the last segment"),
        ("s3://b//{run_id}/", "checkpoint", "empty path segment"),
        ("s3://b/{run_id/", "checkpoint", "unbalanced braces"),
        ("s3://b/{run_id}/{loss}/{score}/", "checkpoint", "use {loss} or {score}, not both"),
        ("s3://b/{project}/", "dataset", "a dataset root is a folder"),
        ("relative/path/{run_id}/", "checkpoint", "neither s3://bucket/... nor a file-system path"),
    ],
)
def test_bad_patterns_say_what_is_wrong(text: str, kind: str, problem: str) -> None:
    with pytest.raises(PatternError, match=__import__("re").escape(problem)):
        parse_pattern(text, kind)


PATTERNS = [
    "s3://ck/{project}/{run_id}/**",
    "s3://ck/shared/run-{run_id}/**",  # shadowed by the first pattern, which matches shared/... too
    "s3://*/exp/{run_id}/ckpt-{step}/",
    "s3://ck2/{run_id}/step{step}/loss{loss}.pt",
    "/lustre/ck/{project}/{run_id}/**",
]
ROOTS = ["s3://ck/datasets/", "s3://data/", "s3://*/shared-data/", "/lustre/datasets/"]
SEGMENTS = ["ck", "ck2", "data", "datasets", "exp", "shared", "shared-data", "run-1", "r2", "ckpt-10", "ckpt-",
            "step5", "loss0.5.pt", "lossx.pt", "a", "b.tar"]  # fmt: skip


def _paths(rng: random.Random, n: int) -> list[tuple[str, str, str]]:
    """(store, bucket, key) of random paths built from segments that hit the patterns' edges."""
    out = []
    for _ in range(n):
        depth = rng.randint(1, 5)
        parts = [rng.choice(SEGMENTS) for _ in range(depth)]
        if rng.random() < 0.2:
            out.append(("fs", "/lustre", "/".join([rng.choice(["ck", "datasets"]), *parts])))
        else:
            out.append(("s3", rng.choice(["ck", "ck2", "data", "other"]), "/".join(parts)))
    return sorted(set(out))


def test_the_marts_match_paths_exactly_as_the_patterns_are_documented(tmp_path: Path) -> None:
    body = "checkpoints:\n" + "".join(f'  - "{p}"\n' for p in PATTERNS)
    body += "datasets:\n" + "".join(f'  - "{r}"\n' for r in ROOTS)
    config = project(tmp_path, "  []\n", body)
    con = new_warehouse(config.warehouse_path)
    sync_config(con, config, datetime(2026, 11, 28), "test")
    paths = _paths(random.Random(7), 600)
    for store, bucket in sorted({(st, b) for st, b, _ in paths}):
        con.execute(
            "insert into storage_snapshots values ($b, 't', 'test', $s, $b, '2026-11-28', '2026-11-28', null, "
            "$b, 't', 0, '2026-11-28')",
            {"s": store, "b": bucket},
        )
    for _, bucket, key in paths:
        con.execute(
            "insert into storage_objects (inventory_date, bucket, key, size_bytes, x_file_id) "
            "values ('2026-11-28', $b, $k, 1, $b)",
            {"b": bucket, "k": key},
        )
    build_mart(con, "storage_objects_current")
    got = {
        (r["store"], r["bucket"], r["key"]): r
        for r in table(
            con,
            "select store, bucket, key, role, ckpt_project, run_id, run_prefix, step, metric, dataset "
            "from storage_objects_current",
        )
    }
    checkpoints = [parse_pattern(p, "checkpoint") for p in PATTERNS]
    roots = [parse_pattern(r, "dataset") for r in ROOTS]
    hits = {"checkpoint": 0, "dataset": 0}
    for store, bucket, key in paths:
        uri = (f"s3://{bucket}/" if store == "s3" else f"{bucket}/") + key
        row = got[(store, bucket, key)]
        ck = next(
            ((p, v) for p in checkpoints if p.store == store and (v := p.matches(uri)) is not None), None
        )
        ds = next(((p, v) for p in roots if p.store == store and (v := p.matches(uri)) is not None), None)
        if ck:
            p, v = ck
            hits["checkpoint"] += 1
            assert row["role"] == "checkpoint", uri
            assert (row["run_id"], row["ckpt_project"]) == (v["run_id"], v.get("project")), uri
            assert (
                row["run_prefix"]
                == p.prefix + "/".join(uri[len(p.prefix) :].split("/")[: p.index["run_id"]]) + "/"
            )
            if "step" in v:
                assert row["step"] == int(v["step"]), uri
            if "loss" in v:
                expected = None
                try:
                    expected = float(v["loss"])
                except ValueError:
                    pass
                assert row["metric"] == expected, uri
        elif ds:
            p, v = ds
            hits["dataset"] += 1
            assert row["role"] == "dataset", uri
            assert (
                row["dataset"]
                == p.prefix + "/".join(uri[len(p.prefix) :].split("/")[: p.index["dataset"]]) + "/"
            )
        else:
            assert row["role"] is None, uri
    assert hits["checkpoint"] > 50 and hits["dataset"] > 50  # the generated paths exercise both
    con.close()
