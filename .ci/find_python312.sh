#!/usr/bin/env bash
# Print the path of a Python 3.12 interpreter for the FOCUS validator's own environment (focus-validator 2.x
# needs 3.12), or fail saying where it looked. Tried in order: $FOCUS_PYTHON, python3.12 on PATH, pyenv's
# versions (pyenv root, else ~/.pyenv), /usr/local/bin and /usr/bin.
set -uo pipefail
candidates=()
[ -n "${FOCUS_PYTHON:-}" ] && candidates+=("$FOCUS_PYTHON")
command -v python3.12 >/dev/null 2>&1 && candidates+=("$(command -v python3.12)")
root="$(pyenv root 2>/dev/null || echo "${HOME:-/root}/.pyenv")"
for p in "$root"/versions/3.12*/bin/python3.12; do [ -x "$p" ] && candidates+=("$p"); done
candidates+=(/usr/local/bin/python3.12 /usr/bin/python3.12)
for p in "${candidates[@]}"; do
  # a pyenv shim exists even when no 3.12 is installed: ask the interpreter itself
  if [ -x "$p" ] && "$p" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' >/dev/null 2>&1; then
    echo "$p"
    exit 0
  fi
done
echo "error: make focus-validate needs Python 3.12 (focus-validator 2.x, which validates FOCUS 1.2, requires it)" >&2
echo "  and found none: tried \$FOCUS_PYTHON, python3.12 on PATH, $root/versions/3.12*/bin/python3.12," >&2
echo "  /usr/local/bin/python3.12 and /usr/bin/python3.12. Install one (e.g. pyenv install 3.12) or set FOCUS_PYTHON." >&2
exit 1
