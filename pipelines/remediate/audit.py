"""remediation_log as a keyed chain: each row carries an HMAC over its content and the previous row's HMAC.

An unkeyed hash chain could be recomputed by whoever writes the warehouse; an HMAC under the approval key
(pipelines/remediate/keys.py), which lives outside it, cannot. The chain's first row (`chain_start`)
records how many rows were written before signing and their digest, so they cannot be changed unseen
either; a new key after a lost one starts a new chain_start over everything before it. A rotation writes
a `key_rotated` row under the old key, and the rows after it are signed with the new one.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from pipelines.remediate.keys import Keyring
from pipelines.warehouse import one, rows, sql_text, transaction, utcnow

# the columns a row's HMAC covers, in this order (row_hmac itself is the HMAC)
CHAINED = (
    "seq", "run_id", "action_id", "event", "actor", "os_user", "logged_at", "dry_run", "params", "result",
    "reason", "detail", "error", "key_id", "action_digest", "signature",
)  # fmt: skip
CHAIN_EVENTS = ("chain_start", "key_rotated")


@dataclass(frozen=True)
class Problem:
    """Where the chain breaks: the row (its seq, or how to find a row without one) and why."""

    where: str
    why: str

    def __str__(self) -> str:
        return f"remediation_log {self.where}: {self.why}"


@dataclass(frozen=True)
class Verdict:
    rows: int
    chained: int
    before_signing: int
    unverifiable: int  # signed by a key this file no longer has, vouched for by a later chain_start
    problem: Problem | None


def os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for the uid (a container's bare uid)
        return "uid-unknown"


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _params_text(value: Any) -> Any:
    """Stored JSON in one canonical spelling (DuckDB may hand it back reformatted)."""
    if value is None:
        return None
    parsed = json.loads(value) if isinstance(value, str) else value
    return json.dumps(parsed, sort_keys=True, separators=(",", ":"), default=str)


def canonical(row: dict[str, Any]) -> str:
    content = {k: _plain(_params_text(row[k]) if k == "params" else row.get(k)) for k in CHAINED}
    return json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)


def _mac(ring: Keyring, row: dict[str, Any], prev: str | None, key_id: str) -> str:
    return ring.sign(json.dumps([prev or "", canonical(row)], separators=(",", ":")), key_id)


def _digest(earlier: list[dict[str, Any]]) -> str:
    """One digest of a set of rows whatever their order (rows from before signing have none)."""
    lines = sorted(canonical(r) + "|" + (r.get("row_hmac") or "") for r in earlier)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def append(
    con: duckdb.DuckDBPyConnection, ring: Keyring, row: dict[str, Any], key_id: str | None = None
) -> None:
    """Add a row at the end of the chain (inside the caller's transaction, if any)."""
    last = one(con, sql_text("remediate", "last_link"))
    seq, prev = (last[0] + 1, last[1]) if last else (1, None)
    full = {k: None for k in CHAINED} | row | {"seq": seq, "key_id": key_id or ring.current}
    full["os_user"] = full["os_user"] or os_user()
    con.execute(
        sql_text("remediate", "log"),
        {
            **{k: full[k] for k in CHAINED if k != "logged_at"},
            "at": full["logged_at"],
            "row_hmac": _mac(ring, full, prev, full["key_id"]),
        },
    )


def _chain_row(event: str, detail: str, reason: str | None, actor: str | None) -> dict[str, Any]:
    return {
        "run_id": "", "action_id": "", "event": event, "actor": actor, "logged_at": utcnow(),
        "dry_run": False, "params": None, "result": "recorded", "reason": reason, "detail": detail,
    }  # fmt: skip


def start_chain(con: duckdb.DuckDBPyConnection, ring: Keyring, reason: str, actor: str | None = None) -> int:
    """A `chain_start` row under the current key covering every row so far; how many it covers."""
    with transaction(con):
        earlier = rows(con, sql_text("remediate", "log_rows"))
        append(con, ring, _chain_row("chain_start", _seal(earlier), reason, actor))
    record_head(con, ring)
    return len(earlier)


def note_rotation(con: duckdb.DuckDBPyConnection, ring: Keyring, old_key: str, actor: str | None) -> None:
    """A `key_rotated` row, signed with the old key, naming the new one: the chain carries on under it."""
    with transaction(con):
        append(
            con,
            ring,
            _chain_row("key_rotated", f"from key {old_key} to key {ring.current}", None, actor),
            old_key,
        )
    record_head(con, ring)


def _head_path(ring: Keyring) -> Path:
    return ring.path.with_name(ring.path.name + ".head")


def _warehouse_id(con: duckdb.DuckDBPyConnection) -> str:
    row = one(con, sql_text("remediate", "warehouse_file"))
    return str(row[0]) if row else ""


def record_head(con: duckdb.DuckDBPyConnection, ring: Keyring) -> None:
    """Keep the chain's newest row (seq and HMAC) beside the key, outside the warehouse: rows deleted from
    the log's end, or the whole log, leave no gap in the chain but no longer reach this row. Call it once
    the rows are committed."""
    last = one(con, sql_text("remediate", "last_link"))
    path = _head_path(ring)
    try:
        heads = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        heads = {}
    heads = heads if isinstance(heads, dict) else {}
    heads[_warehouse_id(con)] = [last[0], last[1]] if last else None
    tmp = path.with_name(path.name + f".{os.getpid()}.new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(heads, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def head_problem(
    con: duckdb.DuckDBPyConnection, ring: Keyring, chained: list[dict[str, Any]]
) -> Problem | None:
    """Whether the log still reaches the newest row recorded beside the key for this warehouse."""
    try:
        head = json.loads(_head_path(ring).read_text(encoding="utf-8")).get(_warehouse_id(con))
    except (OSError, ValueError, AttributeError):
        return None
    if not head:
        return None
    seq, mac = head
    found = [r for r in chained if r["seq"] == seq]
    if not found:
        ends = f"ends at row {chained[-1]['seq']}" if chained else "is empty"
        return Problem(
            f"row {seq}",
            f"is the newest row recorded beside the approval key, but the log {ends}: rows were deleted from its end",
        )
    if found[0]["row_hmac"] != mac:
        return Problem(
            _where(found[0]), "is not the row recorded beside the approval key: the log was replaced"
        )
    return None


def started(con: duckdb.DuckDBPyConnection) -> bool:
    return one(con, sql_text("remediate", "last_link")) is not None


def _where(r: dict[str, Any]) -> str:
    what = f"{r['event']} {r['action_id'] or ''}".rstrip()
    return f"row {r['seq']} ({what}, logged {r['logged_at']})"


def _link_ok(ring: Keyring, r: dict[str, Any], prev: str | None) -> bool:
    message = json.dumps([prev or "", canonical(r)], separators=(",", ":"))
    return ring.valid(message, r["row_hmac"], r["key_id"])


def _seal(earlier: list[dict[str, Any]]) -> str:
    return f"{len(earlier)} earlier row(s), sha256 {_digest(earlier)}"


def verify(con: duckdb.DuckDBPyConnection, ring: Keyring | None) -> Verdict:
    """Check the chain from its newest start (a chain_start seals every row before it by their digest);
    where that start does not hold, walk from the first row to name the first one that breaks."""
    everything = rows(con, sql_text("remediate", "log_rows"))
    before = [r for r in everything if r["seq"] is None]
    chained = [r for r in everything if r["seq"] is not None]

    def verdict(problem: Problem | None, unverifiable: int = 0) -> Verdict:
        return Verdict(len(everything), len(chained), len(before), unverifiable, problem)

    if ring is None:
        if not chained:
            return verdict(None)
        return verdict(
            Problem("(every signed row)", "the chain is signed but there is no approval key to check it with")
        )
    head = head_problem(con, ring, chained)
    if not chained:
        return verdict(head)
    starts = [i for i, r in enumerate(chained) if r["event"] == "chain_start"]
    if starts:
        last = starts[-1]
        r = chained[last]
        prev = chained[last - 1]["row_hmac"] if last else None
        sealed = before + chained[:last]
        if r["key_id"] in ring.keys and _link_ok(ring, r, prev) and r["detail"] == _seal(sealed):
            lost = sum(1 for x in chained[:last] if x["key_id"] not in ring.keys)
            return verdict(_walk(ring, chained, last, before) or head, lost)
    return verdict(_walk(ring, chained, 0, before) or head)


def _walk(
    ring: Keyring, chained: list[dict[str, Any]], first: int, before: list[dict[str, Any]]
) -> Problem | None:
    """The first row from `first` on that breaks the chain (a gap, a bad HMAC, a start whose seal fails)."""
    prev = chained[first - 1]["row_hmac"] if first else None
    for i in range(first, len(chained)):
        r = chained[i]
        expected = chained[i - 1]["seq"] + 1 if i else 1
        if r["seq"] < expected:
            return Problem(_where(r), "comes twice, or out of its place: a row was inserted")
        if r["seq"] != expected:
            return Problem(f"row {expected}", f"is missing (the next row is {r['seq']}): a row was deleted")
        if r["key_id"] not in ring.keys:
            return Problem(_where(r), "is signed by a key the key file does not hold (lost or foreign)")
        if not _link_ok(ring, r, prev):
            return Problem(_where(r), "its content or place does not match its HMAC: changed or inserted")
        if r["event"] == "chain_start" and r["detail"] != _seal(before + chained[:i]):
            recorded = int(str(r["detail"]).split(" ", 1)[0]) if str(r["detail"])[:1].isdigit() else -1
            if recorded != len(before) + i:
                return Problem(
                    f"unsigned rows ({len(before)} without a seq)",
                    f"{_where(r)} sealed {recorded} earlier row(s): a row without a signature was added or removed",
                )
            return Problem(_where(r), "the rows before it are not those it sealed: changed or removed")
        prev = r["row_hmac"]
    return None
