"""The order of gpuslice-runtime's text: the functions a container's create,
start and delete run, first and together (shim/hot-text.order, which lld
links by: shim/CMakeLists.txt).

Why: each first touch of a 64 KiB window of the static binary's 2.3 MB text
is a page fault (the kernel maps the window around it), about 5 us each on
a small VM. A GPU container's create runs ~640 KB of code spread over 33
such windows; packed together, it faults in 13.

The functions are those a create, start and delete ran, single-stepped
(step_trace.c: the real run, on the host's CPU, with its vDSO, and a create
with limits too, which valgrind could not run), in the order first run,
under the names the binary's symbol table gives them. After them come the
other CPU variants of each string function they ran (glibc picks one per
CPU at start-up, and the node's CPU is not the bench host's), grouped by
instruction set so that those one CPU picks lie together, and what a node's
create runs but the bench's does not (_UNSEEN).

After them come the small data and bss objects that a create touches, as
valgrind's lackey saw its loads and stores: a first write to a data or bss
page takes a fresh page (copied, or zeroed), ~2-13 us each on a small VM,
and start-up's writes (glibc's, libstdc++'s, libselinux's, ours) are a few
KB spread over some 15 pages of an unordered link.
"""
from __future__ import annotations

import bisect
import re
import subprocess
from pathlib import Path

# glibc's CPU variants of a string function: __memmove_avx512_unaligned_erms;
# the function's name, then the instruction set.
_VARIANT = re.compile(r"^(__[a-z0-9]+?)_((?:sse2|ssse3|sse4_1|sse4_2|avx|avx2|avx512|evex|erms)(?:_.*)?)$")
# What a node's create runs but the bench's does not: a node's spec names
# its device nodes by path alone (nvidia-ctk's do); the bench's fake GPU
# gives their numbers, so the create never looks.
_UNSEEN = re.compile(r"^(?:_ZN8gpuslice3cdi15lstat_host_node|_ZNSt17_Function_handlerIFN8gpuslice3cdi8HostNode)")


# The fast path's functions (shim/fast_path/: fast_path.c, startup_pages.c
# and entry.c's, those the compiler kept apart), first of all: every call
# runs them, and most calls (a container without a GPU, a start, a delete)
# nothing else before they exec the runtime. Together they fault in one or
# two windows of text instead of four.
_FAST_PATH = re.compile(
    r"^(?:gpuslice_runtime_entry|gpuslice_fast_path|gpuslice_fp_[a-z_]+|try_fast_path|env_value|has_state"
    r"|recorded_process_runs|read_process_record|process_start|read_small|init_runs|map_in_startup_pages|parse_u64)$")
# The global symbol of the section that holds all its read-only tables
# (fast_path.c's FAST_PATH_TABLE), first in .rodata: in the 64 KB window
# of its strings, which every call faults in.
_FAST_PATH_RODATA = ["gpuslice_fp_global_flags_with_value"]


# Larger objects (buffers, a child's static stack) are touched only in
# part: listed, they would keep the small ones apart.
_MAX_HOT_DATA = 8192
# A line of lackey's --trace-mem=yes: " S 04d35a0,8" (a store; L loads, M
# modifies). Loads count too: a first read of a bss page faults as well
# (the zero page mapped), if more cheaply.
_ACCESS = re.compile(r"^ [LSM] ([0-9a-f]+),")
# What a create touches on a node but not under valgrind (whose CPU has no
# TSX, so glibc's lock elision is never set up), found from page faults.
_UNSEEN_DATA = ["__pthread_force_elision", "__nptl_initial_report_events"]
# The entry's markers (shim/fast_path/entry.c), last in each list: it maps
# in the text and the bss up to them as it hands over to the full program.
TEXT_END_MARKER = "gpuslice_hot_text_end"
# And first: 64 KB-aligned, so that the fast path after it shares the
# entry's window of fault-around.
TEXT_START_MARKER = "gpuslice_hot_text_start"
FAULT_AROUND = 65536
DATA_END_MARKERS = ["gpuslice_hot_relro_end", "gpuslice_hot_bss_end"]


