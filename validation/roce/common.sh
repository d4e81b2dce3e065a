# Shared by the validation/roce scripts: where the cnuas binary and the output go.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
CNUAS="${CNUAS:-$ROOT/build/bin/cnuas}"
OUT="${OUT:-$ROOT/build/validation/roce}"
PY=/usr/bin/python3
mkdir -p "$OUT"
[ -x "$CNUAS" ] || { echo "build first: $CNUAS not found" >&2; exit 1; }
