"""Tags, normalised once per distinct tag set (a few thousand per bill), not per line: a file's sets are
stored in billing_tag_sets with their canonical tags (team, project, owner, job_id, host) resolved through
the `tags:` config; `resolve_tag_sets` re-resolves them after the config changes, `prune_tag_sets`
deletes the sets no line uses any more.
"""

from __future__ import annotations

import hashlib
from typing import Any

import duckdb

from pipelines.errors import RejectedFile
from pipelines.ingest.billing.lines import LINES, Spec, columns_of
from pipelines.ingest.billing.relation import Relation
from pipelines.ingest.billing.sql_expr import file_params
from pipelines.warehouse import one, sql_text


def tag_bind(con: duckdb.DuckDBPyConnection, tags: dict[str, list[str]]) -> dict[str, Any]:
    """The config's tag aliases in the normalised form the stored keys have, config order kept."""
    out = {}
    for canonical in ("team", "project", "owner", "job_id", "host"):
        got = one(con, "select list_transform($k, lambda k: normalize_tag_key(k))", {"k": tags[canonical]})
        out[f"{canonical}_keys"] = list(dict.fromkeys(got[0] if got else []))
    return out


_CANONICAL = ("team", "project", "owner", "job_id", "x_host")

# the SQL that turns a file's raw tags into billing_tag_sets.tags (sql/): a change to any of it gives stored
# sets another digest than the running code's (tag_normalizer), so they are normalised again
_NORMALIZING_SQL = (
    ("macros", "macro_normalize_tag_key"),
    ("macros", "macro_normalize_tags"),
    ("macros", "macro_gcp_labels_json"),
    ("staging", "stg_billing__tag_sets"),
    ("staging", "stg_azure__tag_sets"),
    ("staging", "stg_gcp__tag_sets"),
)


def tag_normalizer() -> str:
    """A digest of what normalises tags, stored with each tag set (billing_tag_sets.x_normalizer): the SQL
    files as on disk now (as sql_text reads the staging SQL for each file) and DuckDB's version, whose
    lower(), trim() and json_transform the SQL relies on."""
    digest = hashlib.sha256(duckdb.__version__.encode())
    for layer, name in _NORMALIZING_SQL:
        digest.update(b"\0" + sql_text(layer, name).encode())
    return digest.hexdigest()[:16]


_LOOKUPS = ", ".join(f"tag_lookup(tags, ${'host' if c == 'x_host' else c}_keys)" for c in _CANONICAL)