def largest_first(paths) -> list[Path]:
    """The profiles, the largest first (of a scenario's, its create: the
    calls the fast path takes exec the runtime after a few pages of text)."""
    return sorted(paths, key=lambda p: (-p.stat().st_size, p.name))


def traced_functions(trace: Path, binary: str) -> list[str]:
    """The functions of `binary` whose code a step_trace output (an
    address a line, in the order first run) ran, in the order first run,
    each under all its names (an alias too: glibc's __memcpy_ssse3 is its
    __memmove_ssse3). An address outside the binary's .text names nothing:
    the vDSO, another program, and what the link cannot move (`_init` in
    .init, the IFUNC slots glibc's static start-up calls, named after the
    function: strcmp). The binary must not be position-independent: the
    addresses are the ones it was linked at."""
    header = subprocess.run(["readelf", "-hSW", binary], capture_output=True, text=True, check=True).stdout
    if not re.search(r"^\s*Type:\s+EXEC\b", header, re.M):
        raise ValueError(f"{binary} is position-independent: its traced addresses are not its symbols'")
    # [ 8] .text PROGBITS 0000000000290000 090000 254b51 ...
    text = re.search(r"\]\s+\.text\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", header)
    if not text:
        raise ValueError(f"{binary} has no .text")
    low, high = int(text.group(1), 16), int(text.group(1), 16) + int(text.group(2), 16)
    by_address: dict[int, list[str]] = {}
    sizes: dict[int, int] = {}
    for name, address, size in all_function_symbols(binary):
        if not low <= address < high:
            continue
        if name not in by_address.setdefault(address, []):
            by_address[address].append(name)
        sizes[address] = max(sizes.get(address, 0), size)
    starts = sorted(by_address)
    # A function that states no size (some of glibc's assembly) runs to the next.
    ends = [a + sizes[a] if sizes[a] else (starts[k + 1] if k + 1 < len(starts) else a + 1)
            for k, a in enumerate(starts)]
    seen: dict[str, None] = {}
    last = -1
    for line in trace.read_text().split():
        address = int(line, 16)
        k = bisect.bisect_right(starts, address) - 1
        if k < 0 or address >= ends[k] or k == last:
            continue
        last = k
        seen.update((n, None) for n in by_address[starts[k]])
    return list(seen)


def all_function_symbols(binary: str) -> list[tuple[str, int, int]]:
    """The binary's function symbols, in nm's order: name, address and size
    (0 for one that states none, as some of glibc's assembly does). A name
    can come more than once: a local function of that name in each of
    several objects (a template instantiated for a type of an anonymous
    namespace)."""
    return [(name, address, size or 0) for name, address, size, kind in _symbols(binary) if kind in "tTiW"]


def function_symbols(binary: str) -> dict[str, tuple[int, int]]:
    """The binary's function symbols by name: address and size (of the
    first, for a name that comes more than once)."""
    return _first_of_each_name(all_function_symbols(binary))


def _symbols(binary: str) -> list[tuple[str, int, int | None, str]]:
    """nm's defined symbols: name, address, size (None where it states
    none) and nm's letter for the kind."""
    out = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    symbols = []
    for f in (line.split() for line in out.splitlines()):
        if len(f) == 4:
            symbols.append((f[3], int(f[0], 16), int(f[1], 16), f[2]))
        elif len(f) == 3:
            symbols.append((f[2], int(f[0], 16), None, f[1]))
    return symbols


def _first_of_each_name(symbols: list[tuple[str, int, int]]) -> dict[str, tuple[int, int]]:
    by_name: dict[str, tuple[int, int]] = {}
    for name, address, size in symbols:
        by_name.setdefault(name, (address, size))
    return by_name


def writable_loads(binary: str) -> list[tuple[int, int, int]]:
    """The binary's writable PT_LOAD segments: start in memory, size in the
    file, size in memory."""
    out = subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True, check=True).stdout
    loads = []
    for f in (line.split() for line in out.splitlines()):
        # LOAD Offset VirtAddr PhysAddr FileSiz MemSiz Flg... Align
        if f and f[0] == "LOAD" and "W" in "".join(f[6:-1]):
            loads.append((int(f[2], 16), int(f[4], 16), int(f[5], 16)))
    return loads


