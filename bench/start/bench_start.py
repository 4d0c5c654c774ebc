#!/usr/bin/env python3
"""Container start overhead of a runc-compatible wrapper (gpuslice-runtime)
against the plain low-level runtime.

Each cycle is create, start, wait (for the container's init to exit), delete
of a busybox container running `true`, timed from before create to after
delete. The runtimes compared alternate within each iteration (in an order
shuffled every iteration), so drift of the machine hits all alike.

Every scenario also runs the floor (exec_floor_bare, a static program
without a C library that only execs the runtime) on plain's config: what
any wrapper costs on this machine, 3 execs a cycle. Runs before
2026-12-06 (night) took exec_floor, a static glibc program, whose
start-up made a floor ~0.3 ms a call higher. The paired median
(per-iteration difference) is the steadier figure on a noisy machine.
Each ratio comes with the range 90 % of runs resampled from this one
fall in (iterations drawn whole, with replacement): how far a run of
this size moves on this machine: ~±1 % at 200 cycles when the host is
quiet, ~±2.5 % when it swings between a slow and a fast mode. The
wrapper's ratio over the floor is printed too: gpuslice's own share,
apart from what one exec a call costs on the host (where page tables are
shadowed by a hypervisor, ~2 % of a cycle).

--expedite-rcu sets /sys/kernel/rcu_expedited to 1 for the run, and back
after it. runc's create waits for RCU grace periods; with lazy RCU and a
250 Hz tick (6.18 here) a create took ~14 ms or ~19 ms by whether a
wait caught a tick, so cycles fell in two modes with the median between
them, and a ratio of medians moved by 4-8 % either way over 200 cycles
(3 % over 1,000). Expedited, every arm's waits are short: one mode, ±1 %
over 200 cycles. The cycle is a little shorter, so gpuslice's share of
it is, if anything, larger. README's command passes it.

The work dir (bundles, runc's --root, gpuslice's state dir) is a tmpfs
mounted for the run, as /run is on a node, where containerd keeps all
three (/run/containerd/runc, .../io.containerd.runtime.v2.task,
/run/gpuslice). On a disk file system every mkdir and rmdir of a state dir
costs what no node pays (ext4 mounted with discard, as here: a synchronous
discard per removed directory); --work-fs disk measures that too.

Every call's exit is waited for on a pidfd (ocitest.run_process), never by
subprocess.run's polling, whose doubling sleeps made a 64 ms create look
like 114 ms and runc look bimodal.

Three scenarios:
  none     no GPU request: the wrapper must only exec the runtime
  devices  2 CDI devices (nvidia.com/gpu=0,1 of a fake GPU made with mknod)
           requested by annotation through the wrapper; the plain runtime
           gets the same devices written into config.json beforehand by
           `gpuslice cdi inject`, so the difference is what the wrapper
           costs, not what the devices cost
  limits   the same 2 devices, each with GPUSLICE_MEMORY_LIMIT: state dir,
           limits file, usage region, preload list, mounts and monitor;
           the baseline is again runc on the injected devices. The build's
           fake NVML (tests/fakes) stands for the node's, as the monitor's
           and admission's NVML

Before the runtime: in each scenario the wrapper also creates through a
config whose low-level runtime is exec_floor, which stamps the moment it
starts (GPUSLICE_FLOOR_STAMP) and execs runc; exec_floor as the runtime
itself is the baseline. The difference of the two is the time gpuslice
spends on the create's critical path before runc runs: a figure that
runc's own swings (several ms a create on a busy VM) do not reach. The
same creates also time runc itself, from that stamp to the create's exit:
whether runc is any slower for having been exec'd by the wrapper.

A node that is not empty: --node-containers N runs every cycle beside N
GPU containers (2 devices each, no limits, `sleep`) started through the
wrapper beforehand, whose state dirs a create may look at; --node-spec puts
a driver's spec of another kind (8 GPUs, YAML as nvidia-ctk writes it,
~10 KiB) in the spec dir, which a create need not parse.

Run as root:  bench/start/bench_start.py --wrapper build/bin/gpuslice-runtime --expedite-rcu
Targets: median ratio <= 1.03 (none), <= 1.05 (devices), <= 1.10 (limits);
--check makes a missed target exit 1.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "integration"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import benchlib  # noqa: E402
import ocitest  # noqa: E402

TARGETS = {"none": 1.03, "devices": 1.05, "limits": 1.10}
ANNOTATION = "cdi.k8s.io/gpuslice-bench"
LIMITED_KIND = "gpuslice-bench.example/gpu"
FAKE_GPU0 = "GPU-facea2a3-a4a5-a6a7-a8a9-aaabacadae00"  # the one GPU the build's fake NVML lists


PHASES = ("create", "start", "wait", "delete")


def exited_well(rt: ocitest.Runtime, cid: str, rc: int, out: Path) -> None:
    """A container that failed makes the run fail: its cycle measured
    something else than a container's."""
    if rc != 0:
        raise SystemExit(f"{rt.name}: container {cid} exited {rc}: {out.with_suffix('.err').read_text()}")


