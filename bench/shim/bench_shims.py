#!/usr/bin/env python3
"""Memory and CPU of the containers' monitors (gpuslice-shim), 20 at once.

Starts N busybox containers that sleep, each with a GPU memory limit (a
fake GPU's CDI device whose edits carry GPUSLICE_MEMORY_LIMIT), through
gpuslice-runtime + runc, so that N gpuslice-shim processes run; then reads
each one's memory (/proc/PID/status VmRSS, smaps_rollup Pss: its share of
pages mapped by several) and its CPU time over a quiet window. Baseline in
the same run: a `sleep` process (a small dynamically linked C program),
the floor of any dynamic program on this machine.

Two rounds: `fixed` (memory limit only: the monitor sleeps in poll until a
process connects or the container ends) and `burst` (a compute share with
the burst policy: the monitor publishes the container's activity every
20 ms).

Run as root:  bench/shim/bench_shims.py --wrapper build/bin/gpuslice-runtime
Target: RSS <= 2 MiB per monitor before NVML is loaded (--check: exit 1
when missed); CPU 0 between events in `fixed`.
"""
from __future__ import annotations

import argparse
import json
import os
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

RSS_TARGET_KIB = 2048
KIND = "bench.gpuslice.dev/gpu"


def kib(proc: Path, key: str, file: str = "status") -> int:
    for line in (proc / file).read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def shims_of(ids: set[str]) -> list[int]:
    return [pid for pid, argv in ocitest.monitors().items() if ids & set(argv)]


def measure(pids: list[int], window: float) -> dict:
    procs = [Path(f"/proc/{p}") for p in pids]
    rss = [kib(p, "VmRSS") for p in procs]
    anon = [kib(p, "RssAnon") for p in procs]
    pss = [kib(p, "Pss", "smaps_rollup") for p in procs]
    t0 = [cpu_ticks(p) for p in pids]
    time.sleep(window)
    t1 = [cpu_ticks(p) for p in pids]
    hz = os.sysconf("SC_CLK_TCK")
    cpu_ms = [(b - a) * 1000 / hz for a, b in zip(t0, t1)]
    return {"n": len(pids), "rss_kib": rss, "anon_kib": anon, "pss_kib": pss, "cpu_ms": cpu_ms, "window_s": window}


