#!/usr/bin/env bash
# Generates host/rdmacm/librdmacm.map, the version script of Cnuas's librdmacm.so.1, from the
# library Debian installs (librdmacm1 44.0-2): every default-version symbol in its version
# nodes (RDMACM_1.0 .. 1.3), with host/verbs/gen-version-map.sh doing the reading.
#
#   host/rdmacm/gen-version-map.sh > host/rdmacm/librdmacm.map
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
CNUAS_MAP_GENERATOR=host/rdmacm/gen-version-map.sh \
  exec "$here/../verbs/gen-version-map.sh" "${1:-/usr/lib/x86_64-linux-gnu/librdmacm.so.1}"
