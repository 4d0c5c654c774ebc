"""The benchmarks under bench/ that start containers run to their end and
print every figure README's table quotes. Nothing here is timed or held
to a target (the targets are for the bench's own runs): a bench that no
longer runs, leaves something behind, or drops a figure, fails. Each runs
with the fewest iterations that still exercise every path it measures.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

from pathlib import Path

import pytest

from conftest import gpuslice_path

pytestmark = pytest.mark.gpuslice

BENCH = Path(__file__).resolve().parents[2] / "bench"
NUMBER = r"[-+]?\d+\.\d+"


def run_bench(script: str, wrapper: str, tmp: Path, *args: str) -> str:
    """The bench's output; its temp files under `tmp`, which it must leave empty."""
    tmp.mkdir()
    p = subprocess.run([sys.executable, str(BENCH / script), "--wrapper", wrapper, *args],
                       env=dict(os.environ, TMPDIR=str(tmp)), capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, f"{script} exited {p.returncode}:\n{p.stdout}\n{p.stderr}"
    assert not list(tmp.iterdir()), f"{script} left {list(tmp.iterdir())}"
    assert str(tmp) not in Path("/proc/mounts").read_text(), f"{script} left a mount under {tmp}"
    return p.stdout


def test_bench_start_prints_every_figure_of_each_scenario(request, test_tmp):
    out = run_bench("start/bench_start.py", gpuslice_path(request.config), test_tmp / "tmp",
                    "-n", "2", "--warmup", "1", "--phases", "--go-maxprocs", "1")
    for sc, target in (("none", "1.03"), ("devices", "1.05"), ("limits", "1.10")):
        assert re.search(rf"^{sc} +wrapper ratio {NUMBER} \(added {NUMBER} ms per cycle, paired median {NUMBER} ms\)"
                         rf"  target <= {target}: (ok|MISSED)$", out, re.M), out
        assert re.search(rf"^{sc} +floor +ratio {NUMBER} ", out, re.M), out
        for runner in ("plain", "wrapper", "floor"):
            assert re.search(rf"^{sc} +{runner} +phases create +{NUMBER} +start +{NUMBER} +wait +{NUMBER} "
                             rf"+delete +{NUMBER} ms", out, re.M), out
        before = re.search(rf"^{sc} +wrapper before the runtime ({NUMBER}) ms, floor ({NUMBER}) ms .*: gpuslice's own "
                           rf"({NUMBER}) ms \(paired median\)$", out, re.M)
        assert before, out
        # Both are times from a spawn to a later exec: never zero or less.
        assert float(before.group(1)) > 0 and float(before.group(2)) > 0, before.group(0)
        runc = re.search(rf"^{sc} +wrapper runc's own create ({NUMBER}) ms, floor ({NUMBER}) ms .*: ({NUMBER}) ms "
                         rf"\(paired median\)$", out, re.M)
        assert runc, out
        # From runc's exec to its exit: a create takes milliseconds.
        assert float(runc.group(1)) > 1 and float(runc.group(2)) > 1, runc.group(0)


def test_bench_shims_prints_the_monitors_memory(request, test_tmp):
    out = run_bench("shim/bench_shims.py", gpuslice_path(request.config), test_tmp / "tmp",
                    "-n", "2", "--window", "1")
    for kind, count in (("sleep", 1), ("fixed", 2), ("burst", 2)):
        assert re.search(rf"^{kind} +{count} processes +RSS median +\d+ KiB", out, re.M), out
    assert re.search(r"^RSS of a monitor / RSS of sleep: \d+\.\d+; worst \d+ KiB, target <= 2048 KiB: (ok|MISSED)$",
                     out, re.M), out


def test_bench_create_prints_each_builds_creates_against_the_first(request, test_tmp):
    """bench/start/bench_create.py: real creates with 2 devices (a failed one
    stops it), each build's median and its paired difference to the first,
    on a tmpfs of its own that is gone afterwards, nothing left in TMPDIR."""
    runtime = gpuslice_path(request.config)
    tmp = test_tmp / "tmp"
    tmp.mkdir(parents=True)
    p = subprocess.run([sys.executable, str(BENCH / "start" / "bench_create.py"), runtime, runtime,
                        "-n", "3", "--warmup", "1"], env=dict(os.environ, TMPDIR=str(tmp)),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    lines = re.findall(rf"^create median +{NUMBER} ms +p10 +{NUMBER} +paired vs first ({NUMBER}) ms +(\S+)$",
                       p.stdout, re.M)
    assert [path for _, path in lines] == [runtime, runtime] and lines[0][0] == "+0.000", p.stdout
    assert "work dir on tmpfs" in p.stdout, p.stdout
    assert str(tmp) not in Path("/proc/mounts").read_text()
    assert not list(tmp.iterdir()), list(tmp.iterdir())


def test_bench_breach_prints_the_delay_to_the_kill(request, test_tmp):
    out = run_bench("shim/bench_breach.py", gpuslice_path(request.config), test_tmp / "tmp",
                    "--rounds", "1", "--intervals", "100ms")
    assert re.search(rf"^ +100ms: breach to kill median +{NUMBER} ms, min +{NUMBER}, max +{NUMBER} +\(1 rounds\)$",
                     out, re.M), out


def test_hot_text_order_names_what_callgrind_saw_as_the_binary_names_it(request, test_tmp):
    """bench/start/hot_text.py: callgrind's names become the binary's own
    (its "(below main)" is glibc's __libc_start_main_impl), a string
    function brings every CPU variant of it, recursion marks go, what the
    binary does not define is left out, and what valgrind cannot run is in."""
    sys.path.insert(0, str(BENCH / "start"))
    import hot_text
    runtime = gpuslice_path(request.config)
    test_tmp.mkdir(exist_ok=True)
    out = test_tmp / "callgrind.1"
    out.write_text("events: Ir\nfn=(1) (below main)\n0 1\nfn=(2) gpuslice_runtime_entry\n0 1\n"
                   "cfn=(3) __memchr_avx2\ncalls=1 0\n0 1\nfn=(4) main'2\n0 1\nfn=(5) not_in_any_binary\n0 1\n"
                   "fn=(2)\n0 1\n")
    executed = hot_text.executed_functions(out)
    assert executed == ["__libc_start_main_impl", "__libc_start_main", "gpuslice_runtime_entry", "__memchr_avx2",
                        "main", "not_in_any_binary"]
    order = hot_text.ordering(executed, runtime)
    # the entry's start marker, the fast path's functions and its read-only
    # object first, then what callgrind saw, the entry's end marker last
    assert order[0] == hot_text.TEXT_START_MARKER, order
    first = [n for n in order if hot_text._FAST_PATH.match(n) or n in hot_text._FAST_PATH_RODATA]
    assert order[1:1 + len(first)] == first and "gpuslice_runtime_entry" in first and "try_fast_path" in first, order
    assert order[1 + len(first)] == "__libc_start_main_impl" and "main" in order, order
    assert order[-1] == hot_text.TEXT_END_MARKER and order.count(hot_text.TEXT_END_MARKER) == 1, order
    memchr = [n for n in order if n.startswith("__memchr_")]
    assert "__memchr_avx2" in memchr and "__memchr_evex" in memchr and "__memchr_sse2" in memchr, order
    assert "not_in_any_binary" not in order
    # a resolver seen alone brings its function's variants, and what runs
    # only outside valgrind (the init recorder's set-up) is there unseen
    order = hot_text.ordering(["strcmp_ifunc"], runtime)
    assert "strcmp_ifunc" in order and "__strcmp_evex" in order and "__strcmp_sse2" in order, order
    assert "strcmp" not in order  # glibc's PLT slot for it, not in .text
    assert any("lock_container_dir" in n for n in order) and "execve" in order, order


def test_hot_text_order_lists_the_small_data_a_create_touches_after_the_functions(request, test_tmp):
    """bench/start/hot_text.py: lackey's loads and stores into the binary's
    data and bss name their objects, first touched first; an instruction
    fetch, an address outside every object and an object too large to pack
    with the others (the fast path's buffers) name nothing. The ordering
    file holds them after the functions, and the layout check, which is of
    the text, passes over them."""
    sys.path.insert(0, str(BENCH / "start"))
    import hot_text
    runtime = gpuslice_path(request.config)
    data = hot_text.data_symbols(runtime)
    main_arena, pagesize, large = data["main_arena"], data["_dl_pagesize"], data["read_arena"]
    tunables = data["tunable_list"]
    assert large[1] > hot_text._MAX_HOT_DATA and 4096 <= tunables[1] <= hot_text._MAX_HOT_DATA
    test_tmp.mkdir(exist_ok=True)
    lackey = test_tmp / "lackey.1"
    lackey.write_text("==1== Lackey\n"
                      f"I  {pagesize[0]:08x},4\n"  # an instruction fetch at that address: not data
                      f" S {tunables[0]:08x},8\n"
                      f" S {main_arena[0] + 8:08x},8\n"
                      f" L {pagesize[0]:08x},8\n"
                      f" M {main_arena[0]:08x},4\n"
                      f" S {large[0] + 16:08x},8\n"
                      " L 00000010,8\n")
    touched = hot_text.touched_data([lackey], runtime)
    # touched on a node, never under valgrind
    unseen = [n for n in hot_text._UNSEEN_DATA if n in data]
    assert touched == ["tunable_list", "main_arena", "_dl_pagesize", *unseen], touched

    callgrind = test_tmp / "callgrind.1"
    callgrind.write_text("events: Ir\nfn=(1) gpuslice_runtime_entry\n0 1\nfn=(2) main\n0 1\n")
    order_file = test_tmp / "hot.order"
    functions, objects = hot_text.write_order([callgrind], [lackey], runtime, order_file, "a test")
    lines = [n for n in order_file.read_text().splitlines() if not n.startswith("#")]
    assert lines[:functions] == hot_text.ordering(["gpuslice_runtime_entry", "main"], runtime)
    assert lines[functions:] == touched + hot_text.DATA_END_MARKERS and objects == len(touched) + 2
    # the committed list's data does not count against its functions
    committed = Path(__file__).resolve().parents[2] / "shim" / "hot-text.order"
    why, found = hot_text.check_layout(runtime, committed)
    assert not why and "listed functions" in found, why
    assert any(n in data for n in committed.read_text().splitlines()), "no data objects in the committed list"
