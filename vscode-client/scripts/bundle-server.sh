#!/usr/bin/env bash
# Bundles the language server into the extension (bundled/libs), as Microsoft's
# vscode-python-tools-extension-template and ruff's extension do: horovodize (built as a
# wheel from this repository) and its pure-Python dependencies (pygls, lsprotocol, parso,
# attrs, cattrs, ...) for Python >= 3.10, the oldest the server supports. pip evaluates
# dependency markers for the interpreter that runs it, so the backport cattrs needs on
# 3.10 (exceptiongroup) is named here; newer interpreters never import it. bundled/tool/server.py puts
# bundled/libs first on sys.path and starts `horovodize serve` with the user's interpreter.
# Run by `npm run package` (vscode:prepublish). PYTHON: the interpreter that runs pip
# (default: the repository's .venv, else python3).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
PYTHON="${PYTHON:-}"
if [[ -z "$PYTHON" ]]; then
  if [[ -x "$ROOT/.venv/bin/python" ]]; then PYTHON="$ROOT/.venv/bin/python"; else PYTHON=python3; fi
fi
LIBS="$HERE/bundled/libs"
WHEELS="$(mktemp -d)"
trap 'rm -rf "$WHEELS"' EXIT

pip() { "$PYTHON" -m pip --disable-pip-version-check --no-input -q "$@"; }
# pip builds in the tree: a stale build/ would put modules deleted since into the wheel.
rm -rf "$ROOT/build"
pip wheel --no-deps --wheel-dir "$WHEELS" "$ROOT"
rm -rf "$LIBS"
pip install --target "$LIBS" --no-compile --no-user --only-binary=:all: \
  --implementation py --python-version 3.10 "$WHEELS"/horovodize-*.whl exceptiongroup==1.3.1
rm -rf "$LIBS/bin" "$ROOT/build"
find "$LIBS" -name __pycache__ -type d -prune -exec rm -rf {} +
for mod in horovodize pygls lsprotocol parso attrs cattrs exceptiongroup; do
  [[ -d "$LIBS/$mod" ]] || { echo "bundle-server: $mod missing from $LIBS" >&2; exit 1; }
done
echo "bundle-server: $(ls -d "$LIBS"/*.dist-info | sed 's#.*/##; s#\.dist-info##' | tr '\n' ' ')"
