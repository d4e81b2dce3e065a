#!/usr/bin/env python3
"""Checks that clang accepts every C and C++ source of a build: `clang-syntax-check.py BUILD_DIR`.

The project builds with GCC, but scripts/fuzz.sh builds the fuzz targets with clang (libFuzzer
is clang's), so code GCC accepts and clang refuses breaks fuzzing without any GCC build
noticing (a lambda capturing a structured binding did, for weeks). This runs each compile
command of BUILD_DIR/compile_commands.json again with clang (clang++ for C++) and
-fsyntax-only: the whole front end, templates instantiated, no code generated. GCC-only flags
(link-time optimisation) are dropped; warnings are not errors here, only what clang refuses.

Prints a line per source that fails with clang's first errors, then `N sources, N failed`.
Exit status: 0 all accepted, 1 some refused, 2 usage error, 77 no clang (ctest: skipped).
"""

import concurrent.futures
import json
import os
import shlex
import shutil
import subprocess
import sys

# GCC flags clang does not take (or that only matter for code generation).
DROPPED_PREFIXES = ("-flto", "-fno-fat-lto-objects", "-fuse-linker-plugin")


def clang_command(entry, clang, clangxx):
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
        out.append(a)
    out += ["-fsyntax-only", "-Wno-unknown-warning-option", "-w"]
    return out


def check(entry, clang, clangxx):
    cmd = clang_command(entry, clang, clangxx)
    r = subprocess.run(cmd, cwd=entry["directory"], capture_output=True, text=True)
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
    workers = max(1, os.cpu_count() or 1)
    failed = []
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for result in pool.map(lambda e: check(e, clang, clangxx), entries):
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