def report(name: str, m: dict) -> str:
    rss, pss, cpu = m["rss_kib"], m["pss_kib"], m["cpu_ms"]
    return (f"{name:8s} {m['n']:2d} processes  RSS median {statistics.median(rss):6.0f} KiB (max {max(rss)}, "
            f"anonymous {statistics.median(m['anon_kib']):.0f})  "
            f"PSS median {statistics.median(pss):6.0f} KiB (sum {sum(pss)})  "
            f"CPU {sum(cpu):7.1f} ms in {m['window_s']:.0f} s for all ({100 * sum(cpu) / 1000 / m['window_s'] / m['n']:.3f}% each)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    benchlib.add_wrapper_argument(ap, "gpuslice-runtime; gpuslice-shim beside it")
    ap.add_argument("--interposer", default="", help="libgpuslice-cuda.so (default: the build's, beside the wrapper)")
    ap.add_argument("-n", "--containers", type=int, default=20)
    ap.add_argument("--window", type=float, default=10.0, help="seconds of CPU measurement (default 10)")
    ap.add_argument("--json", action="store_true", help="also print the raw figures as JSON")
    ap.add_argument("--check", action="store_true", help="exit 1 when the RSS target is missed")
    a = ap.parse_args()
    wrapper = benchlib.wrapper_as_root(a)
    build = Path(wrapper).resolve().parent.parent
    interposer = a.interposer or str(build / "interposer" / "libgpuslice-cuda.so")
    hook = str(build / "bin" / "gpuslice-hook")
    runc = shutil.which("runc")
    ocitest.become_subreaper()

    tmp = Path(tempfile.mkdtemp(prefix="gpuslice-bench-shim-"))
    root = tmp / "runtime-state"
    plain = ocitest.Runtime("runc", [runc], root)
    try:
        rootfs = ocitest.build_busybox_rootfs(tmp / "rootfs")
        for d in ("etc", "run"):
            (rootfs / d).mkdir(exist_ok=True)
        template = ocitest.runc_spec_template(tmp / "template")
        os.mknod(tmp / "nvidia0", 0o666 | 0o020000, os.makedev(195, 0))
        spec = {"cdiVersion": "0.6.0", "kind": KIND, "devices": [
            {"name": "fixed", "containerEdits": {"env": ["GPUSLICE_MEMORY_LIMIT=1Gi"],
                                                 "deviceNodes": [{"path": "/dev/nvidia0", "hostPath": str(tmp / "nvidia0")}]}},
            {"name": "burst", "containerEdits": {"env": ["GPUSLICE_MEMORY_LIMIT=1Gi", "GPUSLICE_COMPUTE_LIMIT=30",
                                                         "GPUSLICE_COMPUTE_POLICY=burst"],
                                                 "deviceNodes": [{"path": "/dev/nvidia0", "hostPath": str(tmp / "nvidia0")}]}}]}
        (tmp / "cdi").mkdir()
        (tmp / "cdi" / "bench.json").write_text(json.dumps(spec))
        conf = tmp / "gpuslice.toml"
        conf.write_text(f'[cdi]\nspec-dirs = ["{tmp / "cdi"}"]\n\n[runtime]\nruntimes = ["{runc}"]\n'
                        f'state-dir = "{tmp / "state"}"\nhook-path = "{hook}"\ninterposer-path = "{interposer}"\n'
                        f'\n[admission]\nmax-containers-per-gpu = 0\n'
                        f'\n[log]\nlevel = "warn"\ntarget = "file"\ndirectory = "{tmp / "log"}"\n')
        wrapped = ocitest.Runtime("gpuslice", [wrapper], root, env=dict(os.environ, GPUSLICE_CONFIG=str(conf)),
                                  lowlevel=plain)
        print(f"# {shlex.join([sys.executable, *sys.argv])}")
        print(f"# wrapper {wrapper}, {a.containers} containers per round, {os.cpu_count()} cpus, "
              f"kernel {os.uname().release}")
        baseline = subprocess.Popen(["sleep", "3600"])
        time.sleep(0.2)
        results = {"sleep": measure([baseline.pid], a.window)}
        baseline.kill()
        baseline.wait()
        print(report("sleep", results["sleep"]))
        for round_name in ("fixed", "burst"):
            ids = set()
            for i in range(a.containers):
                cid = f"shim-{round_name}-{i}"
                bundle = ocitest.Bundle(tmp / cid, template, rootfs)
                bundle.annotate("cdi.k8s.io/bench", f"{KIND}={round_name}")
                bundle.shell("sleep 3600")
                bundle.write()
                wrapped.create(bundle, cid)
                wrapped.start(cid)
                ids.add(cid)
            time.sleep(1)
            pids = shims_of(ids)
            if len(pids) != a.containers:
                raise SystemExit(f"{len(pids)} gpuslice-shim processes for {a.containers} containers")
            results[round_name] = measure(pids, a.window)
            print(report(round_name, results[round_name]))
            for cid in ids:
                wrapped.run("delete", "--force", cid)
        base = statistics.median(results["sleep"]["rss_kib"])
        worst = max(max(results[r]["rss_kib"]) for r in ("fixed", "burst"))
        ok = worst <= RSS_TARGET_KIB
        print(f"RSS of a monitor / RSS of sleep: {statistics.median(results['fixed']['rss_kib']) / base:.2f}; "
              f"worst {worst} KiB, target <= {RSS_TARGET_KIB} KiB: {'ok' if ok else 'MISSED'}")
        if a.json:
            print(json.dumps(results))
        return 1 if (a.check and not ok) else 0
    finally:
        plain.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
