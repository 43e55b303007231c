#!/usr/bin/env bash
# Puts the Python test peers into a virtual environment outside the repo: pyarrow, DuckDB,
# fastparquet and pandas (real writers of the Parquet, CSV and NDJSON files bulk loads read:
# e2e/bulk-writers/) and boto3 (a real S3 client). pip's configured index serves their wheels
# (offline on the build machines: `--retries 0`, so an unreachable default index costs no waits). Idempotent: exits at once when the pinned set is installed.
#
#   DAS_PYTHON_PEERS   the virtual environment (default $HOME/.cache/data-access-python)
set -euo pipefail

VENV="${DAS_PYTHON_PEERS:-${HOME:-/root}/.cache/data-access-python}"
PACKAGES="pyarrow duckdb fastparquet pandas boto3"
STAMP="$VENV/.packages"

log() { printf '[python-peers] %s\n' "$*" >&2; }

if [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$PACKAGES" ]]; then
  log "present in $VENV; nothing to do."
  exit 0
fi

command -v python3 >/dev/null 2>&1 || { log "python3 is missing: install Debian's python3 and python3-venv"; exit 1; }
rm -f "$STAMP"
[[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
# shellcheck disable=SC2086
"$VENV/bin/pip" install --quiet --disable-pip-version-check --retries 0 $PACKAGES
"$VENV/bin/python" -c 'import pyarrow, duckdb, fastparquet, pandas, boto3' || { log "the packages do not import"; exit 1; }
# Written last, so an interrupted install is never taken for a good one.
printf '%s' "$PACKAGES" >"$STAMP"
log "done: $VENV ($("$VENV/bin/python" -c 'import pyarrow, duckdb, fastparquet; print(f"pyarrow {pyarrow.__version__}, duckdb {duckdb.__version__}, fastparquet {fastparquet.__version__}")'))"