def cycle(rt: ocitest.Runtime, bundle: ocitest.Bundle, cid: str, config: bytes, phases: list | None = None,
          pause: float = 0.0) -> float:
    """One create/start/wait/delete, in ms (the sum of the phases); each
    phase's ms appended to `phases` when given. `pause` seconds between
    create and start are not timed."""
    bundle.config_path.write_bytes(config)  # the wrapper may have rewritten it
    pid_file = bundle.path / "pid"
    out = bundle.path / "out"
    took = []
    t = time.perf_counter()
    rt.create(bundle, cid, out=out, pid_file=pid_file)
    took.append(time.perf_counter() - t)
    if pause > 0:
        time.sleep(pause)
    t = time.perf_counter()
    pid = int(pid_file.read_text())
    rt.start(cid)
    took.append(time.perf_counter() - t)
    t = time.perf_counter()
    rc = ocitest.wait_pid(pid, 30)
    took.append(time.perf_counter() - t)
    t = time.perf_counter()
    rt.delete(cid)
    took.append(time.perf_counter() - t)
    exited_well(rt, cid, rc, out)
    if phases is not None:
        phases.append([s * 1000.0 for s in took])
    return sum(took) * 1000.0


def before_runtime(rt: ocitest.Runtime, bundle: ocitest.Bundle, cid: str, config: bytes,
                   stamp: Path) -> tuple[float, float]:
    """ms from spawning `rt create` to the start of the low-level runtime,
    which exec_floor stamps in `stamp`, and ms from there to the create's
    exit (runc's own create); then the container's start, wait and delete,
    untimed."""
    bundle.config_path.write_bytes(config)
    stamp.unlink(missing_ok=True)
    pid_file = bundle.path / "pid"
    out = bundle.path / "out"
    t = time.monotonic_ns()  # CLOCK_MONOTONIC, as exec_floor's stamp
    rt.create(bundle, cid, out=out, pid_file=pid_file)
    ended = time.monotonic_ns()
    try:
        started = int(stamp.read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"{rt.name}: exec_floor left no stamp in {stamp}: {e}")
    pid = int(pid_file.read_text())
    rt.start(cid)
    rc = ocitest.wait_pid(pid, 30)
    rt.delete(cid)
    exited_well(rt, cid, rc, out)
    return (started - t) / 1e6, (ended - started) / 1e6


def paired_median(xs: list[float], ys: list[float]) -> float:
    """The median of per-iteration differences: robust to drift of a shared
    machine, which hits both alike."""
    return statistics.median(x - y for x, y in zip(xs, ys))


