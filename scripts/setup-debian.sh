#!/usr/bin/env bash
# Installs every Debian 12 package Cnuas needs to build, test and run its demo. Idempotent: it
# asks apt only for what is missing. Run as root (or with sudo). No network beyond apt.
set -euo pipefail

PACKAGES=(
  # build
  build-essential cmake pkg-config
  # ns-3 3.37 (libns3-dev's CMake files also reference the binaries shipped in `ns3`)
  libns3-dev ns3 libgsl-dev libxml2-dev libsqlite3-dev python3-dev
  # chosen libraries
  libboost-dev zlib1g-dev libpcap-dev libgtest-dev libbenchmark-dev pybind11-dev
  # the allocator the programs link (tcmalloc: the simulation's many small objects)
  libgoogle-perftools-dev
  # the BMC's Redfish JSON, and the JSON-schema check of it in the tests
  nlohmann-json3-dev python3-jsonschema curl
  # tests and plots: trace decoding and figures
  tshark python3-matplotlib python3-numpy
  # the Python bindings (pybind11-dev, python3-dev above) and their tests
  python3-pytest
  # real peers the tests drive: Modbus masters, InfiniBand management tools
  mbpoll libmodbus-dev python3-pymodbus python3-serial python3-serial-asyncio opensm infiniband-diags
  # the reference opensm is compared against: ibsim (a fabric without wires) and libumad2sim
  ibsim-utils libumad2sim0
  # emulation: namespaces, TAP devices and the ordinary programs the tests run inside hosts
  iproute2 iputils-ping tcpdump iperf3
  # verbs: the headers Cnuas's libibverbs and msgstream build against, and the unmodified
  # verbs programs the tests run on emulated hosts
  libibverbs-dev ibverbs-utils ibverbs-providers perftest
  # umad: the header Cnuas's libibumad builds against (its diagnostics are infiniband-diags)
  libibumad-dev
  # rdma_cm: the headers Cnuas's librdmacm builds against, and Debian's rdma_cm programs
  # (rping, ucmatose, udaddy, rdma_server/rdma_client) the tests run on emulated hosts
  librdmacm-dev rdmacm-utils
  # libfabric (the transport of OFI builds of the MPIs): its verbs provider's fi_pingpong on emulated hosts
  libfabric-bin
  # qperf: its RC, UC and UD tests (event-driven waits that a signal ends) on emulated hosts
  qperf
  # UCX (the transport under Open MPI): its ucx_perftest and ucx_info run on emulated hosts,
  # and the ucp_client_server example libucx-dev ships (connected through rdma_cm);
  # Open MPI, and its headers for examples/mpi/mpi-pingpong, which mpirun starts across hosts
  ucx-utils libucx-dev openmpi-bin libopenmpi-dev
  # MPICH (over UCX in Debian), whose launcher hands mpiexec's environment to every rank;
  # Open MPI stays the default mpirun (alternatives priority 50 against MPICH's 40)
  mpich libmpich-dev
  # benchmarks and validation/roce/hpcc-side-by-side.sh: a process's wall, CPU time and peak
  # memory (/usr/bin/time; taskset is util-linux's)
  time
  # fuzzing: scripts/fuzz.sh builds the fuzz targets with clang's libFuzzer, and a test checks
  # that clang accepts every source (Build.ClangAcceptsEverySource)
  clang
  # optional: faster rebuilds
  ccache
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
# tshark asks whether non-root users may capture; answer for it.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
