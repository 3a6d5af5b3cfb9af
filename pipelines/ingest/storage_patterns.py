"""Checkpoint patterns and dataset roots from the config, and the fallback storage prices.

Checkpoint patterns (`checkpoints:`) name where checkpoints live and how a path names its run:

    s3://acme-ckpt/{project}/{run_id}/**          s3://<bucket>/<project>/<run>/<anything below>
    /lustre/ckpt/{project}/run-{run_id}/**        a file-system root; literal text around a placeholder
    s3://ml/{project}/{run_id}/step_{step}/**      the step from the path (else found in the rest of it)
    s3://ml/{run_id}/step-{step}/loss-{loss}/**    a metric: {loss} lower is better, {score} higher is better

Placeholders: {project}, {run_id} (required), {step}, {loss} or {score}; `*` matches within one path segment,
`**` (last only) any deeper path; a pattern ending in `/` means `/**`. One placeholder or `*` per segment.
Dataset roots (`datasets:`) are folders whose sub-folders are datasets: `s3://acme-data/datasets/` makes
`s3://acme-data/datasets/imagenet/` one dataset; `*` segments are allowed (`s3://*/datasets/`).

The storage readers write the parsed patterns (`storage_patterns`) and the `prices: storage_gb_month:` fallbacks
(`storage_price_list`) into the warehouse on every ingest; the storage marts match paths against them, so a
config change applies at the next ingest without re-reading any inventory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb

from pipelines.config import Config
from pipelines.errors import PatternError, RejectedFile

PLACEHOLDERS = ("project", "run_id", "step", "loss", "score")
_TOKEN = re.compile(r"\{([A-Za-z_]+)\}|\*")


@dataclass(frozen=True)
class Segment:
    name: str  # placeholder name, '*' for a wildcard, '' for a literal segment
    lit_prefix: str
    lit_suffix: str

    @property
    def exact(self) -> bool:
        return self.name == ""

    def as_row(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "lit_prefix": self.lit_prefix,
            "lit_suffix": self.lit_suffix,
            "exact": self.exact,
        }


@dataclass(frozen=True)
class PathPattern:
    kind: str  # checkpoint | dataset
    text: str
    store: str  # s3 | fs
    prefix: str
    segments: tuple[Segment, ...]
    open_ended: bool
    index: dict[str, int] = field(default_factory=dict)  # placeholder -> 1-based segment after prefix

    def matches(self, uri: str) -> dict[str, str] | None:
        """The placeholder values for `uri`, or None (the same logic the marts run in SQL; used in tests)."""
        if not uri.startswith(self.prefix):
            return None
        parts = uri[len(self.prefix) :].split("/")
        if len(parts) < len(self.segments) + (1 if self.open_ended else 0):
            return None
        if not self.open_ended and len(parts) != len(self.segments):
            return None
        values: dict[str, str] = {}
        for seg, part in zip(self.segments, parts, strict=False):
            if seg.exact:
                if part != seg.lit_prefix:
                    return None
                continue
            core = len(part) - len(seg.lit_prefix) - len(seg.lit_suffix)
            if core < 1 or not part.startswith(seg.lit_prefix) or not part.endswith(seg.lit_suffix):
                return None
            if seg.name != "*":
                values[seg.name] = part[len(seg.lit_prefix) : len(part) - len(seg.lit_suffix)]
        return values


def normalise_location(text: str, config: Config | None = None) -> tuple[str, str]:
    """(store, location) of a pattern or uri: `s3://...` stays; a path (or file://) becomes absolute."""
    text = text.strip()
    if text.startswith("s3://"):
        return "s3", text
    if text.startswith("file://"):
        text = text[len("file://") :]
    if config is not None and not text.startswith("/"):
        text = str(config.resolve(text))
    if not text.startswith("/"):
        raise PatternError(f"{text!r} is neither s3://bucket/... nor a file-system path")
    return "fs", text


def _segment(text: str, pattern: str) -> Segment:
    tokens = list(_TOKEN.finditer(text))
    if not tokens:
        if "{" in text or "}" in text:
            raise PatternError(f"{pattern!r}: unbalanced braces in segment {text!r}")
        return Segment("", text, "")
    if len(tokens) > 1:
        raise PatternError(f"{pattern!r}: segment {text!r} has more than one placeholder or '*'")
    tok = tokens[0]
    pre, post = text[: tok.start()], text[tok.end() :]
    if "{" in pre + post or "}" in pre + post:
        raise PatternError(f"{pattern!r}: unbalanced braces in segment {text!r}")
    return Segment(tok.group(1) or "*", pre, post)


def parse_pattern(text: str, kind: str, config: Config | None = None) -> PathPattern:
    """Parse a `checkpoints:` pattern (kind checkpoint) or a `datasets:` root (kind dataset)."""
    if not isinstance(text, str) or not text.strip():
        raise PatternError("empty pattern")
    store, location = normalise_location(text, config)
    head, body = ("s3://", location[len("s3://") :]) if store == "s3" else ("/", location.lstrip("/"))
    if kind == "dataset":
        if "{" in body:
            raise PatternError(f"{text!r}: a dataset root is a folder; placeholders belong in checkpoints:")
        body = body.rstrip("/") + "/{dataset}/**"
    elif body.endswith("/") or not body:
        body = body + "**"
    raw = body.split("/")
    if any(s == "" for s in raw):
        raise PatternError(f"{text!r}: empty path segment ('//')")
    open_ended = raw[-1] == "**"
    if open_ended:
        raw = raw[:-1]
    if "**" in "/".join(raw):
        raise PatternError(f"{text!r}: '**' may only be the last segment")
    segments = [_segment(s, text) for s in raw]
    # the literal prefix: leading literal segments (a bucket, fixed folders)
    n_literal = 0
    while n_literal < len(segments) and segments[n_literal].exact:
        n_literal += 1
    if n_literal == 0 and store == "s3":
        prefix = head
    else:
        prefix = head + "".join(s.lit_prefix + "/" for s in segments[:n_literal])
    rest = tuple(segments[n_literal:])
    index: dict[str, int] = {}
    allowed = ("dataset",) if kind == "dataset" else PLACEHOLDERS
    for i, seg in enumerate(rest, start=1):
        if seg.name in ("", "*"):
            continue
        if seg.name not in allowed:
            raise PatternError(
                f"{text!r}: unknown placeholder {{{seg.name}}}; use {', '.join('{' + p + '}' for p in allowed)}"
            )
        if seg.name in index:
            raise PatternError(f"{text!r}: {{{seg.name}}} appears twice")
        index[seg.name] = i
    if kind == "checkpoint":
        if "run_id" not in index:
            raise PatternError(f"{text!r}: a checkpoint pattern needs {{run_id}} (how a path names its run)")
        if "loss" in index and "score" in index:
            raise PatternError(f"{text!r}: use {{loss}} or {{score}}, not both")
    if store == "s3" and not prefix.rstrip("/").removeprefix("s3://") and not rest:
        raise PatternError(f"{text!r}: names no bucket")
    return PathPattern(kind, text, store, prefix, rest, open_ended, index)


def parse_config_patterns(config: Config) -> list[PathPattern]:
    """Every `checkpoints:` pattern then every `datasets:` root; errors name the config file and the key."""
    out: list[PathPattern] = []
    problems = []
    where = str(config.path) if config.path else "wastewatch.yaml"
    for key, kind in (("checkpoints", "checkpoint"), ("datasets", "dataset")):
        for i, text in enumerate(getattr(config, key)):
            try:
                out.append(parse_pattern(text, kind, config))
            except PatternError as exc:
                problems.append(f"{where}: {key}[{i}]: {exc}")
    if problems:
        raise PatternError("; ".join(problems))
    return out


def sync_config(con: duckdb.DuckDBPyConnection, config: Config, now: datetime, source: str) -> None:
    """Write the parsed patterns and the fallback prices into the warehouse (inside the caller's transaction).

    Raises RejectedFile (naming `source`) when a pattern is invalid, so the source is rejected, not skipped.
    """
    try:
        patterns = parse_config_patterns(config)
    except PatternError as exc:
        raise RejectedFile(source, f"cannot use the storage patterns: {exc}") from None
    con.execute("delete from storage_patterns")
    for position, p in enumerate(patterns, start=1):
        con.execute(
            "insert into storage_patterns values ($kind, $pos, $text, $store, $prefix, $segments, $open, "
            "$project, $run, $step, $metric, $metric_name, $dataset, $now)",
            {
                "kind": p.kind,
                "pos": position,
                "text": p.text,
                "store": p.store,
                "prefix": p.prefix,
                "segments": [s.as_row() for s in p.segments],
                "open": p.open_ended,
                "project": p.index.get("project"),
                "run": p.index.get("run_id"),
                "step": p.index.get("step"),
                "metric": p.index.get("loss", p.index.get("score")),
                "metric_name": "loss" if "loss" in p.index else ("score" if "score" in p.index else None),
                "dataset": p.index.get("dataset"),
                "now": now,
            },
        )
    con.execute("delete from storage_price_list")
    where = f"{config.path or 'wastewatch.yaml'}: prices.storage_gb_month"
    for storage_class, price in sorted(config.prices.storage_gb_month.items()):
        con.execute(
            "insert into storage_price_list values ($c, $p, $cur, $src, $now)",
            {
                "c": storage_class.strip().upper(),
                "p": price,
                "cur": config.currency,
                "src": f"{where}.{storage_class}",
                "now": now,
            },
        )
