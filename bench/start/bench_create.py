#!/usr/bin/env python3
"""Creates alone, A/B: the wall time of `gpuslice-runtime create` of a
container with 2 CDI devices, for two or more builds, interleaved (the
order shuffled every iteration), with /bin/true standing as runc.

Why: bench_start.py's cycles hold runc's own create, which swings by
milliseconds on a busy VM; a change worth 0.1 ms to gpuslice's part
(a few page faults, a parse) drowns there. Here only gpuslice's own
work and its exec of the runtime are timed. The figure is the paired
median against the first build (per-iteration difference).

With /bin/true as the runtime the create writes no pid file: its state
dir is stale at once, and the delete after each create removes it (a
build before 2026-12-06 left an init recorder beside the runtime, which
found no init and removed the dir on the other CPU). The spec cache and the
front's record are filled by warm-up creates first. The bundle and the
state dir are on a tmpfs, as containerd's bundles and /run are on a node:
on this VM's ext4, the fsyncs of the state dir and of config.json took
~1 ms of each create, which a node does not pay and which drowned what
a change saves.

With --refused, each create asks for a device the spec does not have and
is refused (exit 1): the path of an error, thrown and caught.

With --verb start (or delete), each call is the start (delete) of a
container that has no state of gpuslice's: what the entry does for every
start and delete of a container without a request, and its exec of the
runtime. --floor adds a program that only execs (exec_floor_bare, with
/bin/true as GPUSLICE_FLOOR_RUNTIME) as one more arm: the exec alone, the
least any wrapper costs.

Run as root:  bench/start/bench_create.py OLD_BUILD NEW_BUILD [-n 300] [--refused]
              bench/start/bench_create.py BUILD --verb start --floor build/bench/start/exec_floor_bare
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KIND = "bench.example/gpu"
ANNOTATION = "cdi.k8s.io/gpuslice-bench"


def write_setup(work: Path, refused: bool, builds: int, log_level: str = "info") -> tuple[list[Path], bytes]:
    """A spec dir with two devices (host nodes that exist everywhere), the
    config, and a bundle's config.json asking for both (or, refused, for
    one the spec lacks); the config's paths and config.json's bytes.

    The config is written once for each build, at a path of its own: the
    front keeps one record per config path, and two builds whose
    records differ (a new record format) would otherwise each replace the
    other's on every create, and neither would be timed as a node runs it."""
    specs = work / "cdi"
    specs.mkdir()
    spec = {"cdiVersion": "0.6.0", "kind": KIND,
            "devices": [{"name": "0", "containerEdits": {"deviceNodes": [{"path": "/dev/null"}]}},
                        {"name": "1", "containerEdits": {"deviceNodes": [{"path": "/dev/zero"}]}}],
            "containerEdits": {"env": ["BENCH_DRIVER=1"]}}
    (specs / "bench.json").write_text(json.dumps(spec))
    configs = [work / f"gpuslice-{i}.toml" for i in range(builds)]
    config_text = (f'[cdi]\nspec-dirs = ["{specs}"]\n\n[runtime]\nruntimes = ["/bin/true"]\n'
                   f'state-dir = "{work / "state"}"\n\n[log]\nlevel = "{log_level}"\ntarget = "file"\n'
                   f'directory = "{work / "log"}"\n')
    for config in configs:
        config.write_text(config_text)
    (work / "bundle" / "rootfs").mkdir(parents=True)
    spec_json = {"ociVersion": "1.0.2", "process": {"args": ["true"], "cwd": "/", "env": ["PATH=/bin"]},
                 "root": {"path": "rootfs"},
                 # the device cgroup's deny-all, as runc's and containerd's specs have it
                 "linux": {"namespaces": [{"type": "mount"}],
                           "resources": {"devices": [{"allow": False, "access": "rwm"}]}},
                 "annotations": {ANNOTATION: f"{KIND}=7" if refused else f"{KIND}=0,{KIND}=1"}}
    return configs, json.dumps(spec_json).encode()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("builds", nargs="+", help="gpuslice-runtime binaries; the first is the baseline")
    ap.add_argument("-n", "--iterations", type=int, default=300, help="creates per build (default 300)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed creates per build first (default 3)")
    ap.add_argument("--work-fs", choices=["tmpfs", "disk"], default="tmpfs",
                    help="what the bundle and the state dir live on: a tmpfs mounted for the run (default), as "
                         "/run is on a node, or the disk under $TMPDIR (whose fsyncs then weigh on each create)")
    ap.add_argument("--log-level", default="info",
                    help="the builds' log level (default info, a node's default: each create writes one line)")
    ap.add_argument("--refused", action="store_true",
                    help="time creates that ask for a device the spec lacks, each refused with exit status 1")
    ap.add_argument("--verb", choices=["create", "start", "delete"], default="create",
                    help="the call timed (default create); start and delete are of a container without state")
    ap.add_argument("--floor", default="", metavar="PROGRAM",
                    help="with --verb start or delete, also time PROGRAM (exec_floor_bare) exec'ing /bin/true")
    a = ap.parse_args()
    if a.verb != "create" and a.refused:
        ap.error("--refused is a create's")
    if a.floor and a.verb == "create":
        ap.error("--floor is for --verb start or delete (a create's work is more than an exec)")
    if os.geteuid() != 0:
        raise SystemExit("bench_create.py: run as root (the spec cache and the front's record are root's)")
    builds = [str(Path(b).resolve()) for b in a.builds]
    floor = str(Path(a.floor).resolve()) if a.floor else ""
    for b in builds + ([floor] if floor else []):
        if not os.access(b, os.X_OK):
            raise SystemExit(f"bench_create.py: {b} is not an executable")
    print(f"# {shlex.join([sys.executable, *sys.argv])}")
    print(f"# {len(builds)} builds, {a.iterations} {a.verb}s each (+{a.warmup} warm-up), {os.cpu_count()} cpus, "
          f"kernel {os.uname().release}, {a.verb}, runtime /bin/true, work dir on {a.work_fs}, log level {a.log_level}"
          f"{', creates refused' if a.refused else ''}")
    with tempfile.TemporaryDirectory(prefix="gpuslice-bench-create-") as tmp:
        if a.work_fs == "tmpfs":
            mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0700", "gpuslice-bench", tmp],
                                     stderr=subprocess.PIPE, text=True)
            if mounted.returncode != 0:
                raise SystemExit(f"cannot mount a tmpfs on {tmp}: {mounted.stderr.strip()} (or use --work-fs disk)")
        try:
            run_calls(Path(tmp), builds, floor, a)
        finally:
            if a.work_fs == "tmpfs":
                subprocess.run(["umount", tmp], check=False)
    return 0