def ratio_interval(xs: list[float], ys: list[float], rng: random.Random, resamples: int = 1000,
                   level: float = 0.90) -> tuple[float, float]:
    """Where median(xs) / median(ys) falls in the middle `level` of
    `resamples` runs drawn from this one: its iterations drawn with
    replacement, each whole (xs[i] and ys[i] ran in the same iteration, so
    they stay together). How far a run of this size can move on this
    machine's noise: the ratio of two medians ignores the pairing, and a
    host with a slow and a fast mode puts both medians between the two."""
    n = len(xs)
    ratios = []
    for _ in range(resamples):
        drawn = [rng.randrange(n) for _ in range(n)]
        ratios.append(statistics.median(xs[i] for i in drawn) / statistics.median(ys[i] for i in drawn))
    ratios.sort()
    tail = (1 - level) / 2
    return ratios[int(tail * (resamples - 1))], ratios[int((1 - tail) * (resamples - 1) + 0.5)]


def against(xs: list[float], ys: list[float], seed: int) -> tuple[float, float, float, float]:
    """xs's cycles against ys's, run in the same iterations: the ratio of
    their medians, the paired median (ms) and the ratio's range over
    resampled runs (ratio_interval)."""
    low, high = ratio_interval(xs, ys, random.Random(seed))
    return statistics.median(xs) / statistics.median(ys), paired_median(xs, ys), low, high


def interleaved(names: list[str], warmup: int, iterations: int, shuffle, run) -> dict[str, list]:
    """`run(name, slot, iteration, measured)` for every name in each
    iteration, in a shuffled order each time, not a rotation: a shared
    machine has slow and fast periods, which a fixed order can meet in step.
    The slot is the name's place in that iteration's order. What the
    iterations after the warm-up returned, by name."""
    results = {name: [] for name in names}
    for i in range(warmup + iterations):
        order = list(names)
        shuffle(order)
        for slot, name in enumerate(order):
            value = run(name, slot, i, i >= warmup)
            if i >= warmup:
                results[name].append(value)
    return results


NODE_PREFIX = "bench-node-"


def start_node_containers(rt: ocitest.Runtime, bundle: ocitest.Bundle, devices: str, n: int) -> None:
    """`n` GPU containers that sleep through the run, one bundle reused (the
    wrapper rewrites config.json, which runc reads only at create)."""
    bundle.args = ["sleep", "100000"]
    bundle.annotate(ANNOTATION, devices)
    for i in range(n):
        bundle.write()
        rt.create(bundle, f"{NODE_PREFIX}{i}")
        rt.start(f"{NODE_PREFIX}{i}")


def summarize(times: list[float]) -> dict:
    s = sorted(times)
    return {"median": statistics.median(s), "mean": statistics.fmean(s),
            "p10": s[int(0.1 * (len(s) - 1))], "p90": s[int(0.9 * (len(s) - 1))]}


def inject(cli: str, spec_dir: Path, bundle: ocitest.Bundle, devices: str) -> bytes:
    """config.json with `devices` applied by `gpuslice cdi inject`."""
    bundle.write()
    out = bundle.path / "injected.json"
    subprocess.run([cli, "cdi", "inject", "--spec-dirs", str(spec_dir), "--config", str(bundle.config_path),
                    "--output", str(out), *devices.split(",")], check=True)
    return out.read_bytes()


def limited_spec(gpu: ocitest.FakeGpu) -> dict:
    """The fake GPU's spec under another kind, each device a 256 MiB slice
    of the GPU the fake NVML lists, so that admission checks the limits
    against its memory as on a real node."""
    spec = gpu.cdi_spec()
    spec["kind"] = LIMITED_KIND
    for d in spec["devices"]:
        d["containerEdits"]["env"] += [f"GPUSLICE_GPU_UUID={FAKE_GPU0}", "GPUSLICE_MEMORY_LIMIT=256Mi"]
    return spec


