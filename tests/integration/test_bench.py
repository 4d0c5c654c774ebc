"""The benchmarks under bench/ that start containers run to their end and
print every figure README's table quotes. Nothing here is timed or held
to a target (the targets are for the bench's own runs): a bench that no
longer runs, leaves something behind, or drops a figure, fails. Each runs
with the fewest iterations that still exercise every path it measures.
"""
from __future__ import annotations

import os
import random
import re
import statistics
import subprocess
import sys

from pathlib import Path

import pytest

from conftest import gpuslice_path

pytestmark = pytest.mark.gpuslice

BENCH = Path(__file__).resolve().parents[2] / "bench"
NUMBER = r"[-+]?\d+\.\d+"


def bench_process(script: str, wrapper: str, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    """The bench, run with its temp files under `tmp`, however it exited."""
    tmp.mkdir()
    return subprocess.run([sys.executable, str(BENCH / script), "--wrapper", wrapper, *args],
                          env=dict(os.environ, TMPDIR=str(tmp)), capture_output=True, text=True, timeout=240)


def assert_left_nothing(script: str, tmp: Path) -> None:
    assert not list(tmp.iterdir()), f"{script} left {list(tmp.iterdir())}"
    assert str(tmp) not in Path("/proc/mounts").read_text(), f"{script} left a mount under {tmp}"


def run_bench(script: str, wrapper: str, tmp: Path, *args: str) -> str:
    """The bench's output; its temp files under `tmp`, which it must leave empty."""
    p = bench_process(script, wrapper, tmp, *args)
    assert p.returncode == 0, f"{script} exited {p.returncode}:\n{p.stdout}\n{p.stderr}"
    assert_left_nothing(script, tmp)
    return p.stdout


def test_bench_start_prints_every_figure_of_each_scenario(request, test_tmp):
    out = run_bench("start/bench_start.py", gpuslice_path(request.config), test_tmp / "tmp",
                    "-n", "2", "--warmup", "1", "--phases", "--go-maxprocs", "1")
    # the floor is one exec without a C library, not glibc's start-up too
    assert re.search(r"^# wrapper .*, floor \S+/bench/start/exec_floor_bare, ", out, re.M), out
    for sc, target in (("none", "1.03"), ("devices", "1.05"), ("limits", "1.10")):
        ratio = re.search(rf"^{sc} +wrapper ratio ({NUMBER}) \(added {NUMBER} ms per cycle, paired median {NUMBER} "
                          rf"ms, {NUMBER} % of plain's; 90 % of resampled runs ({NUMBER}) to ({NUMBER})\)"
                          rf"  target <= {target}: (ok|MISSED)$", out, re.M)
        assert ratio, out
        low, high = float(ratio.group(2)), float(ratio.group(3))
        assert 0 < low <= high, ratio.group(0)
        assert re.search(rf"^{sc} +floor +ratio {NUMBER} ", out, re.M), out
        # gpuslice over the floor: the two medians the run printed, divided
        medians = {runner: float(re.search(rf"^{sc} +{runner} +median +({NUMBER}) ms ", out, re.M).group(1))
                   for runner in ("wrapper", "floor")}
        over = re.search(rf"^{sc} +wrapper over the floor ({NUMBER}) \(paired median {NUMBER} ms per cycle; "
                         rf"90 % of resampled runs ({NUMBER}) to ({NUMBER})\): what gpuslice adds to one exec a "
                         rf"call$", out, re.M)
        assert over, out
        assert abs(float(over.group(1)) - medians["wrapper"] / medians["floor"]) < 0.002, (over.group(0), medians)
        assert 0 < float(over.group(2)) <= float(over.group(3)), over.group(0)
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


def test_bench_start_expedites_rcu_for_its_run_and_sets_it_back(request, test_tmp):
    """--expedite-rcu: the run says what the knob held, and holds it again
    after; a run that fails half-way sets it back too."""
    sys.path.insert(0, str(BENCH))
    import benchlib
    before = benchlib.RCU_EXPEDITED.read_text().strip()
    out = run_bench("start/bench_start.py", gpuslice_path(request.config), test_tmp / "ok", "-n", "1", "--warmup", "0",
                    "--scenario", "none", "--expedite-rcu")
    assert re.search(rf"^# wrapper .*, RCU grace periods expedited for the run \(rcu_expedited was {before}\)$",
                     out, re.M), out
    assert benchlib.RCU_EXPEDITED.read_text().strip() == before
    # With 2 devices the baseline's config is made by `gpuslice cdi inject`,
    # which /bin/false stands for here: the run fails after the knob is set.
    p = bench_process("start/bench_start.py", gpuslice_path(request.config), test_tmp / "failed", "-n", "1",
                      "--scenario", "devices", "--expedite-rcu", "--cli", "/bin/false")
    assert p.returncode != 0, p.stdout
    assert "'/bin/false', 'cdi', 'inject'" in p.stderr, p.stderr
    assert benchlib.RCU_EXPEDITED.read_text().strip() == before
    assert_left_nothing("start/bench_start.py", test_tmp / "failed")


def test_expedite_rcu_writes_1_and_restore_puts_back_what_was_there(tmp_path):
    sys.path.insert(0, str(BENCH))
    import benchlib
    expedited, normal = tmp_path / "rcu_expedited", tmp_path / "rcu_normal"
    expedited.write_text("0\n")
    normal.write_text("0\n")
    assert benchlib.expedite_rcu(expedited, normal) == "0"
    assert expedited.read_text() == "1"
    benchlib.restore_rcu("0", expedited)
    assert expedited.read_text() == "0"
    # rcu_normal set keeps grace periods normal whatever rcu_expedited says:
    # refused, the knob untouched.
    normal.write_text("1\n")
    with pytest.raises(SystemExit, match="rcu_normal is set"):
        benchlib.expedite_rcu(expedited, normal)
    assert expedited.read_text() == "0"
    with pytest.raises(SystemExit, match="cannot read"):
        benchlib.expedite_rcu(tmp_path / "missing", normal)


def test_the_ratios_interval_resamples_whole_iterations():
    """bench_start's range of a ratio over resampled runs: iterations are
    drawn whole, so a wrapper that is 2 % slower than plain in every
    iteration reads 1.02 in every resample however much the iterations
    differ from each other; runs that swing between a slow and a fast
    mode give a range around the run's own ratio, narrower the more
    iterations it has."""
    sys.path.insert(0, str(BENCH / "start"))
    import bench_start
    rng = random.Random(7)
    plain = [rng.choice((90.0, 120.0)) + rng.random() for _ in range(200)]
    low, high = bench_start.ratio_interval([1.02 * t for t in plain], plain, random.Random(1))
    assert low == pytest.approx(1.02) and high == pytest.approx(1.02), (low, high)

    def noisy(n: int, modes: tuple[float, ...]) -> tuple[list[float], list[float]]:
        return ([rng.choice(modes) + rng.gauss(0, 5) for _ in range(n)],
                [rng.choice(modes) + rng.gauss(0, 5) for _ in range(n)])

    # Half the iterations on a slow host: both medians fall between the
    # modes, and the ratio can land anywhere from one to the other.
    xs, ys = noisy(200, (90.0, 120.0))
    low, high = bench_start.ratio_interval(xs, ys, random.Random(1))
    assert low < statistics.median(xs) / statistics.median(ys) < high and high - low > 0.1, (low, high)
    xs, ys = noisy(100, (90.0,))
    low, high = bench_start.ratio_interval(xs, ys, random.Random(1))
    assert low < statistics.median(xs) / statistics.median(ys) < high < low + 0.1, (low, high)
    xs, ys = noisy(2000, (90.0,))
    narrow_low, narrow_high = bench_start.ratio_interval(xs, ys, random.Random(1), resamples=200)
    assert narrow_high - narrow_low < (high - low) / 2, (narrow_low, narrow_high, low, high)


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


def test_bench_create_times_starts_and_deletes_against_the_bare_floor_too(request, test_tmp):
    """bench_create.py --verb start/delete --floor: the call of a container
    without state for each build (a failed one stops it), and the bare
    floor exec'ing /bin/true as one more arm, which each build is paired
    with."""
    runtime = gpuslice_path(request.config)
    floor = str(built(request, "bench", "start", "exec_floor_bare"))
    for verb in ("start", "delete"):
        tmp = test_tmp / f"tmp-{verb}"
        tmp.mkdir(parents=True)
        p = subprocess.run([sys.executable, str(BENCH / "start" / "bench_create.py"), runtime, "--verb", verb,
                            "--floor", floor, "-n", "3", "--warmup", "1"], env=dict(os.environ, TMPDIR=str(tmp)),
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        assert re.search(rf"^{verb} median +{NUMBER} ms +p10 +{NUMBER} +paired vs first \+0\.000 ms +paired vs floor "
                         rf"{NUMBER} ms +{re.escape(runtime)}$", p.stdout, re.M), p.stdout
        assert re.search(rf"^{verb} median +{NUMBER} ms +p10 +{NUMBER} +paired vs first {NUMBER} ms +"
                         rf"{re.escape(floor)} +\(floor\)$", p.stdout, re.M), p.stdout
        assert not list(tmp.iterdir()), list(tmp.iterdir())
    p = subprocess.run([sys.executable, str(BENCH / "start" / "bench_create.py"), runtime, "--floor", floor],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "--floor is for --verb start or delete" in p.stderr, p.stderr


def test_bench_breach_prints_the_delay_to_the_kill(request, test_tmp):
    out = run_bench("shim/bench_breach.py", gpuslice_path(request.config), test_tmp / "tmp",
                    "--rounds", "1", "--intervals", "100ms")
    assert re.search(rf"^ +100ms: breach to kill median +{NUMBER} ms, min +{NUMBER}, max +{NUMBER} +\(1 rounds\)$",
                     out, re.M), out


def built(request, *path: str) -> Path:
    """A program of the build gpuslice-runtime is in (build/shim/..)."""
    return Path(gpuslice_path(request.config)).resolve().parents[1].joinpath(*path)


def test_the_bare_floor_execs_the_runtime_it_is_given_with_the_arguments_as_they_were(request, test_tmp):
    """bench/start/exec_floor_bare: GPUSLICE_FLOOR_RUNTIME exec'd with the
    floor's own arguments, nothing run before it (no C library: its only
    system call is the exec); 127 where there is no runtime to exec."""
    floor = built(request, "bench", "start", "exec_floor_bare")
    p = subprocess.run(["strace", "-qq", "-o", test_tmp / "calls", floor, "-c", 'echo "$0|$1"; exit 7', "zero",
                        "one two"], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, GPUSLICE_FLOOR_RUNTIME="/bin/sh"))
    assert p.returncode == 7 and p.stdout == "zero|one two\n", (p.returncode, p.stdout, p.stderr)
    calls = (test_tmp / "calls").read_text().splitlines()
    assert calls[0].startswith(f'execve("{floor}", ') and calls[1].startswith('execve("/bin/sh", ["/bin/sh", "-c", '), \
        calls[:3]
    for env in ({}, {"GPUSLICE_FLOOR_RUNTIME": ""}, {"GPUSLICE_FLOOR_RUNTIME": str(test_tmp / "none")}):
        clean = {k: v for k, v in os.environ.items() if k != "GPUSLICE_FLOOR_RUNTIME"}
        assert subprocess.run([floor], env=dict(clean, **env), timeout=60).returncode == 127, env


def test_step_trace_traces_a_program_until_it_execs_another_and_exits_as_that_does(request, test_tmp):
    """bench/start/step_trace: the distinct instructions a program ran, in
    the order first run, until it execs another: exec_floor (static) execs
    sh, which exits 7. The trace is exec_floor's alone, from its start-up
    to its execve, and step_trace exits 7."""
    sys.path.insert(0, str(BENCH / "start"))
    import hot_text
    step_trace, floor = built(request, "bench", "start", "step_trace"), built(request, "bench", "start", "exec_floor")
    traces = test_tmp / "traces"
    traces.mkdir(parents=True)
    p = subprocess.run([step_trace, traces, floor, "-c", "exit 7"], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, GPUSLICE_FLOOR_RUNTIME="/bin/sh"))
    assert p.returncode == 7, p.stderr
    [trace] = list(traces.iterdir())
    addresses = [int(a, 16) for a in trace.read_text().split()]
    assert len(addresses) == len(set(addresses)) > 100, len(addresses)
    functions = hot_text.traced_functions(trace, str(floor))
    assert functions.index("_start") < functions.index("main") < functions.index("execve"), functions
    # Nothing of sh (position-independent, far above a static binary's
    # text), which a trace that went on past the exec would be mostly.
    symbols = [a for _, a, _ in hot_text.all_function_symbols(str(floor))]
    inside = [a for a in addresses if min(symbols) <= a <= max(symbols)]
    assert len(inside) >= 0.95 * len(addresses), (len(inside), len(addresses))


def test_step_trace_passes_signals_on_and_says_why_a_program_did_not_start(request, test_tmp):
    """A signal the traced program gets reaches it (sh's trap runs); one
    that kills it gives 128 + its number, as a shell says; a program that
    cannot be executed, 127 and why."""
    step_trace = built(request, "bench", "start", "step_trace")
    traces = test_tmp / "traces"
    traces.mkdir(parents=True)

    def traced(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([step_trace, traces, *argv], capture_output=True, text=True, timeout=120)

    assert traced("/bin/sh", "-c", "trap 'exit 5' USR1; kill -USR1 $$; exit 9").returncode == 5
    assert traced("/bin/sh", "-c", "kill -TERM $$").returncode == 128 + 15
    p = traced(str(test_tmp / "none"))
    assert p.returncode == 127 and "cannot execute" in p.stderr and "No such file" in p.stderr, p.stderr
    assert traced("/bin/sh").returncode == 0  # stdin is empty: a shell that reads nothing
    p = subprocess.run([step_trace], capture_output=True, text=True)
    assert p.returncode == 2 and "usage: step_trace DIR PROGRAM" in p.stderr, p.stderr


def test_hot_text_order_lays_out_what_the_trace_ran_then_the_other_cpu_variants(request, test_tmp):
    """bench/start/hot_text.py: a trace's addresses become the binary's
    function names, in the order first run (an address outside its .text,
    the vDSO's or `_init`'s, names nothing; a local function named as
    others are, the copy that ran); the fast path comes first, then what
    ran, then the other CPU variants of each string function that ran,
    grouped by instruction set (a node's CPU picks one set), then what
    _UNSEEN names, and the entry's end marker last."""
    sys.path.insert(0, str(BENCH / "start"))
    import hot_text
    runtime = gpuslice_path(request.config)
    where = hot_text.function_symbols(runtime)
    copies: dict[str, list[int]] = {}
    for name, address, _ in hot_text.all_function_symbols(runtime):
        copies.setdefault(name, []).append(address)
    repeated = next(n for n, a in copies.items() if len(set(a)) > 1 and n.startswith("_Z") and "cold" not in n)
    second = sorted(set(copies[repeated]))[1]
    test_tmp.mkdir(exist_ok=True)
    trace = test_tmp / "steps.1"
    trace.write_text("".join(f"{a:x}\n" for a in [
        where["main"][0], where["main"][0] + 1, where["__memchr_evex"][0], 0x7ffc12345000, where["_init"][0],
        where["strlen_ifunc"][0] if "strlen_ifunc" in where else where["__strlen_sse2"][0], second]))
    executed = hot_text.traced_functions(trace, runtime)
    assert executed[:2] == ["main", "__memchr_evex"] and repeated == executed[-1], executed
    assert "_init" not in executed
    order = hot_text.ordering(executed, runtime)
    assert order[0] == hot_text.TEXT_START_MARKER, order
    first = [n for n in order if hot_text._FAST_PATH.match(n) or n in hot_text._FAST_PATH_RODATA]
    assert order[1:1 + len(first)] == first and "gpuslice_runtime_entry" in first and "try_fast_path" in first, order
    ran = order[1 + len(first):1 + len(first) + len(executed)]
    assert ran == executed, ran
    variants = order[1 + len(first) + len(executed):]
    # every other variant of memchr and strlen, each instruction set's together
    for family in ("__memchr_", "__strlen_"):
        assert {"sse2", "avx2", "evex"} <= {n.removeprefix(family).split("_")[0] for n in variants
                                            if n.startswith(family)}, variants
    assert "__memchr_evex" not in variants
    isa = [hot_text._VARIANT.match(n).group(2) for n in variants if hot_text._VARIANT.match(n)]
    assert isa == sorted(isa), isa
    assert any(hot_text._UNSEEN.match(n) for n in variants), variants
    assert order[-1] == hot_text.TEXT_END_MARKER and order.count(hot_text.TEXT_END_MARKER) == 1, order
    assert "strcmp" not in order  # glibc's PLT slot for it, not in .text


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

    trace = test_tmp / "steps.1"
    trace.write_text(f"{hot_text.function_symbols(runtime)['main'][0]:x}\n")
    order_file = test_tmp / "hot.order"
    functions, objects = hot_text.write_order([trace], [lackey], runtime, order_file, "a test")
    lines = [n for n in order_file.read_text().splitlines() if not n.startswith("#")]
    assert lines[:functions] == hot_text.ordering(["main"], runtime)
    assert lines[functions:] == touched + hot_text.DATA_END_MARKERS and objects == len(touched) + 2
    # the committed list's data does not count against its functions
    committed = Path(__file__).resolve().parents[2] / "shim" / "hot-text.order"
    why, found = hot_text.check_layout(runtime, committed)
    assert not why and "listed functions" in found, why
    assert any(n in data for n in committed.read_text().splitlines()), "no data objects in the committed list"