def store_tag_sets(
    con: duckdb.DuckDBPyConnection,
    sets_sql: str,
    params: dict[str, Any],
    keys: dict[str, Any],
    uri: str,
    derived_raw: bool = False,
) -> None:
    """Store the tag sets of one file that billing_tag_sets does not know yet, their canonical tags (team,
    project, owner, job_id, host) resolved through the `tags:` config (`keys`, tag_bind's).

    `sets_sql` yields (x_tag_set, raw, raw_other, tags) per distinct hash of the file's tags (the reader's
    `stg_*__tag_sets.sql`; `raw` and `raw_other` are the least and the greatest raw text of the file's
    lines with that hash). Runs in the caller's transaction. A known set whose normalised tags come out
    differently now (wastewatch's normalisation changed) is updated, so its lines read the new tags.

    Two different raw texts with one id in the file, or a known id with other raw text (when the id is
    of the raw text itself), reject the file rather than give lines another set's tags: a 64-bit MD5
    collision, or a set stored under an earlier version's `hash()` id (macro_tag_set_id.sql). When the raw text is derived from what was hashed (`derived_raw`: GCP
    merges resource and project labels), other stored raw text means the derivation changed, and the
    set is updated like a re-normalised one.
    """
    con.execute(f"create or replace temp table _tag_sets as\n{sets_sql}", params)  # noqa: S608 - our SQL files; values are bound
    within = one(
        con, "select x_tag_set, raw, raw_other from _tag_sets where raw is distinct from raw_other limit 1"
    )
    if within is not None:
        raise RejectedFile(uri, _clash(within[0], within[1], within[2], "of this file "))
    if not derived_raw:
        clash = one(
            con,
            "select n.x_tag_set, n.raw, t.x_tags_raw::varchar from _tag_sets as n "
            "inner join billing_tag_sets as t using (x_tag_set) "
            "where t.x_tags_raw::varchar is distinct from n.raw::json::varchar limit 1",
        )
        if clash is not None:
            raise RejectedFile(uri, _clash(clash[0], clash[1], clash[2], "(this file's and a stored one) "))
    lookups = {k: v for k, v in keys.items() if k.endswith("_keys")}
    bind = {**lookups, "normalizer": tag_normalizer()}
    canonical = ", ".join(_CANONICAL)
    con.execute(
        f"update billing_tag_sets as t set (tags, x_tags_raw, {canonical}, x_normalizer) = "  # noqa: S608 - our constants
        f"(n.tags, n.raw::json, {_LOOKUPS.replace('tags,', 'n.tags,')}, $normalizer) from _tag_sets as n "
        "where n.x_tag_set = t.x_tag_set "
        "and (t.tags is distinct from n.tags or t.x_tags_raw::varchar is distinct from n.raw::json::varchar "
        "or t.x_normalizer is distinct from $normalizer)",
        bind,
    )
    columns = f"x_tag_set, tags, x_tags_raw, {canonical}, x_normalizer"
    new = "where x_tag_set not in (select x_tag_set from billing_tag_sets)"
    con.execute(
        f"insert into billing_tag_sets ({columns}) "  # noqa: S608 - our constants
        f"select x_tag_set, tags, raw::json, {_LOOKUPS}, $normalizer from _tag_sets {new}",
        bind,
    )
    con.execute("drop table _tag_sets")


def _clash(x_tag_set: int, raw: str, other: str, whose: str) -> str:
    return (
        f"two different tag sets {whose}hash to {x_tag_set}: {raw[:200]} and {other[:200]}; their lines "
        "cannot be told apart, so the file is not loaded (a 64-bit MD5 collision, or a set stored under an "
        "earlier version's hash() id: docs/billing.md, How it is stored)"
    )


def resolve_tag_sets(con: duckdb.DuckDBPyConnection, tags: dict[str, list[str]]) -> int:
    """Re-resolve every stored tag set's canonical tags through the `tags:` config: after an alias is
    added or changed, every line already loaded reads the new resolution. Returns the sets changed."""
    canonical = ", ".join(_CANONICAL)
    update = f"update billing_tag_sets set ({canonical}) = ({_LOOKUPS}) where ({canonical}) is distinct from ({_LOOKUPS})"  # noqa: S608 - our constants
    changed = one(con, update, tag_bind(con, tags))  # an UPDATE returns the number of rows it changed
    return int(changed[0]) if changed else 0


def prune_tag_sets(con: duckdb.DuckDBPyConnection) -> int:
    """Delete the tag sets no stored line uses any more (their month was restated with other tags, or
    their file removed), so billing_tag_sets lists only tags that carry spend. Returns the sets deleted."""
    used = f"where x_tag_set not in (select x_tag_set from {LINES} where x_tag_set is not null)"  # noqa: S608 - our constant
    if "x_tag_set" not in columns_of(con, LINES)[LINES]:
        used = ""  # no line stores a set: none is used
    deleted = one(con, f"delete from billing_tag_sets {used}")  # noqa: S608 - our constants
    return int(deleted[0]) if deleted else 0


