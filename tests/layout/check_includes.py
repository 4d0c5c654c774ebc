#!/usr/bin/env python3
"""Dependencies point down: no folder of the tree includes a header of a
folder above it (design.md's layers). Every `#include "..."` of the
production folders is resolved to the folder that holds the header (its
include/ dir, or beside the including file); an include of a folder on
the same layer or above is a failure, printed with the file and the line.

    tests/layout/check_includes.py [SOURCE_DIR] [--graph]

--graph prints the folder-to-folder edges found (DOT), to draw the layers.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

# Lowest first; a folder may include what lies on a lower layer, and itself.
LAYERS = [
    ["common", "interposer"],             # errors, files, config; the interposer's public C header
    ["cdi", "state", "selinux", "sharing"],
    ["nvidia", "shim"],                   # node discovery; the container's monitor
    ["create"],                           # the create path
    ["runtime", "hook", "inspect", "dra"],  # programs and views over it
    ["cli"],
]
LAYER = {folder: n for n, folders in enumerate(LAYERS) for folder in folders}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCES = (".c", ".h", ".cpp", ".hpp", ".in")


def header_folder(root: Path, including: Path, header: str) -> str | None:
    """The top-level folder whose file `header` names, or None (generated)."""
    beside = (including.parent / header).resolve()
    if beside.is_file():
        return beside.relative_to(root).parts[0]
    for folder in LAYER:
        for inc in (root / folder / "include", root / folder):
            if (inc / header).is_file():
                return folder
    return None


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = Path(args[0] if args else Path(__file__).resolve().parents[2]).resolve()
    missing = [f for f in LAYER if not (root / f).is_dir()]
    if missing:
        print(f"FAIL: the layers name folders the tree lacks: {', '.join(missing)}")
        return 1
    edges: set[tuple[str, str]] = set()
    bad = []
    files = 0
    for folder in LAYER:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in SOURCES or not path.is_file():
                continue
            files += 1
            text = path.read_text(errors="replace")
            for m in INCLUDE.finditer(text):
                target = header_folder(root, path, m.group(1))
                if target is None or target == folder:
                    continue
                edges.add((folder, target))
                if LAYER[target] >= LAYER[folder]:
                    line = text.count("\n", 0, m.start()) + 1
                    bad.append(f"{path.relative_to(root)}:{line}: includes {m.group(1)} of {target}/ "
                               f"(layer {LAYER[target]}), not below {folder}/ (layer {LAYER[folder]})")
    if "--graph" in sys.argv:
        print("digraph layers {")
        for a, b in sorted(edges):
            print(f'  "{a}" -> "{b}";')
        print("}")
    for b in bad:
        print("FAIL:", b)
    if not bad:
        print(f"ok: {files} files of {len(LAYER)} folders, {len(edges)} folder-to-folder edges, every one pointing down")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
