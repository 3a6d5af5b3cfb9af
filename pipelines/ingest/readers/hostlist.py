"""Slurm host lists: `gpu[01-04,07],cpu-a[1-2]-ib[1-2],login` -> the host names they stand for.

The syntax is Slurm's (`scontrol show hostnames`): names separated by `,` or white space; a name may hold
one or more bracket groups of numbers and ranges, expanded as a cartesian product; a range keeps the
zero padding of its lower bound (`[08-10]` -> 08, 09, 10). `None assigned` (a job that never started)
and `(null)` mean no host. Anything else malformed raises HostlistError saying what is wrong.
"""

from __future__ import annotations

import itertools
import re

NO_HOSTS = {"", "none assigned", "(null)", "none", "unknown"}
MAX_HOSTS = 100_000  # one job on more hosts than this is a typo like gpu[1-1000000]


class HostlistError(ValueError):
    """A host list that cannot be expanded; the message says why."""


_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def _split_top(text: str) -> list[str]:
    """Split at commas and white space outside brackets."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
            if depth > 1:
                raise HostlistError(f"nested '[' in {text!r}")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"']' without '[' in {text!r}")
        if depth == 0 and (ch == "," or ch.isspace()):
            if cur:
                parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    if depth:
        raise HostlistError(f"'[' without ']' in {text!r}")
    if cur:
        parts.append("".join(cur))
    return parts


def _expand_group(group: str, whole: str) -> list[str]:
    out: list[str] = []
    if not group.strip():
        raise HostlistError(f"empty brackets in {whole!r}")
    for item in group.split(","):
        item = item.strip()
        m = _RANGE.match(item)
        if not m:
            raise HostlistError(f"bad range {item!r} in {whole!r} (expected numbers like 01-04 or 7)")
        lo, hi = m.group(1), m.group(2)
        if hi is None:
            out.append(lo)
            continue
        a, b = int(lo), int(hi)
        if b < a:
            raise HostlistError(f"bad range {item!r} in {whole!r}: the end is lower than the start")
        if b - a >= MAX_HOSTS:
            raise HostlistError(f"range {item!r} in {whole!r} names more than {MAX_HOSTS:,} hosts")
        width = len(lo) if lo.startswith("0") and len(lo) > 1 else 0
        out.extend(str(n).zfill(width) for n in range(a, b + 1))
    return out


def _expand_name(name: str) -> list[str]:
    pieces = re.split(r"(\[[^\]]*\])", name)
    choices: list[list[str]] = []
    for piece in pieces:
        if piece.startswith("[") and piece.endswith("]"):
            choices.append(_expand_group(piece[1:-1], name))
        elif piece:
            choices.append([piece])
    return ["".join(p) for p in itertools.product(*choices)]


def expand_hostlist(text: str | None) -> list[str]:
    """The host names of a Slurm host list, in order, without duplicates."""
    if text is None or text.strip().lower() in NO_HOSTS:
        return []
    hosts: list[str] = []
    for part in _split_top(text.strip()):
        hosts.extend(_expand_name(part))
        if len(hosts) > MAX_HOSTS:
            raise HostlistError(f"{text!r} names more than {MAX_HOSTS:,} hosts")
    return list(dict.fromkeys(hosts))