def run_calls(work: Path, builds: list[str], floor: str, a: argparse.Namespace) -> None:
    """The interleaved calls in `work`, and their figures printed."""
    configs, config_json = write_setup(work, a.refused, len(builds), a.log_level)
    expected = 1 if a.refused else 0
    quiet = [(os.POSIX_SPAWN_OPEN, 2, "/dev/null", os.O_WRONLY, 0)] if a.refused else []  # the refusal, each time
    bundle = work / "bundle"
    # by index: the very same binary may be given twice, to see the noise
    envs = [{"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "GPUSLICE_CONFIG": str(c)} for c in configs]
    root = work / "runtime-state"
    arms = list(builds)
    if floor:
        arms.append(floor)
        envs.append({"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "GPUSLICE_FLOOR_RUNTIME": "/bin/true"})

    def spawned(argv: list[str], env: dict, expected: int = 0, file_actions=()) -> float:
        """Seconds from spawning argv to its exit, which must be `expected`."""
        start = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=file_actions)
        _, status = os.waitpid(pid, 0)
        took = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != expected:
            raise SystemExit(f"bench_create.py: {shlex.join(argv)} exited {os.waitstatus_to_exitcode(status)}, "
                             f"not {expected}")
        return took

    def call(k: int, cid: str) -> float:
        """One start or delete of a container without state (--verb)."""
        return spawned([arms[k], "--root", str(root), a.verb, cid], envs[k])

    def create(k: int, cid: str) -> float:
        build, env = builds[k], envs[k]
        (bundle / "config.json").write_bytes(config_json)  # the create rewrites it
        # with a pid file, as containerd creates
        took = spawned([build, "--root", str(root), "create", "--bundle", str(bundle), "--pid-file",
                        str(bundle / "init.pid"), cid], env, expected, quiet)
        subprocess.run([build, "--root", str(root), "delete", "--force", cid], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        return took

    timed = create if a.verb == "create" else call
    for i in range(a.warmup):
        for k in range(len(arms)):
            timed(k, f"warm{i}")
    times: list[list[float]] = [[] for _ in arms]
    shuffle = random.Random(1).shuffle
    for i in range(a.iterations):
        order = list(range(len(arms)))
        shuffle(order)
        for k in order:
            times[k].append(timed(k, f"c{i}"))
    for k, (b, took) in enumerate(zip(arms, times)):
        paired = statistics.median(x - y for x, y in zip(took, times[0]))
        above_floor = ""
        if floor and k < len(builds):
            above_floor = f"  paired vs floor {statistics.median(x - y for x, y in zip(took, times[-1])) * 1e3:+.3f} ms"
        print(f"{a.verb} median {statistics.median(took) * 1e3:7.3f} ms  p10 "
              f"{statistics.quantiles(took, n=10)[0] * 1e3:7.3f}  paired vs first {paired * 1e3:+.3f} ms"
              f"{above_floor}  {b}{'  (floor)' if floor and k == len(builds) else ''}")

if __name__ == "__main__":
    sys.exit(main())
