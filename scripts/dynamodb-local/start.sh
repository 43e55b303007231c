#!/usr/bin/env bash
# Runs DynamoDB Local in the foreground for `DAS_MANIFESTS=examples/dynamodb npm start`: in memory,
# telemetry off (mandatory: without -disableTelemetry the jar sends telemetry off the machine).
# It listens on every interface (it has no host flag): talk to it through 127.0.0.1 only.
#   DYNAMODB_LOCAL_PORT  default 8000
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
bash "$HERE/install.sh"
CACHE="${DYNAMODB_LOCAL_CACHE:-${HOME:-/root}/.cache/data-access-dynamodb-local}"
cd "$CACHE"
exec java "-Djava.library.path=$CACHE/DynamoDBLocal_lib" -jar "$CACHE/DynamoDBLocal.jar" -inMemory -port "${DYNAMODB_LOCAL_PORT:-8000}" -disableTelemetry
