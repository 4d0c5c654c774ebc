#!/usr/bin/env python3
"""Fails when a shipped ELF needs more than the oldest system it must run on.

  check_floors.py [--glibc V] [--glibcxx V] [--needed LIB,LIB...] FILE...

Reads each file's version references (objdump -T) and NEEDED entries
(readelf -d): every GLIBC_x.y must be <= --glibc, every GLIBCXX_x.y.z <=
--glibcxx, every NEEDED library one of --needed. Prints what breaks a floor
with the symbol that asks for it, and each file's highest versions.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys


def version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split("."))


def references(path: str) -> list[tuple[str, str, str]]:
    """(family, version, symbol) of each undefined versioned dynamic symbol."""
    p = subprocess.run(["objdump", "-T", path], capture_output=True, text=True)
    if p.returncode != 0:
        if "not a dynamic object" in p.stderr:
            return []  # static: needs nothing from the system
        raise RuntimeError(f"objdump -T {path}: {p.stderr.strip()}")
    out = p.stdout
    refs = []
    for line in out.splitlines():
        m = re.search(r"\*UND\*\s+\S+\s+(?:\(|)(GLIBC|GLIBCXX|CXXABI)_([0-9.]+)\)?\s+(\S+)$", line)
        if m:
            refs.append((m.group(1), m.group(2), m.group(3)))
    return refs


def needed(path: str) -> list[str]:
    out = subprocess.run(["readelf", "-d", path], check=True, capture_output=True, text=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^]]+)\]", out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--glibc", help="highest GLIBC_ version allowed")
    ap.add_argument("--glibcxx", help="highest GLIBCXX_ version allowed")
    ap.add_argument("--needed", help="comma-separated NEEDED libraries allowed")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    limits = {"GLIBC": args.glibc, "GLIBCXX": args.glibcxx}
    failures = 0
    for path in args.files:
        refs = references(path)
        highest = {}
        for family, version, symbol in refs:
            if family not in highest or version_tuple(version) > version_tuple(highest[family]):
                highest[family] = version
            limit = limits.get(family)
            if limit and version_tuple(version) > version_tuple(limit):
                print(f"{path}: {symbol} needs {family}_{version}, above the floor {family}_{limit}")
                failures += 1
        libs = needed(path)
        if args.needed is not None:
            allowed = set(filter(None, args.needed.split(",")))
            for lib in libs:
                if lib not in allowed:
                    print(f"{path}: needs {lib}, not one of {sorted(allowed)}")
                    failures += 1
        summary = " ".join(f"{k}_{v}" for k, v in sorted(highest.items())) or "no versioned references"
        print(f"{path}: highest {summary}; needs {', '.join(libs) or 'nothing (static)'}")
    if failures:
        print(f"{failures} floor violation(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
