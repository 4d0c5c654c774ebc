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
    """A program of the build gpuslice-runtime is in (build/bin/..)."""
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