def writable_segments(binary: str) -> list[tuple[int, int]]:
    """The binary's writable PT_LOAD segments: start and end in memory."""
    return [(start, start + memory_size) for start, _, memory_size in writable_loads(binary)]


def bss_page_faults_at_exec(binary: str) -> list[int]:
    """The writable PT_LOAD segments whose bytes in the file end inside a
    page that their bss goes on in (their start in memory): the kernel's
    exec zeroes the rest of that page, a fault in every exec (shim/page-end.ld)."""
    return [start for start, file_size, memory_size in writable_loads(binary)
            if memory_size > file_size and file_size and (start + file_size) % 4096]


def all_data_symbols(binary: str) -> list[tuple[str, int, int]]:
    """The binary's data and bss objects: name, address and size, a name
    more than once where several objects have a local one of that name.
    (Not its thread-local ones, whose "address" is an offset in each
    thread's block.)"""
    segments = writable_segments(binary)
    return [(name, address, size) for name, address, size, kind in _symbols(binary)
            # u: libstdc++'s unique guard variables
            if kind in "dDbBvVu" and size is not None and any(start <= address < end for start, end in segments)]


def data_symbols(binary: str) -> dict[str, tuple[int, int]]:
    """The binary's data and bss objects by name: address and size (of the
    first, for a name that comes more than once)."""
    return _first_of_each_name(all_data_symbols(binary))


def touched_data(lackey_outputs: list[Path], binary: str) -> list[str]:
    """The data and bss objects of at most _MAX_HOT_DATA bytes that lackey's
    outputs (--trace-mem=yes) saw read or written, in the order first
    touched, then those of _UNSEEN_DATA the binary has."""
    objects = sorted((a, a + max(size, 1), name) for name, a, size in all_data_symbols(binary)
                     if size <= _MAX_HOT_DATA)
    starts = [a for a, _, _ in objects]
    low, high = (objects[0][0], objects[-1][1]) if objects else (0, 0)
    touched: dict[str, None] = {}
    for out in lackey_outputs:
        with out.open(errors="replace") as lines:
            for line in lines:
                m = _ACCESS.match(line)
                if not m:
                    continue
                address = int(m.group(1), 16)
                if not low <= address < high:
                    continue
                k = bisect.bisect_right(starts, address) - 1
                if k >= 0 and address < objects[k][1]:
                    touched.setdefault(objects[k][2], None)
    defined = {name for _, _, name in objects}
    for name in _UNSEEN_DATA:
        if name in defined:
            touched.setdefault(name, None)
    return list(touched)


def ordering(executed: list[str], binary: str) -> list[str]:
    """The entry's start marker, the fast path's functions and read-only
    object, then `executed`, less what the binary does not define; then
    every other CPU variant of the string functions among them (a variant
    or a resolver, strcmp_ifunc, names its function), grouped by
    instruction set (all the evex ones together, ...: a node's CPU picks
    one set); then what _UNSEEN names, and the entry's text marker last."""
    defined = function_symbols(binary)
    variants: dict[str, list[str]] = {}
    for s in defined:
        m = _VARIANT.match(s)
        if m:
            variants.setdefault(m.group(1), []).append(s)
    # The start marker whether or not this build has it (an unordered
    # link's does not): the list is for the ordered one.
    order: dict[str, None] = {TEXT_START_MARKER: None}
    order.update((n, None) for n in defined if _FAST_PATH.match(n))
    order.update((n, None) for n in _FAST_PATH_RODATA)
    families: dict[str, None] = {}
    for name in executed:
        if name in defined:
            order.setdefault(name, None)
        m = _VARIANT.match(name)
        families.setdefault(m.group(1) if m else "__" + name.removesuffix("_ifunc").lstrip("_"), None)
    others = [v for f in families for v in variants.get(f, []) if v not in order]
    # by instruction set, then whatever follows it (_unaligned_erms, _rtm)
    order.update((v, None) for v in sorted(others, key=lambda v: (_VARIANT.match(v).group(2), v)))
    for n in defined:
        if _UNSEEN.match(n):
            order.setdefault(n, None)
    order.pop(TEXT_END_MARKER, None)
    return list(order) + ([TEXT_END_MARKER] if TEXT_END_MARKER in defined else [])


