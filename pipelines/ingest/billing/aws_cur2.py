"""AWS CUR 2.0 (Data Exports) -> billing_line_items.

Parquet or gzip CSV under `data/BILLING_PERIOD=YYYY-MM/`, with `metadata/BILLING_PERIOD=YYYY-MM/
<export>-Manifest.json` listing the period's files: the ingest loop follows the manifest (a folder being
rewritten is not read half-way) and replaces the whole period when a new manifest arrives. Columns are
the fixed snake_case CUR 2.0 names; the `product`, `resource_tags` and `cost_category` maps are MAPs in
Parquet and JSON text in CSV. The cost logic (billed vs amortised effective cost per line item type, split
cost allocation rows never added to their parent instance) is the legacy CUR's, in
sql/staging/stg_aws__cur2.sql, which both readers share.
"""

from __future__ import annotations

from pipelines.ingest.billing.aws_cur import AwsCurReader
from pipelines.ingest.billing.relation import Relation
from pipelines.ingest.readers.base import quote_ident, quote_literal
from pipelines.sources.aws_cur import PRODUCT_KEYS


class AwsCur2Reader(AwsCurReader):
    source_format = "aws_cur2"

    def maps(self, rel: Relation, columns: dict[str, str]) -> dict[str, str]:
        out: dict[str, str] = {}
        product = rel.column("product")
        if product is not None:
            is_map = rel.types[product].startswith("MAP")
            for canonical, keys in PRODUCT_KEYS.items():
                if columns.get(canonical, "null::varchar") != "null::varchar":
                    continue  # the promoted column wins
                lookups = [
                    f"{quote_ident(product)}[{quote_literal(k)}]"
                    if is_map
                    else f"json_extract_string({quote_ident(product)}, {quote_literal('$.' + k)})"
                    for k in keys
                ]
                out[canonical] = lookups[0] if len(lookups) == 1 else f"coalesce({', '.join(lookups)})"
        tags = rel.column("resource_tags")
        if tags is not None:
            t = quote_ident(tags)
            out["_tags_raw"] = (  # JSON text: tag_set_id hashes it, and it is the set's raw text
                f"case when cardinality({t}) > 0 then to_json({t})::varchar end"
                if rel.types[tags].startswith("MAP")
                else f"nullif(nullif(trim_text({t}), ''), '{{}}')"
            )
        return out