def driver_spec_yaml(gpus: int = 8) -> str:
    """A GPU driver's CDI spec as nvidia-ctk writes it (compact YAML
    sequences, per-GPU nodes and symlink hooks, the libraries and binaries
    as mounts), under a kind no request of the bench names."""
    lines = ["---", "cdiVersion: 0.5.0", "containerEdits:", "  deviceNodes:"]
    lines += [f"  - path: /dev/{n}" for n in ("nvidia-modeset", "nvidia-uvm", "nvidia-uvm-tools", "nvidiactl")]
    lines += ["  env:", "  - NVIDIA_VISIBLE_DEVICES=void", "  hooks:", "  - args:", "    - nvidia-cdi-hook",
              "    - update-ldcache", "    - --folder", "    - /usr/lib/x86_64-linux-gnu",
              "    hookName: createContainer", "    path: /usr/bin/nvidia-cdi-hook", "  mounts:"]
    libs = ["EGL_nvidia", "GLESv2_nvidia", "GLX_nvidia", "cuda", "cudadebugger", "nvcuvid", "nvidia-allocator",
            "nvidia-cfg", "nvidia-eglcore", "nvidia-encode", "nvidia-fbc", "nvidia-glcore", "nvidia-glsi",
            "nvidia-gpucomp", "nvidia-ml", "nvidia-ngx", "nvidia-nvvm", "nvidia-opencl", "nvidia-opticalflow",
            "nvidia-ptxjitcompiler", "nvidia-rtcore", "nvidia-tls", "nvoptix"]
    paths = [f"/usr/lib/x86_64-linux-gnu/lib{n}.so.550.54.15" for n in libs]
    paths += [f"/usr/bin/nvidia-{n}" for n in ("smi", "debugdump", "persistenced", "cuda-mps-control")]
    for path in paths:
        lines += [f"  - containerPath: {path}", f"    hostPath: {path}", "    options:", "    - ro",
                  "    - nosuid", "    - nodev", "    - bind"]
    lines.append("devices:")
    for i in range(gpus):
        lines += ["- containerEdits:", "    deviceNodes:", f"    - path: /dev/nvidia{i}",
                  f"    - path: /dev/dri/card{i + 1}", f"    - path: /dev/dri/renderD{128 + i}", "    hooks:",
                  "    - args:", "      - nvidia-cdi-hook", "      - create-symlinks", "      - --link",
                  f"      - ../card{i + 1}::/dev/dri/by-path/pci-0000:{i + 0x18:02x}:00.0-card",
                  "      hookName: createContainer", "      path: /usr/bin/nvidia-cdi-hook", f"  name: \"{i}\""]
    lines += ["kind: driver.example.com/gpu", ""]
    return "\n".join(lines)