def write_order(traces: list[Path], lackey_outputs: list[Path], binary: str, path: Path,
                command: str) -> tuple[int, int]:
    """Writes the ordering file from step_trace's outputs (their functions
    in the order given: what the first ran lies together first, with what
    _UNSEEN names) and lackey's; the number of functions and of data
    objects in it."""
    executed: dict[str, None] = {}
    for k, trace in enumerate(traces):
        executed.update((n, None) for n in traced_functions(trace, binary))
        if k == 0:  # with the first: what a node's create runs besides
            executed.update((n, None) for n in function_symbols(binary) if _UNSEEN.match(n))
    order = ordering(list(executed), binary)
    data = touched_data(lackey_outputs, binary)
    data = [n for n in data if n not in DATA_END_MARKERS] + DATA_END_MARKERS
    path.write_text(f"# gpuslice-runtime's start-up functions, first in its text (bench/start/hot_text.py).\n"
                    f"# Written by: {command}\n" + "".join(f"{n}\n" for n in order) +
                    "# The data and bss objects a create touches, first in theirs.\n" + "".join(f"{n}\n" for n in data))
    return len(order), len(data)


def check_layout(binary: str, order_file: Path) -> tuple[str, str]:
    """Why the binary's text is not laid out by the ordering file ("" when
    it is), and what was found: most of the file's functions must be in the
    binary (else the file is stale: bench_start.py --hot-text writes it
    again), and together, in little more than their own size."""
    data = data_symbols(binary)
    wanted = [n for n in order_file.read_text().splitlines() if n and not n.startswith("#") and n not in data]
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
    # Every call runs the fast path: its functions in the window of the
    # start marker, which opens the text.
    start = where.get(TEXT_START_MARKER, (None, 0))[0]
    if start is None or start % FAULT_AROUND or start != min(a for a, _ in found):
        return f"{TEXT_START_MARKER} does not open the listed text on a {FAULT_AROUND // 1024} KB boundary", ""
    outside = sorted(n for n, (a, size) in where.items() if _FAST_PATH.match(n) and a + size > start + FAULT_AROUND)
    if outside:
        return f"the fast path's {', '.join(outside)} lie past the first {FAULT_AROUND // 1024} KB of the text", ""
    # The entry maps in what lies before the markers: all that is listed
    # (of the functions; of the data, what lies in the marker's segment).
    listed = {n: data[n] for n in order_file.read_text().splitlines() if n in data and n not in DATA_END_MARKERS}
    segments = writable_segments(binary)
    for marker in [TEXT_END_MARKER, *DATA_END_MARKERS]:
        at = where.get(marker, data.get(marker, (None, 0)))[0]
        if at is None:
            return f"{binary} has no {marker}, the end of what its entry maps in", ""
        if marker == TEXT_END_MARKER:
            before = [a for n, (a, _) in where.items() if n in wanted and n != marker]
        else:
            segment = next((s, e) for s, e in segments if s <= at < e)
            before = [a for a, _ in listed.values() if segment[0] <= a < segment[1]]
        after = [a for a in before if a >= at]
        if after:
            return f"{len(after)} listed symbols lie after {marker} ({at:#x}), which should end them", ""
    faulting = bss_page_faults_at_exec(binary)
    if faulting:
        return (f"the data segment at {faulting[0]:#x} ends inside the page its bss starts in: every exec faults "
                f"it in (shim/page-end.ld was not linked in)", "")
    return "", (found_text + f", {TEXT_END_MARKER}, {' and '.join(DATA_END_MARKERS)} after them, "
                ".bss on a page of its own")


if __name__ == "__main__":
    import sys
    if len(sys.argv) != 3:
        raise SystemExit("usage: hot_text.py BINARY ORDER_FILE (checks that BINARY's text follows ORDER_FILE)")
    why, found = check_layout(sys.argv[1], Path(sys.argv[2]))
    if why:
        raise SystemExit(f"FAIL: {why}")
    print(f"ok: {found}")
