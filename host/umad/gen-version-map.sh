#!/usr/bin/env bash
# Generates host/umad/libibumad.map, the GNU ld version script of Cnuas's replacement
# libibumad.so.3, from the library Debian installs (libibumad3 44.0-2, rdma-core 44):
#
#   host/umad/gen-version-map.sh > host/umad/libibumad.map      (how the committed map was made)
#
# host/verbs/gen-version-map.sh does the work, with the same rules: the
# version nodes IBUMAD_1.0, IBUMAD_1.1 (inherits 1.0) and IBUMAD_1.2 (inherits 1.1) in the
# order and with the parents the library defines, each with every symbol the library exports
# with that node as its default version, and `local: *;` in the first node.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
lib=${1:-/usr/lib/x86_64-linux-gnu/libibumad.so.3}
[[ -r "$lib" ]] || { echo "$0: cannot read $lib (install libibumad3)" >&2; exit 1; }
CNUAS_MAP_GENERATOR=host/umad/gen-version-map.sh exec "$here/../verbs/gen-version-map.sh" "$lib"
