#!/usr/bin/env bash
# Compares a built libibverbs.so.1 with the one Debian installs (rdma-core 44):
#
#   host/verbs/check-abi.sh LIB.so [REFERENCE]      (REFERENCE defaults to Debian's library)
#
# Compares default-version exports as NAME@@VERSION, so a symbol under the wrong version node
# counts as both missing and extra. Prints
#   missing: NAME@@VERSION   exported by Debian's library, not by LIB (a BIND_NOW importer of it
#                            would fail to load: exit status 1)
#   extra:   NAME@@VERSION   exported by LIB, not by Debian's (reported; not an error)
#   kind:    NAME@@VERSION   func in one, object in the other (reported; not an error)
# and warns when the SONAME or the version nodes and their parents differ.
# Exit status: 0 when nothing is missing, 1 when something is, 2 on usage errors.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
gen="$here/gen-version-map.sh"

if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 LIB.so [REFERENCE.so]" >&2
  exit 2
fi
lib=$1
ref=${2:-/usr/lib/x86_64-linux-gnu/libibverbs.so.1}
for f in "$lib" "$ref"; do
  [[ -r "$f" ]] || { echo "$0: cannot read $f" >&2; exit 2; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$gen" --list "$ref" | awk '{ print $2 "@@" $1, $3 }' | LC_ALL=C sort > "$tmp/ref"
"$gen" --list "$lib" | awk '{ print $2 "@@" $1, $3 }' | LC_ALL=C sort > "$tmp/lib"
cut -d' ' -f1 "$tmp/ref" > "$tmp/ref.names"
cut -d' ' -f1 "$tmp/lib" > "$tmp/lib.names"

LC_ALL=C comm -23 "$tmp/ref.names" "$tmp/lib.names" > "$tmp/missing"
LC_ALL=C comm -13 "$tmp/ref.names" "$tmp/lib.names" > "$tmp/extra"
LC_ALL=C join "$tmp/ref" "$tmp/lib" | awk '$2 != $3 { print $1 " (" $2 " in reference, " $3 " here)" }' > "$tmp/kind"

sed 's/^/missing: /' "$tmp/missing"
sed 's/^/extra:   /' "$tmp/extra"
sed 's/^/kind:    /' "$tmp/kind"

soname() { objdump -p "$1" | awk '$1 == "SONAME" { print $2 }'; }
if [[ "$(soname "$lib")" != "$(soname "$ref")" ]]; then
  echo "warning: SONAME is '$(soname "$lib")', the reference's is '$(soname "$ref")'"
fi
if ! diff <("$gen" --nodes "$ref") <("$gen" --nodes "$lib") > "$tmp/nodes"; then
  echo "warning: version nodes differ (< reference, > $lib; lines are NODE PARENT):"
  grep '^[<>]' "$tmp/nodes" | sed 's/^/  /'
fi

nmissing=$(grep -c . "$tmp/missing" || true)
echo "$lib: $(grep -c . "$tmp/lib" || true) default-version exports, reference $(grep -c . "$tmp/ref");" \
  "missing $nmissing, extra $(grep -c . "$tmp/extra" || true)"
[[ $nmissing -eq 0 ]]
