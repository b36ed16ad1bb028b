#!/usr/bin/env bash
# Fail when the committed garm_client differs from a fresh generation from the vendored spec.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$top/scripts/generate_client.sh" --spec "$top/scripts/garm/swagger.yaml" --out "$out" >/dev/null
if ! diff -r -x __pycache__ "$top/charms/garm/src/garm_client" "$out/garm_client"; then
  echo "garm_client is out of date: run scripts/generate_client.sh --spec scripts/garm/swagger.yaml" >&2
  exit 1
fi
echo "garm_client matches a fresh generation"
