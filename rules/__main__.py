"""`python -m rules list | show ID | docs [--check FILE] | readme [--write|--check README.md]` — the rule
catalogue without Dagster or a warehouse.

`docs` prints docs/rules.md (`make docs` writes it); `docs --check docs/rules.md` exits 1 when that file
is out of date. `readme` prints README's rules table; `--write` puts it between the README's markers,
`--check` exits 1 when they hold something else. Exit codes: 0 ok, 1 docs out of date, 2 usage error or
unknown rule.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rules._docs import render_catalogue, render_list, render_readme_table, render_show, splice_readme
from rules._registry import ALL_RULES, get_rule


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m rules", description="The wastewatch rule catalogue.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="one line per rule: id, name, category, severity, status, summary")
    show = sub.add_parser("show", help="a rule's documentation and parameters")
    show.add_argument("rule_id", help="id, name or alias, e.g. GPU001 or idle-gpu-instance")
    docs = sub.add_parser("docs", help="print the Markdown of docs/rules.md")
    docs.add_argument("--check", type=Path, metavar="FILE", help="exit 1 if FILE differs from the output")
    readme = sub.add_parser("readme", help="print README's rules table, or write/check it in place")
    mode = readme.add_mutually_exclusive_group()
    mode.add_argument("--write", type=Path, metavar="FILE", help="replace the table between FILE's markers")
    mode.add_argument("--check", type=Path, metavar="FILE", help="exit 1 if FILE's table differs")
    return parser


def _readme(args: argparse.Namespace) -> int:
    table = render_readme_table(ALL_RULES)
    path = args.write or args.check
    if path is None:
        sys.stdout.write(table)
        return 0
    text = path.read_text(encoding="utf-8")
    try:
        new = splice_readme(text, table)
    except ValueError as exc:
        print(f"error: {path}: {exc}", file=sys.stderr)
        return 2
    if args.write is not None:
        if new != text:
            path.write_text(new, encoding="utf-8")
        return 0
    if new != text:
        print(f"{path}'s rules table is out of date: run `make docs`", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8")  # × and ≤ in the docs, whatever the locale
    if args.command == "list":
        sys.stdout.write(render_list(ALL_RULES))
    elif args.command == "show":
        try:
            rule = get_rule(args.rule_id)
        except KeyError as exc:
            print(f"error: {exc.args[0]}", file=sys.stderr)
            return 2
        sys.stdout.write(render_show(rule))
    elif args.command == "readme":
        return _readme(args)
    elif args.command == "docs":
        text = render_catalogue()
        if args.check is None:
            sys.stdout.write(text)
        elif not args.check.is_file() or args.check.read_text(encoding="utf-8") != text:
            print(f"{args.check} is out of date: run `make docs`", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
