#!/usr/bin/env python3
"""Checks that clang accepts every C and C++ source of a build: `clang-syntax-check.py BUILD_DIR`.

The project builds with GCC, but scripts/fuzz.sh builds the fuzz targets with clang (libFuzzer
is clang's), so code GCC accepts and clang refuses breaks fuzzing without any GCC build
noticing (a lambda capturing a structured binding did, for weeks). This runs each compile
command of BUILD_DIR/compile_commands.json again with clang (clang++ for C++) and
-fsyntax-only: the whole front end, templates instantiated, no code generated. GCC-only flags
(link-time optimisation) are dropped; warnings are not errors here, only what clang refuses.

Sources compiled with the same flags (the library's, the tests') share a precompiled header of
the standard, ns-3 and GoogleTest headers most of them include: their parsing was most of the
check's time (it took both cores for almost four minutes of the suite). A source clang refuses
with the precompiled header is checked again without it, and only that verdict counts, so the
header can hide nothing clang would refuse on its own.

Prints a line per source that fails with clang's first errors, then `N sources, N failed`.
Exit status: 0 all accepted, 1 some refused, 2 usage error, 77 no clang (ctest: skipped).
"""

import collections
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

# GCC flags clang does not take (or that only matter for code generation).
DROPPED_PREFIXES = ("-flto", "-fno-fat-lto-objects", "-fuse-linker-plugin")


# A group of sources with the same flags gets a precompiled header when it is at least this
# large, of the headers at least PCH_MIN_USERS of its sources include directly.
PCH_MIN_GROUP = 6
PCH_MIN_USERS = 3
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def clang_flags(entry, clang, clangxx):
    """The entry's compile command for clang, without the source, -c and -o."""
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    source = entry["file"]
    out = [clangxx if not source.endswith(".c") else clang]
    skip_next = False
    for a in args[1:]:
        if skip_next:
            skip_next = False
            continue
        if a == "-o":
            skip_next = True
            continue
        if a == "-c" or a.startswith(DROPPED_PREFIXES):
            continue
        if os.path.realpath(os.path.join(entry["directory"], a)) == source:
            continue
        out.append(a)
    return out + ["-Wno-unknown-warning-option", "-w"]


def shareable(header):
    """Headers that are safe ahead of any source: the C++ standard library's (no extension),
    ns-3's and GoogleTest's. Not C or Linux headers, some of which exclude each other
    (<net/if.h> and <linux/if.h>)."""
    return (re.fullmatch(r"[a-z_]+", header) is not None or header.startswith("ns3/")
            or header.startswith("gtest/"))


def build_pch(flags, sources, directory, workdir, index):
    """Precompiles the headers most of `sources` include; returns the .pch or None."""
    users = collections.Counter()
    for source in sources:
        try:
            text = open(source, errors="replace").read()
        except OSError:
            continue
        users.update({h for h in INCLUDE_RE.findall(text) if shareable(h)})
    headers = [h for h, n in users.items() if n >= PCH_MIN_USERS]
    if not headers:
        return None
    # Standard library first, then ns-3, then GoogleTest, each sorted: one fixed order.
    headers.sort(key=lambda h: ("/" in h, h.startswith("gtest/"), h))
    prefix = os.path.join(workdir, f"group{index}.h")
    with open(prefix, "w") as f:
        f.writelines(f"#include <{h}>\n" for h in headers)
    pch = prefix + ".pch"
    r = subprocess.run(flags + ["-x", "c++-header", prefix, "-o", pch], cwd=directory,
                       capture_output=True, text=True)
    if r.returncode != 0:
        first = (r.stderr.strip().splitlines() or ["?"])[0]
        print(f"clang-syntax-check: no precompiled header for {len(sources)} sources ({first})")
        return None
    return pch


def syntax_check(flags, entry, pch=None):
    cmd = flags + (["-include-pch", pch] if pch else []) + [entry["file"], "-fsyntax-only"]
    return subprocess.run(cmd, cwd=entry["directory"], capture_output=True, text=True)


def check(entry, flags, pch):
    r = syntax_check(flags, entry, pch)
    if r.returncode != 0 and pch:
        r = syntax_check(flags, entry)  # the verdict is clang's on the source alone
    if r.returncode == 0:
        return None
    errors = [l for l in r.stderr.splitlines() if "error:" in l][:3]
    return entry["file"], errors or r.stderr.strip().splitlines()[:3]


def main():
    if len(sys.argv) != 2:
        print("usage: clang-syntax-check.py BUILD_DIR", file=sys.stderr)
        return 2
    build = sys.argv[1]
    db = os.path.join(build, "compile_commands.json")
    if not os.path.isfile(db):
        print(f"clang-syntax-check: no {db} (configure the build first)", file=sys.stderr)
        return 2
    clangxx = shutil.which("clang++")
    clang = shutil.which("clang")
    if not clangxx or not clang:
        print("clang-syntax-check: no clang installed (apt-get install clang): skipped")
        return 77
    source_root = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
    entries = []
    seen = set()
    for e in json.load(open(db)):
        f = os.path.realpath(os.path.join(e["directory"], e["file"]))
        # Sources of this tree only, each once (a file compiled for two targets is one check).
        if f.startswith(source_root + os.sep) and f not in seen:
            seen.add(f)
            e = dict(e, file=f)
            entries.append(e)
    if not entries:
        print(f"clang-syntax-check: no sources of {source_root} in {db}", file=sys.stderr)
        return 2
    flags = {e["file"]: clang_flags(e, clang, clangxx) for e in entries}
    groups = collections.defaultdict(list)
    for e in entries:
        if not e["file"].endswith(".c"):
            groups[(e["directory"], tuple(flags[e["file"]]))].append(e["file"])
    workers = max(1, len(os.sched_getaffinity(0)))  # the cores this process may use
    failed = []
    with tempfile.TemporaryDirectory(prefix="clang-syntax-check.") as workdir, \
            concurrent.futures.ThreadPoolExecutor(workers) as pool:
        big = [(directory, list(group_flags), sources)
               for (directory, group_flags), sources in groups.items()
               if len(sources) >= PCH_MIN_GROUP]
        built = pool.map(lambda i: build_pch(big[i][1], big[i][2], big[i][0], workdir, i),
                         range(len(big)))
        pch_of = {}
        for (_, _, sources), pch in zip(big, built):
            for source in sources:
                pch_of[source] = pch
        results = pool.map(lambda e: check(e, flags[e["file"]], pch_of.get(e["file"])), entries)
        for result in results:
            if result:
                failed.append(result)
                path, errors = result
                print(f"refused: {os.path.relpath(path, source_root)}")
                for line in errors:
                    print(f"    {line}")
    print(f"{len(entries)} sources, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
