#!/usr/bin/env python3
"""Container start overhead of a runc-compatible wrapper (gpuslice-runtime)
against the plain low-level runtime.

Each cycle is create, start, wait (for the container's init to exit), delete
of a busybox container running `true`, timed from before create to after
delete. Wrapper and plain runtime alternate within each iteration (the order
flips every iteration), so drift of the machine hits both alike.

Two scenarios:
  none     no GPU request: the wrapper must only exec the runtime
  devices  2 CDI devices (nvidia.com/gpu=0,1 of a fake GPU made with mknod)
           requested by annotation through the wrapper; the plain runtime
           gets the same edits already written into config.json, so the
           difference is what the wrapper costs, not what the devices cost

Run as root:  bench/start/bench_start.py --wrapper build/shim/gpuslice-runtime
Targets: median ratio <= 1.05 (none), <= 1.10 (devices); --check makes a
missed target exit 1.
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "integration"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import benchlib  # noqa: E402
import ocitest  # noqa: E402

TARGETS = {"none": 1.05, "devices": 1.10}
ANNOTATION = "cdi.k8s.io/gpuslice-bench"


PHASES = ("create", "start", "wait", "delete")


def cycle(rt: ocitest.Runtime, bundle: ocitest.Bundle, cid: str, config: bytes, phases: list | None = None) -> float:
    """One create/start/wait/delete, in ms; each phase's ms appended to
    `phases` when given."""
    bundle.config_path.write_bytes(config)  # the wrapper may have rewritten it
    pid_file = bundle.path / "pid"
    out = bundle.path / "out"
    t = [time.perf_counter()]
    rt.create(bundle, cid, out=out, pid_file=pid_file)
    t.append(time.perf_counter())
    pid = int(pid_file.read_text())
    rt.start(cid)
    t.append(time.perf_counter())
    rc = ocitest.wait_pid(pid, 30)
    t.append(time.perf_counter())
    rt.delete(cid)
    t.append(time.perf_counter())
    if rc != 0:
        raise SystemExit(f"{rt.name}: container {cid} exited {rc}: {out.with_suffix('.err').read_text()}")
    if phases is not None:
        phases.append([(b - a) * 1000.0 for a, b in zip(t, t[1:])])
    return (t[-1] - t[0]) * 1000.0


def summarize(times: list[float]) -> dict:
    s = sorted(times)
    return {"median": statistics.median(s), "mean": statistics.fmean(s),
            "p10": s[int(0.1 * (len(s) - 1))], "p90": s[int(0.9 * (len(s) - 1))]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    benchlib.add_wrapper_argument(ap, "the runc-compatible wrapper")
    ap.add_argument("--runtime", default="runc", help="low-level runtime: runc or crun or a path (default runc)")
    ap.add_argument("-n", "--iterations", type=int, default=50, help="cycles per runtime and scenario (default 50)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed cycles first (default 3)")
    ap.add_argument("--scenario", choices=["none", "devices", "both"], default="both")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    ap.add_argument("--phases", action="store_true",
                    help="also print the median of each phase (create, start, wait, delete) per runtime")
    a = ap.parse_args()

    wrapper = benchlib.wrapper_as_root(a)
    lowlevel = shutil.which(a.runtime) or a.runtime
    if not os.access(lowlevel, os.X_OK):
        raise SystemExit(f"runtime {a.runtime!r} not found")
    if os.path.basename(lowlevel) == "crun":
        ocitest.prepare_cgroups_for_crun()
    ocitest.become_subreaper()

    tmp = Path(tempfile.mkdtemp(prefix="gpuslice-bench-"))
    try:
        rootfs = ocitest.build_busybox_rootfs(tmp / "rootfs")
        (rootfs / ocitest.FakeGpu.MOUNT_DEST.lstrip("/")).mkdir(parents=True, exist_ok=True)
        template = ocitest.runc_spec_template(tmp / "template")
        gpu = ocitest.FakeGpu(tmp / "gpu", with_hook=False)
        hook = os.environ.get("GPUSLICE_HOOK") or str(Path(wrapper).resolve().parent.parent / "hook" / "gpuslice-hook")
        conf = tmp / "gpuslice.toml"
        conf.write_text(f'[cdi]\nspec-dirs = ["{gpu.spec_dir}"]\n\n[runtime]\nruntimes = ["{lowlevel}"]\n'
                        f'state-dir = "{tmp / "state"}"\n' +
                        f'hook-path = "{os.path.abspath(hook)}"\n' +
                        f'\n[log]\nlevel = "warn"\ntarget = "file"\ndirectory = "{tmp / "log"}"\n')
        root = tmp / "runtime-state"
        plain = ocitest.Runtime(os.path.basename(lowlevel), [lowlevel], root)
        wrapped = ocitest.Runtime("wrapper", [wrapper], root, env=dict(os.environ, GPUSLICE_CONFIG=str(conf)),
                                  lowlevel=plain)

        scenarios = ["none", "devices"] if a.scenario == "both" else [a.scenario]
        print(f"# {shlex.join([sys.executable, *sys.argv])}")
        print(f"# wrapper {wrapper}, runtime {lowlevel}, {a.iterations} iterations (+{a.warmup} warm-up), "
              f"{os.cpu_count()} cpus, kernel {os.uname().release}")
        failed = False
        for sc in scenarios:
            bp = ocitest.Bundle(tmp / f"{sc}-plain", template, rootfs)
            bw = ocitest.Bundle(tmp / f"{sc}-wrapper", template, rootfs)
            if sc == "devices":
                gpu.apply_by_hand(bp.spec, devices=("0", "1"))
                bw.annotate(ANNOTATION, gpu.qualified("0", "1"))
            cfg_p, cfg_w = bp.write(), bw.write()
            times = {"plain": [], "wrapper": []}
            phases = {"plain": [], "wrapper": []}
            for i in range(a.warmup + a.iterations):
                order = [("plain", plain, bp, cfg_p), ("wrapper", wrapped, bw, cfg_w)]
                if i % 2:
                    order.reverse()
                for name, rt, b, cfg in order:
                    ms = cycle(rt, b, f"bench-{sc}-{name}-{i}", cfg, phases[name] if i >= a.warmup else None)
                    if i >= a.warmup:
                        times[name].append(ms)
            p, w = summarize(times["plain"]), summarize(times["wrapper"])
            ratio = w["median"] / p["median"]
            # per-iteration differences: robust to drift of a shared machine
            paired = statistics.median(x - y for x, y in zip(times["wrapper"], times["plain"]))
            ok = ratio <= TARGETS[sc]
            failed |= not ok
            print(f"{sc:8s} plain   median {p['median']:7.2f} ms  mean {p['mean']:7.2f}  p10 {p['p10']:7.2f}  p90 {p['p90']:7.2f}")
            print(f"{sc:8s} wrapper median {w['median']:7.2f} ms  mean {w['mean']:7.2f}  p10 {w['p10']:7.2f}  p90 {w['p90']:7.2f}")
            print(f"{sc:8s} ratio {ratio:.3f} (added {w['median'] - p['median']:+.2f} ms per cycle, "
                  f"paired median {paired:+.2f} ms)  "
                  f"target <= {TARGETS[sc]:.2f}: {'ok' if ok else 'MISSED'}")
            if a.phases:
                for name in ("plain", "wrapper"):
                    medians = [statistics.median(p[k] for p in phases[name]) for k in range(len(PHASES))]
                    print(f"{sc:8s} {name:7s} phases " +
                          "  ".join(f"{ph} {m:6.2f}" for ph, m in zip(PHASES, medians)) + " ms (medians)")
            left = plain.list_ids()
            if left:
                raise SystemExit(f"containers left behind: {left}")
        return 1 if (failed and a.check) else 0
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
