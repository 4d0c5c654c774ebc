#!/usr/bin/env python3
"""NodePrepareResources latency and gpuslice-kubelet-plugin's memory.

The plugin runs on a fake driver tree against the tests' stand-ins
(tests/integration/kubelet_standin.py: kubelet's DRA client over the unix
socket, the API server over HTTPS on loopback), as test_kubelet_plugin.py
runs it. Each prepared claim is a new one (a claim prepared already is
answered from the checkpoint): a GET of the claim, its CDI spec written
(renamed into place), the checkpoint once per call, the answer.

Baseline in the same run, interleaved: one GET of a claim from the same
stand-in by this process (Python's own HTTPS client): a round trip that
preparing a claim cannot do without.

Baseline for memory: rss_floor (bench/kubelet_plugin/rss_floor.cpp, built
beside the plugin), a program that links the plugin's libraries, serves
gRPC on a unix socket and makes one HTTPS request to the same stand-in,
and nothing else: the RSS the libraries take before any of the plugin's
code runs.

Run as root:  bench/kubelet_plugin/bench_prepare.py --build build
Targets: one claim <= 5 ms and 50 claims in one call <= 100 ms (medians);
RSS <= 16 MiB idle and after 1,000 prepare/unprepare cycles, with no growth
over the last 500 (--check: exit 1 when one is missed).
"""
from __future__ import annotations

import argparse
import os
import shlex
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "integration"))


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build", help="the build dir (its bin/ and test fakes)")
    ap.add_argument("-n", type=int, default=200, help="single-claim calls (and baseline GETs)")
    ap.add_argument("--batches", type=int, default=20, help="calls of 50 claims")
    ap.add_argument("--cycles", type=int, default=1000, help="prepare/unprepare cycles for the memory check")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args()
    build = Path(args.build).resolve()
    os.environ.setdefault("GPUSLICE_KUBELET_PLUGIN", str(build / "bin" / "gpuslice-kubelet-plugin"))
    os.environ.setdefault("GPUSLICE_FAKE_CUDA", str(build / "tests" / "fakes" / "lib" / "libcuda.so.1"))
    os.environ.setdefault("GPUSLICE_FAKE_NVML", str(build / "tests" / "fakes" / "lib" / "libnvidia-ml.so.1"))
    from test_kubelet_plugin import NODE, Node, claim, result  # noqa: E402  (the test's own setup)

    print("# " + " ".join(shlex.quote(a) for a in [sys.executable] + sys.argv))
    tmp = Path(tempfile.mkdtemp(prefix="kp-bench-"))
    node = Node(tmp)
    kubelet = node.start()
    ctx = ssl.create_default_context(cafile=str(node.api.ca))
    uids = (f"5c2d4d1e-0000-4000-8000-{i:012x}" for i in range(1, 10**9))

    def fresh(n: int) -> list[dict]:
        out = []
        for _ in range(n):
            uid = next(uids)
            name = f"c-{uid[-8:]}"
            node.api.allocate("bench", name, uid, [result("gpu-0", "1Gi", uid)])
            out.append({"namespace": "bench", "uid": uid, "name": name})
        return out

    def baseline_get(ref: dict) -> float:
        req = urllib.request.Request(
            f"{node.api.url}/apis/resource.k8s.io/v1/namespaces/{ref['namespace']}/resourceclaims/{ref['name']}",
            headers={"Authorization": f"Bearer {node.api.token}"})
        t = time.perf_counter()
        urllib.request.urlopen(req, context=ctx).read()
        return (time.perf_counter() - t) * 1e3

    def timed_prepare(claims: list[dict]) -> float:
        t = time.perf_counter()
        got = kubelet.prepare(claims)
        ms = (time.perf_counter() - t) * 1e3
        bad = [r["error"] for r in got.values() if r["error"]]
        if bad or len(got) != len(claims):
            raise SystemExit(f"prepare failed: {bad[:3]}")
        return ms

    floor = subprocess.Popen([str(build / "bench" / "kubelet_plugin" / "rss_floor"), str(tmp / "floor.sock"),
                              f"{node.api.url}/apis/resource.k8s.io", str(node.api.ca), node.api.token],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        if floor.stdout.readline().strip() != "ready":
            raise SystemExit("rss_floor did not start")
        rss_floor = rss_kib(floor.pid)
    finally:
        floor.communicate("")
    try:
        rss_idle = rss_kib(node.proc.pid)
        for c in fresh(5):  # warm-up: the first GET, the first spec
            timed_prepare([c])
        one, base = [], []
        for _ in range(args.n):
            (c,) = fresh(1)
            base.append(baseline_get(c))
            one.append(timed_prepare([c]))
        fifty = [timed_prepare(fresh(50)) for _ in range(args.batches)]
        kubelet.unprepare([{"namespace": ns, "uid": c["metadata"]["uid"], "name": name}
                           for (ns, name), c in node.api.claims.items()])
        node.api.claims.clear()
        rss_at = {}
        for i in range(1, args.cycles + 1):
            (c,) = fresh(1)
            timed_prepare([c])
            kubelet.unprepare([c])
            del node.api.claims[(c["namespace"], c["name"])]
            if i in (args.cycles // 2, args.cycles):
                rss_at[i] = rss_kib(node.proc.pid)
    finally:
        node.stop()
        node.api.close()

    def med(xs):
        return statistics.median(xs)

    print(f"one claim     median {med(one):7.2f} ms  p10 {sorted(one)[len(one) // 10]:6.2f}  "
          f"p90 {sorted(one)[len(one) * 9 // 10]:6.2f}  ({args.n} calls)")
    print(f"baseline GET  median {med(base):7.2f} ms  (the stand-in's answer to this process, {args.n} GETs)")
    print(f"one claim over the baseline: ratio {med(one) / med(base):.2f}, +{med(one) - med(base):.2f} ms")
    print(f"50 claims     median {med(fifty):7.2f} ms  max {max(fifty):6.2f}  ({args.batches} calls)")
    half, full = rss_at[args.cycles // 2], rss_at[args.cycles]
    print(f"RSS idle {rss_idle} KiB; after {args.cycles // 2} cycles {half} KiB, after {args.cycles} {full} KiB")
    print(f"RSS baseline: rss_floor (the same libraries serving gRPC, one HTTPS request) {rss_floor} KiB; "
          f"the plugin's own idle +{rss_idle - rss_floor} KiB, ratio {rss_idle / rss_floor:.2f}")
    missed = []
    if med(one) > 5:
        missed.append("one claim > 5 ms")
    if med(fifty) > 100:
        missed.append("50 claims > 100 ms")
    if max(rss_idle, full) > 16 * 1024:
        missed.append("RSS > 16 MiB")
    if full > half + 256:
        missed.append("RSS grew by more than 256 KiB over the last half")
    print("targets: " + ("met" if not missed else "MISSED: " + "; ".join(missed)))
    return 1 if missed and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