def fs_type(path: Path) -> str:
    """The type of the file system `path` is on (its longest mount point in
    /proc/mounts)."""
    best, kind = "", "?"
    for line in Path("/proc/mounts").read_text().splitlines():
        _, point, fstype = line.split()[:3]
        point = point.replace("\\040", " ")
        if (str(path) + "/").startswith(point.rstrip("/") + "/") and len(point) >= len(best):
            best, kind = point, fstype
    return kind


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    benchlib.add_wrapper_argument(ap, "the runc-compatible wrapper")
    ap.add_argument("--runtime", default="runc", help="low-level runtime: runc or crun or a path (default runc)")
    ap.add_argument("-n", "--iterations", type=int, default=50, help="cycles per runtime and scenario (default 50)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed cycles first (default 3)")
    ap.add_argument("--scenario", choices=["none", "devices", "limits", "all"], default="all")
    ap.add_argument("--cli", default="", help="the gpuslice CLI, for `cdi inject` (default: the build's, beside the wrapper)")
    ap.add_argument("--floor", default="",
                    help="the floor's program (default: the build's bench/start/exec_floor_bare, or exec_floor where "
                         "that is not built)")
    ap.add_argument("--settle", type=float, default=0.0,
                    help="seconds to wait before each cycle (default 0), to let the kernel finish tearing down "
                         "the previous container")
    ap.add_argument("--pause-after-create", type=float, default=0.0, metavar="SECONDS",
                    help="seconds to wait between create and start, not timed (default 0): start is then measured "
                         "once the work a create leaves running is done (the init recorder; with limits, the "
                         "monitor's start-up), which tells that work's cost from start's own")
    ap.add_argument("--expedite-rcu", action="store_true",
                    help="write 1 to /sys/kernel/rcu_expedited for the run and set it back after: runc's create "
                         "then no longer falls in a slow and a fast mode by whether its waits for RCU caught a tick, "
                         "which moved a ratio of medians by several %% (README's command passes it)")
    ap.add_argument("--go-maxprocs", type=int, default=0,
                    help="GOMAXPROCS for runc, plain and wrapped alike (default: unset)")
    ap.add_argument("--seed", type=int, default=1, help="of the shuffled order of runtimes per iteration (default 1)")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (and, on tmpfs, its mount)")
    ap.add_argument("--work-fs", choices=["tmpfs", "disk"], default="tmpfs",
                    help="what the work dir (bundles, runc's --root, gpuslice's state dir) lives on: a tmpfs mounted "
                         "for the run (default), as /run is on a node, where containerd keeps all three; or the "
                         "disk under $TMPDIR, whose file system (ext4 with discard, say) then weighs on every "
                         "create and delete")
    ap.add_argument("--compare", default="",
                    help="another build of the wrapper (e.g. the previous commit's), run in the same interleaving "
                         "with the same config as the wrapper: an A/B of two builds that this machine's drift between "
                         "two runs cannot blur")
    ap.add_argument("--node-containers", type=int, default=0, metavar="N",
                    help="run the cycles beside N GPU containers (2 devices each, no limits, `sleep`) started "
                         "through the wrapper before the first scenario and deleted after the last (default 0)")
    ap.add_argument("--node-spec", action="store_true",
                    help="also put a driver's spec of another kind in the spec dir (8 GPUs, nvidia-ctk's YAML)")
    ap.add_argument("--phases", action="store_true",
                    help="also print the median of each phase (create, start, wait, delete) per runtime")
    ap.add_argument("--log-level", default="info",
                    help="the wrapper's log level (default info, a node's unless its config says otherwise: a "
                         "create with devices writes one line; before 2026-12-06 the bench ran at warn, no line)")
    a = ap.parse_args()

    wrapper = benchlib.wrapper_as_root(a)
    if a.go_maxprocs > 0:
        os.environ["GOMAXPROCS"] = str(a.go_maxprocs)  # before the runtimes copy the environment
    build = Path(wrapper).resolve().parent.parent
    cli = a.cli or str(build / "bin" / "gpuslice")
    stamper = str(build / "bench" / "start" / "exec_floor")
    bare = build / "bench" / "start" / "exec_floor_bare"
    floor = a.floor or str(bare if os.access(bare, os.X_OK) else stamper)
    if a.compare and not os.access(a.compare, os.X_OK):
        raise SystemExit(f"--compare {a.compare}: not an executable")
    for what, path in (("--cli", cli), ("--floor", floor), ("exec_floor", stamper)):
        if not os.access(path, os.X_OK):
            raise SystemExit(f"{what} {path}: not an executable (build it, or name it)")
    lowlevel = shutil.which(a.runtime) or a.runtime
    if not os.access(lowlevel, os.X_OK):
        raise SystemExit(f"runtime {a.runtime!r} not found")
    if os.path.basename(lowlevel) == "crun":
        ocitest.prepare_cgroups_for_crun()
    ocitest.become_subreaper()

    tmp = Path(tempfile.mkdtemp(prefix="gpuslice-bench-"))
    on_tmpfs = a.work_fs == "tmpfs"
    if on_tmpfs:
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0700", "gpuslice-bench", str(tmp)],
                                 stderr=subprocess.PIPE, text=True)
        if mounted.returncode != 0:
            tmp.rmdir()
            raise SystemExit(f"cannot mount a tmpfs on {tmp}: {mounted.stderr.strip()} (or use --work-fs disk)")
    rcu_was = None
    try:
        if a.expedite_rcu:
            rcu_was = benchlib.expedite_rcu()
        rootfs = ocitest.build_busybox_rootfs(tmp / "rootfs")
        (rootfs / ocitest.FakeGpu.MOUNT_DEST.lstrip("/")).mkdir(parents=True, exist_ok=True)
        template = ocitest.runc_spec_template(tmp / "template")
        gpu = ocitest.FakeGpu(tmp / "gpu", with_hook=False)
        (gpu.spec_dir / "limited.json").write_text(json.dumps(limited_spec(gpu)))
        if a.node_spec:
            (gpu.spec_dir / "driver.example.com-gpu.yaml").write_text(driver_spec_yaml())
        hook = os.environ.get("GPUSLICE_HOOK") or str(build / "bin" / "gpuslice-hook")
        interposer = str(build / "interposer" / "libgpuslice-cuda.so")
        nvml = str(build / "tests" / "fakes" / "lib" / "libnvidia-ml.so.1")
        if not os.path.isfile(nvml):
            raise SystemExit(f"{nvml}: missing (build the tests: the limits scenario uses the fake NVML)")
        conf = tmp / "gpuslice.toml"
        conf.write_text(f'[cdi]\nspec-dirs = ["{gpu.spec_dir}"]\n\n[runtime]\nruntimes = ["{lowlevel}"]\n'
                        f'state-dir = "{tmp / "state"}"\nhook-path = "{os.path.abspath(hook)}"\n'
                        f'interposer-path = "{interposer}"\n'
                        f'\n[admission]\nmax-containers-per-gpu = 0\n'
                        f'\n[monitor]\nnvml-path = "{nvml}"\n'
                        f'\n[log]\nlevel = "{a.log_level}"\ntarget = "file"\ndirectory = "{tmp / "log"}"\n')
        root = tmp / "runtime-state"
        plain = ocitest.Runtime(os.path.basename(lowlevel), [lowlevel], root)
        wrapped = ocitest.Runtime("wrapper", [wrapper], root, env=dict(os.environ, GPUSLICE_CONFIG=str(conf)),
                                  lowlevel=plain)
        floored = ocitest.Runtime("floor", [floor], root, env=dict(os.environ, GPUSLICE_FLOOR_RUNTIME=lowlevel),
                                  lowlevel=plain)
        # Before the runtime: the wrapper with exec_floor as its runtime, and
        # exec_floor alone, each stamping when runc starts.
        stamp = tmp / "runtime-started"
        stamp_env = dict(os.environ, GPUSLICE_FLOOR_RUNTIME=lowlevel, GPUSLICE_FLOOR_STAMP=str(stamp))
        conf_stamped = tmp / "gpuslice-stamped.toml"
        conf_stamped.write_text(conf.read_text().replace(f'runtimes = ["{lowlevel}"]', f'runtimes = ["{stamper}"]'))
        stamped = {"wrapper": ocitest.Runtime("wrapper", [wrapper], root,
                                              env=dict(stamp_env, GPUSLICE_CONFIG=str(conf_stamped)), lowlevel=plain),
                   "floor": ocitest.Runtime("floor", [stamper], root, env=stamp_env, lowlevel=plain)}
        # The compared build reads the same config at a path of its own: the
        # front keeps one record per config path, and two builds whose
        # records differ (a new record format) would each replace the
        # other's on every call, neither running as it runs on a node.
        compare_env = {}
        if a.compare:
            for name, runner, own in (("wrapper", wrapped, conf), ("stamped", stamped["wrapper"], conf_stamped)):
                copy = own.with_name("compare-" + own.name)
                copy.write_text(own.read_text())
                compare_env[name] = dict(runner.env, GPUSLICE_CONFIG=str(copy))
            stamped["compare"] = ocitest.Runtime("compare", [os.path.abspath(a.compare)], root,
                                                 env=compare_env["stamped"], lowlevel=plain)

        scenarios = ["none", "devices", "limits"] if a.scenario == "all" else [a.scenario]
        rcu = (f"expedited for the run (rcu_expedited was {rcu_was})" if rcu_was is not None
               else "as the kernel has them")
        print(f"# {shlex.join([sys.executable, *sys.argv])}")
        print(f"# wrapper {wrapper}, runtime {lowlevel}, floor {floor}, "
              f"{a.iterations} iterations (+{a.warmup} warm-up), {os.cpu_count()} cpus, "
              f"kernel {os.uname().release}, settle {a.settle} s, "
              f"pause after create {a.pause_after_create} s, "
              f"GOMAXPROCS {os.environ.get('GOMAXPROCS', 'unset')}, work dir on "
              f"{fs_type(tmp)}, {a.node_containers} GPU containers running, "
              f"{len(list(gpu.spec_dir.iterdir()))} specs, log level {a.log_level}, RCU grace periods {rcu}")
        start_node_containers(wrapped, ocitest.Bundle(tmp / "node", template, rootfs),
                              ",".join(f"{gpu.KIND}={n}" for n in ("0", "1")), a.node_containers)
        failed = False
        for sc in scenarios:
            runners = {"plain": plain, "wrapper": wrapped, "floor": floored}
            if a.compare:
                runners["compare"] = ocitest.Runtime("compare", [os.path.abspath(a.compare)], root,
                                                     env=compare_env["wrapper"], lowlevel=plain)
            bundles = {name: ocitest.Bundle(tmp / f"{sc}-{name}", template, rootfs) for name in runners}
            configs = {}
            for name, b in bundles.items():
                kind = LIMITED_KIND if sc == "limits" else gpu.KIND
                devices = ",".join(f"{kind}={n}" for n in ("0", "1"))
                if sc != "none" and name in ("plain", "floor"):
                    configs[name] = inject(cli, gpu.spec_dir, b, devices)
                    continue
                if sc != "none":
                    b.annotate(ANNOTATION, devices)
                configs[name] = b.write()
            # Cycles run in bundles and under ids named by their place in the
            # iteration, not by runner, so that no runner keeps a path or an
            # id of its own (their lengths alone move runc's work a little).
            slots = [ocitest.Bundle(tmp / f"{sc}-slot{k}", template, rootfs) for k in range(len(runners))]
            phases = {name: [] for name in runners}
            shuffle = random.Random(a.seed).shuffle

            def timed(name: str, slot: int, i: int, measured: bool) -> float:
                time.sleep(a.settle)
                return cycle(runners[name], slots[slot], f"bench-{sc}-{i}-{slot}", configs[name],
                             phases[name] if measured else None, a.pause_after_create)

            times = interleaved(list(runners), a.warmup, a.iterations, shuffle, timed)
            p = summarize(times["plain"])
            for name in runners:
                s = summarize(times[name])
                print(f"{sc:8s} {name:7s} median {s['median']:7.2f} ms  mean {s['mean']:7.2f}  p10 {s['p10']:7.2f}  "
                      f"p90 {s['p90']:7.2f}")
            for name in runners:
                if name == "plain":
                    continue
                ratio, paired, low, high = against(times[name], times["plain"], a.seed)
                verdict = ""
                if name == "wrapper":
                    ok = ratio <= TARGETS[sc]
                    failed |= not ok
                    verdict = f"  target <= {TARGETS[sc]:.2f}: {'ok' if ok else 'MISSED'}"
                added = statistics.median(times[name]) - p["median"]
                print(f"{sc:8s} {name:7s} ratio {ratio:.3f} (added {added:+.2f} ms per cycle, "
                      f"paired median {paired:+.2f} ms, {paired / p['median'] * 100:+.1f} % of plain's; "
                      f"90 % of resampled runs {low:.3f} to {high:.3f}){verdict}")
            # gpuslice against one exec a call and nothing else: its own
            # share, apart from what an exec costs on this host (on a VM
            # that shadows page tables, ~2 % of a cycle without request).
            over, paired, low, high = against(times["wrapper"], times["floor"], a.seed)
            print(f"{sc:8s} wrapper over the floor {over:.3f} (paired median {paired:+.2f} ms per cycle; "
                  f"90 % of resampled runs {low:.3f} to {high:.3f}): what gpuslice adds to one exec a call")
            if a.phases:
                for name in runners:
                    medians = [statistics.median(ph[k] for ph in phases[name]) for k in range(len(PHASES))]
                    print(f"{sc:8s} {name:7s} phases " +
                          "  ".join(f"{ph} {m:6.2f}" for ph, m in zip(PHASES, medians)) + " ms (medians)")
                # Which verb the added time is in: each phase's paired
                # median against plain (a phase's own swings cancel less
                # than the cycle's, but its sign and size show).
                for name in (n for n in runners if n != "plain"):
                    added = [paired_median([ph[k] for ph in phases[name]], [ph[k] for ph in phases["plain"]])
                             for k in range(len(PHASES))]
                    print(f"{sc:8s} {name:7s} phases " +
                          "  ".join(f"{ph} {d:+6.2f}" for ph, d in zip(PHASES, added)) +
                          " ms (paired medians against plain)")
            before = interleaved(
                list(stamped), a.warmup, a.iterations, shuffle,
                lambda name, slot, i, measured: before_runtime(stamped[name], slots[slot],
                                                               f"bench-{sc}-before-{i}-{slot}", configs[name], stamp))
            pre = {name: [b for b, _ in pairs] for name, pairs in before.items()}
            runc = {name: [r for _, r in pairs] for name, pairs in before.items()}
            for name in (n for n in stamped if n != "floor"):
                own = paired_median(pre[name], pre["floor"])
                print(f"{sc:8s} {name:7s} before the runtime {statistics.median(pre[name]):.2f} ms, floor "
                      f"{statistics.median(pre['floor']):.2f} ms (spawn to runc's start, medians): gpuslice's "
                      f"own {own:+.2f} ms (paired median)")
                # Whether runc, once started, is slower for having been
                # exec'd by gpuslice (its config, its fds, the recorder
                # waiting beside it) than by exec_floor.
                slower = paired_median(runc[name], runc["floor"])
                print(f"{sc:8s} {name:7s} runc's own create {statistics.median(runc[name]):.2f} ms, floor "
                      f"{statistics.median(runc['floor']):.2f} ms (runc's start to its exit, medians): "
                      f"{slower:+.2f} ms (paired median)")
            left = [c for c in plain.list_ids() if not c.startswith(NODE_PREFIX)]
            if left:
                raise SystemExit(f"containers left behind: {left}")
            # A limited container's dir is its monitor's to remove, as the
            # init ends, while the delete runs: given a moment on a busy
            # machine, not left behind.
            containers = tmp / "state" / "containers"
            deadline = time.monotonic() + 5
            while True:
                leftover = [p for p in containers.glob("*") if not p.name.startswith(NODE_PREFIX)] \
                    if containers.exists() else []
                if not leftover or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            if leftover:
                raise SystemExit(f"state left behind: {leftover}")
        for i in range(a.node_containers):
            wrapped.delete(f"{NODE_PREFIX}{i}", force=True)
        return 1 if (failed and a.check) else 0
    finally:
        if rcu_was is not None:
            benchlib.restore_rcu(rcu_was)
        # What a failed run left running (the node's containers included)
        # would outlive the run.
        root = tmp / "runtime-state"
        for entry in root.iterdir() if root.is_dir() else []:
            subprocess.run([lowlevel, "--root", str(root), "delete", "--force", entry.name], check=False,
                           capture_output=True)
        if not a.keep:
            if on_tmpfs:
                subprocess.run(["umount", str(tmp)], check=False)
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