def store_file_tag_sets(
    con: duckdb.DuckDBPyConnection,
    rel: Relation,
    spec: Spec,
    cte: str,
    staging: str,
    bind: dict[str, Any],
    uri: str,
    file_id: str,
    raws: list[str] | None = None,
    looked_up: bool = False,
) -> None:
    """Store the tag sets of the file's landed lines (their x_tag_set) that billing_tag_sets lacks;
    `staging` names the reader's tag sets SQL (sql/staging), which reads them from `_file_tags`.

    Only when there are such sets is the file read again for its tags (every distinct set, as raw
    text), unless `raws` holds them already (every distinct raw text of the file's lines, kept by the
    insert's own scan: reconcile.observed_tags), or the lookup of tag ids the staging SQL used holds the
    text behind each of its ids (`looked_up`, lookups.py): the new ones are stored, and the known ones checked and
    re-normalised, as store_tag_sets does. When the warehouse knows every set (the other files of a month, a restated month), the
    file's tags are not read again: the id is 64 bits of the raw text's MD5 (tag_set_id), not DuckDB's
    hash(), whose collisions are easy to meet (sql/macros/macro_tag_set_id.sql). Known sets that other
    normalising SQL made (x_normalizer is not tag_normalizer(): sets stored by an earlier version) are
    normalised again from their stored raw text; the rest are left as they are.
    """
    if "x_tag_set" not in columns_of(con, LINES)[LINES]:
        return  # no line of any file has had tags yet
    con.execute(
        f"create or replace temp table _file_sets as select distinct x_tag_set from {LINES} "  # noqa: S608 - our constant
        "where x_file_id = $f and x_tag_set is not null",
        {"f": file_id},
    )
    found = one(
        con,
        "select count(*) filter (where t.x_tag_set is null), "
        "count(*) filter (where t.x_normalizer is distinct from $normalizer) "
        "from _file_sets as f left join billing_tag_sets as t using (x_tag_set)",
        {"normalizer": tag_normalizer()},
    )
    unknown, stale = found if found else (0, 0)
    if not stale:  # every set known and normalised by this code (unknown ones count as stale too)
        con.execute("drop table _file_sets")
        return
    if unknown and raws is None and looked_up:  # the texts behind every id of the file, when looked up
        raws = _looked_up_texts(con)
    if unknown and raws is not None:  # the insert's scan saw every line's tags: no second read
        con.execute(
            "create or replace temp table _file_tags as "
            "select tag_set_id(raw) as th, min(raw) as tags_raw, max(raw) as tags_other "
            "from (select unnest($raws::varchar[]) as raw) where raw is not null group by th",
            {"raws": raws},
        )
    elif unknown:
        sql = (
            f"create or replace temp table _file_tags as\n{cte}"  # noqa: S608 - identifiers only
            # distinct texts first: MD5 once per text, not per line
            "select tag_set_id(raw) as th, min(raw) as tags_raw, max(raw) as tags_other\n"
            "from (select distinct _tags_raw as raw from _src where _tags_raw is not null) group by th"
        )
        con.execute(sql, file_params(rel, spec, sql))
    else:
        con.execute(
            "create or replace temp table _file_tags as select x_tag_set as th, "
            "x_tags_raw::varchar as tags_raw, x_tags_raw::varchar as tags_other "
            "from billing_tag_sets where x_tag_set in (select x_tag_set from _file_sets)"
        )
    store_tag_sets(con, sql_text("staging", staging), {}, bind, uri)
    con.execute("drop table _file_tags")
    con.execute("drop table _file_sets")


def _looked_up_texts(con: duckdb.DuckDBPyConnection) -> list[str] | None:
    """The raw tag texts behind the ids of `_file_sets` when the lookup of tag ids (`_billing_tag_ids`,
    lookups.py: text -> tag_set_id(text)) holds every one of them, else None: a file whose lines' texts all
    came from its first lines (or an earlier file's) need not be read again for them."""
    got = one(
        con,
        "select count(*) filter (where l.v is null), list(l.k) filter (where l.v is not null) "
        "from _file_sets as f left join _billing_tag_ids as l on l.v = f.x_tag_set",
    )
    return list(got[1] or []) if got is not None and got[0] == 0 else None
