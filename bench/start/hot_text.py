"""The order of gpuslice-runtime's text: the functions a container's create,
start and delete run, first and together (shim/hot-text.order, which lld
links by: shim/CMakeLists.txt).

Why: each first touch of a 64 KiB window of the static binary's 2.3 MB text
is a page fault (the kernel maps the window around it), about 5 us each on
a small VM. A GPU container's create runs ~640 KB of code spread over 33
such windows; packed together, it faults in 13.

The functions are what valgrind's callgrind saw run, under the names the
binary's symbol table gives them, plus what callgrind cannot see as such:
glibc's start-up (callgrind's "(below main)"), every CPU variant of the
string functions it saw one variant of (glibc picks one per CPU at start-up,
and valgrind's emulated CPU is not the node's), and what runs only outside
valgrind (_UNSEEN).
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

# A name in callgrind's output: "fn=(id) name" the first time, "fn=(id)" after.
_FUNCTION = re.compile(r"^c?fn=\(\d+\) (.+)$")
# Callgrind's suffix for a function's recursion levels: name'2.
_RECURSION = re.compile(r"'\d+$")
# glibc's CPU variants of a string function: __memmove_avx512_unaligned_erms.
_VARIANT = re.compile(r"^(__[a-z0-9]+?)_(?:sse2|ssse3|sse4_1|sse4_2|avx|avx2|avx512|evex|erms)(?:_|$)")
_BELOW_MAIN = {"(below main)": ["__libc_start_main_impl", "__libc_start_main"]}
# What a create runs on a node but not under valgrind, found from the page
# faults of real creates (docs/start-overhead.md). Valgrind 3.19 knows no
# pidfd_open, so under it the runtime runs runc as a child instead of
# exec'ing it beside the init recorder: the recorder's set-up, the state
# dir's code it uses and the exec go unseen. Nor does valgrind give the
# program a vDSO, whose symbols glibc's start-up otherwise looks up.
_UNSEEN = re.compile(
    r"^(?:_ZN8gpuslice5state"
    r"|_ZNK8gpuslice4shim11CommandLine17with_global_flags"
    r"|_ZN8gpuslice4shim19exec_recording_init"
    r"|_ZN8gpuslice4shim12_GLOBAL__N_120record_after_runtime"
    r"|_ZNSt22_Optional_payload_baseIN8gpuslice4shim14PendingMonitorEE14_M_move_assign"
    r"|_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE9_M_assignERKS4_$"
    r"|_ZNSt6vectorINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESaIS5_EEC2ESt16initializer_listIS5_"
    r"|_dl_new_object$|_dl_setup_hash$|_dl_lookup_symbol_x$"
    r"|(?:__)?mmap(?:64)?$|(?:__)?flock$|(?:__)?execve?$|_start$)")


def executed_functions(callgrind_out: Path) -> list[str]:
    """The functions a callgrind output (run with --demangle=no) saw run,
    in the order it first names them."""
    seen: dict[str, None] = {}
    for line in callgrind_out.read_text(errors="replace").splitlines():
        m = _FUNCTION.match(line)
        if m:
            name = _RECURSION.sub("", m.group(1))
            for n in _BELOW_MAIN.get(name, [name]):
                seen.setdefault(n, None)
    return list(seen)


def function_symbols(binary: str) -> dict[str, tuple[int, int]]:
    """The binary's function symbols, in nm's order: address and size (0
    for one that states none, as some of glibc's assembly does)."""
    out = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    symbols: dict[str, tuple[int, int]] = {}
    for f in (line.split() for line in out.splitlines()):
        if len(f) == 3:
            f.insert(1, "0")
        if len(f) == 4 and f[2] in "tTiW":
            symbols.setdefault(f[3], (int(f[0], 16), int(f[1], 16)))
    return symbols


def ordering(executed: list[str], binary: str) -> list[str]:
    """`executed`, less what the binary does not define, each string
    function followed by its resolver and all its CPU variants (a resolver
    seen alone brings its function's too), then what _UNSEEN names."""
    defined = function_symbols(binary)
    variants: dict[str, list[str]] = {}
    for s in defined:
        m = _VARIANT.match(s)
        if m:
            variants.setdefault(m.group(1), []).append(s)
    order: dict[str, None] = {}
    for name in executed:
        m = _VARIANT.match(name)
        # glibc ran strcmp_ifunc: strcmp runs, in one variant or another
        family = m.group(1) if m else "__" + name.removesuffix("_ifunc").lstrip("_")
        # strcmp as callgrind names it: its resolver, and the variant picked
        for n in [name, name + "_ifunc", *variants.get(family, [])]:
            if n in defined:
                order.setdefault(n, None)
    for n in defined:
        if _UNSEEN.match(n):
            order.setdefault(n, None)
    return list(order)


def write_order(outputs: list[Path], binary: str, path: Path, command: str) -> int:
    """Writes the ordering file from callgrind's outputs; the number of
    functions in it."""
    executed: dict[str, None] = {}
    for out in outputs:
        for name in executed_functions(out):
            executed.setdefault(name, None)
    order = ordering(list(executed), binary)
    path.write_text(f"# gpuslice-runtime's start-up functions, first in its text (bench/start/hot_text.py).\n"
                    f"# Written by: {command}\n" + "".join(f"{n}\n" for n in order))
    return len(order)


def check_layout(binary: str, order_file: Path) -> tuple[str, str]:
    """Why the binary's text is not laid out by the ordering file ("" when
    it is), and what was found: most of the file's functions must be in the
    binary (else the file is stale: bench_start.py --hot-text writes it
    again), and together, in little more than their own size."""
    wanted = [n for n in order_file.read_text().splitlines() if n and not n.startswith("#")]
    where = function_symbols(binary)
    found = [where[n] for n in wanted if n in where]
    if len(found) < 0.75 * len(wanted):
        return f"only {len(found)} of the {len(wanted)} functions in {order_file} are in {binary}: the list is stale", ""
    size = sum(s for _, s in found)
    span = max(a + s for a, s in found) - min(a for a, _ in found)
    # Sections hold a little more than their symbols (alignment, the
    # odd local function a listed one shares a section with).
    found_text = f"its {len(found)} listed functions ({size} bytes) span {span} bytes of {binary}'s text"
    if span > 1.25 * size + 65536:
        return found_text, ""
    return "", found_text


if __name__ == "__main__":
    import sys
    if len(sys.argv) != 3:
        raise SystemExit("usage: hot_text.py BINARY ORDER_FILE (checks that BINARY's text follows ORDER_FILE)")
    why, found = check_layout(sys.argv[1], Path(sys.argv[2]))
    if why:
        raise SystemExit(f"FAIL: {why}")
    print(f"ok: {found}")
