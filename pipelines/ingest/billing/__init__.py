"""Billing exports into billing_line_items: one reader per format, on what they share.

The readers (`BillingReader` subclasses, listed in pipelines/sources/registry.py): `focus.py`,
`aws_cur.py`, `aws_cur2.py`, `azure.py`, `gcp.py`. What they share, a module a job:

- `deliveries.py`: deliveries, the unit of replacement (the files a manifest lists, a billing period's
  folder, or a single file); older versions' files are `superseded`, never read.
- `decompress.py`: .gz parts inflated with ISA-L in the background, into the run's cache (the billing
  readers) or into memory (a caller that asks).
- `relation.py`: a file as DuckDB reads it: CSV (delimiter sniffed from the header, UTF-8 BOM, literal
  NULLs), Parquet (row numbers from the file) or NDJSON.
- `reader.py`: `BillingReader`, the load in one pass: the staging SQL casts strictly, so a bad value fails
  the insert; only then does `diagnose.py` find the first bad data row and column for the message.
- `lines.py`: `Spec` (how a file maps onto its staging SQL) and `insert_lines` into billing_lines.
- `sql_expr.py`: SQL over a file's columns (the `_src` CTE, JSON of non-empty columns).
- `tag_sets.py`: tags normalised once per distinct tag set (a few thousand per bill), not per line.
- `landed.py`: checks on the lines a file landed (charge periods, duplicate line items).
- `reconcile.py`: rows and billed/effective sums computed from the file's own columns must equal what
  landed, or the file is rejected and the transaction rolls back.
- `foreign.py`: formats recognised and refused with what to export instead (OCI's native cost report,
  Google's legacy file export, a JSON array).
- `checks.py`: the asset checks on billing_line_items (reconciliation against the ledger, tag coverage).

The measurements behind the choices these modules make are in bench/README.md ("Where the billing
reader's design choices come from").
"""
