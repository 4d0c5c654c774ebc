#!/usr/bin/env python3
"""The delay from a breach to its action: how long a process that goes over
its container's GPU memory limit without the interposer keeps the memory
before its gpuslice-shim kills it.

Each round starts a busybox container (gpuslice-runtime + runc, a fake
GPU's CDI device with a 256 MiB limit, monitor.action = kill, the fake
NVML) whose only program is tests/fakes/bypass_static: static, the fake
driver linked in, no interposer; it allocates 300 MiB and prints a line
once it has them. The delay is from that line to the shell's report of
its SIGKILL, both seen by polling the container's output every 2 ms from
here (so +-2 ms). The fake driver keeps each process's usage in
/run/fake-nvidia-driver/processes, which the fake NVML reads, as the
kernel driver's accounting would be read by the real one.

Expected: the monitor checks once per monitor.interval, so the delay is
spread over 0..interval plus the time of one check (an NVML process
list and the cgroup's pids). Baseline in the same run: the same container
with the limit still in place but nothing over it (the program exits by
itself after 0 s), from its line to its exit: what the measurement itself
costs.

Run as root:
  bench/shim/bench_breach.py --wrapper build/bin/gpuslice-runtime
"""
from __future__ import annotations

import argparse
import json
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

KIND = "bench.gpuslice.dev/gpu"
DRIVER_DIR = Path("/run/fake-nvidia-driver")


def wait_line(path: Path, needle: str, timeout: float = 60) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and needle in path.read_text():
            return time.monotonic()
        time.sleep(0.002)
    raise SystemExit(f"no {needle!r} in {path} after {timeout} s: {path.read_text() if path.exists() else ''}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    benchlib.add_wrapper_argument(ap, "gpuslice-runtime; gpuslice-shim beside it")
    ap.add_argument("--rounds", type=int, default=7, help="breaches per interval (default 7)")
    ap.add_argument("--intervals", default="100ms,1s", help="monitor.interval values (default 100ms,1s)")
    a = ap.parse_args()
    wrapper = benchlib.wrapper_as_root(a)
    build = Path(wrapper).resolve().parent.parent
    interposer = str(build / "interposer" / "libgpuslice-cuda.so")
    hook = str(build / "bin" / "gpuslice-hook")
    nvml = str(build / "tests" / "fakes" / "lib" / "libnvidia-ml.so.1")
    bypass = build / "tests" / "fakes" / "bypass_static"
    runc = shutil.which("runc")
    ocitest.become_subreaper()
    tmp = Path(tempfile.mkdtemp(prefix="gpuslice-bench-breach-"))
    root = tmp / "runtime-state"
    plain = ocitest.Runtime("runc", [runc], root)
    shutil.rmtree(DRIVER_DIR, ignore_errors=True)
    (DRIVER_DIR / "processes").mkdir(parents=True)
    try:
        rootfs = ocitest.build_busybox_rootfs(tmp / "rootfs")
        for d in ("etc", "run"):
            (rootfs / d).mkdir(exist_ok=True)
        shutil.copy(bypass, rootfs / "bin" / "bypass_static")
        template = ocitest.runc_spec_template(tmp / "template")
        os.mknod(tmp / "nvidia0", 0o666 | 0o020000, os.makedev(195, 0))
        spec = {"cdiVersion": "0.6.0", "kind": KIND,
                "containerEdits": {"mounts": [{"hostPath": str(DRIVER_DIR), "containerPath": str(DRIVER_DIR),
                                               "options": ["rbind", "rw", "nosuid", "nodev"]}]},
                "devices": [{"name": "0", "containerEdits": {
                    "env": ["GPUSLICE_MEMORY_LIMIT=256Mi"],
                    "deviceNodes": [{"path": "/dev/nvidia0", "hostPath": str(tmp / "nvidia0")}]}}]}
        (tmp / "cdi").mkdir()
        (tmp / "cdi" / "bench.json").write_text(json.dumps(spec))
        print(f"# {shlex.join([sys.executable, *sys.argv])}")
        print(f"# wrapper {wrapper}, {a.rounds} breaches per interval, {os.cpu_count()} cpus, "
              f"kernel {os.uname().release}")
        results = {}
        for interval in ["baseline", *a.intervals.split(",")]:
            conf = tmp / "gpuslice.toml"
            conf.write_text(f'[cdi]\nspec-dirs = ["{tmp / "cdi"}"]\n\n[runtime]\nruntimes = ["{runc}"]\n'
                            f'state-dir = "{tmp / "state"}"\nhook-path = "{hook}"\n'
                            f'interposer-path = "{interposer}"\n'
                            f'\n[monitor]\ninterval = "{"1s" if interval == "baseline" else interval}"\n'
                            f'action = "kill"\nnvml-path = "{nvml}"\n'
                            f'\n[log]\nlevel = "warn"\ntarget = "file"\ndirectory = "{tmp / "log"}"\n')
            wrapped = ocitest.Runtime("gpuslice", [wrapper], root, env=dict(os.environ, GPUSLICE_CONFIG=str(conf)),
                                      lowlevel=plain)
            delays = []
            for i in range(a.rounds):
                cid = f"breach-{interval}-{i}"
                bundle = ocitest.Bundle(tmp / cid, template, rootfs)
                bundle.annotate("cdi.k8s.io/bench", f"{KIND}=0")
                # baseline: under the limit, and it ends by itself at once
                program = "/bin/bypass_static 100 0" if interval == "baseline" else "/bin/bypass_static 300 30"
                bundle.shell(f"{program}; echo exit $?; sleep 30")
                bundle.write()
                wrapped.create(bundle, cid)
                wrapped.start(cid)
                out = bundle.path / f"{cid}.out"
                t_alloc = wait_line(out, "MiB: 0")
                t_end = wait_line(out, "exit ")
                if interval != "baseline" and "exit 137" not in out.read_text():
                    raise SystemExit(f"{cid}: not killed: {out.read_text()}")
                delays.append((t_end - t_alloc) * 1000)
                wrapped.run("delete", "--force", cid)
            results[interval] = delays
            print(f"{interval:>9}: breach to kill median {statistics.median(delays):7.1f} ms, "
                  f"min {min(delays):7.1f}, max {max(delays):7.1f}  ({len(delays)} rounds)"
                  if interval != "baseline" else
                  f" baseline: line to exit, nothing to kill, median {statistics.median(delays):7.1f} ms, "
                  f"max {max(delays):7.1f}")
        print(json.dumps(results))
        return 0
    finally:
        plain.cleanup()
        shutil.rmtree(DRIVER_DIR, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
