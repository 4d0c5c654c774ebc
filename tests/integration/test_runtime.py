"""runc and crun, plain and behind gpuslice-runtime.

The plain-runtime tests validate the harness and every assertion (the fake
GPU's CDI edits are applied by hand, as CDI says they must be applied); the
`gpuslice` tests then run the same assertions through the wrapper, which is
called exactly like runc and finds its CDI spec dirs and low-level runtime
in the file GPUSLICE_CONFIG names.
"""
from __future__ import annotations

import concurrent.futures
import json
import os
import subprocess

from pathlib import Path

import pytest

import ocitest
from conftest import RUNTIMES, tool, write_gpuslice_config

ENXIO = os.strerror(6)   # "No such device or address": the node reached the (absent) driver
EPERM = os.strerror(1)   # "Operation not permitted": the device cgroup said no
EROFS = os.strerror(30)  # "Read-only file system"


def run_probe(rt: ocitest.Runtime, bundle: ocitest.Bundle, cid: str) -> dict[str, str]:
    bundle.args = ["sh", "/probe.sh"]
    rc, out, err = rt.run_container(bundle, cid)
    assert rc == 0, f"probe exited {rc}: {out}{err}"
    facts = ocitest.parse_probe(out)
    assert facts.get("done") == "1", out
    return facts


def assert_fake_gpu_injected(facts: dict[str, str], gpu: ocitest.FakeGpu, cid: str, devices=("0",), env=True):
    """Everything the fake GPU's CDI spec asks for, seen from inside `cid`;
    without `env` (gpuslice-hook injecting: a created process's env is
    fixed), the spec's env is checked absent instead."""
    mode = f"{gpu.NODE_MODE:o}"
    expected = {"/dev/nvidiactl": 255, **{f"/dev/nvidia{d}": int(d) for d in devices}}
    for path, minor in expected.items():
        # type, major and minor (hex, as stat prints them), mode, uid, gid
        assert facts[f"node:{path}"] == f"character special file c3 {minor:x} {mode} 0 0", facts
        # the device cgroup lets it through: the open reaches the (absent) driver
        assert ENXIO in facts[f"open:{path}"], facts
        assert EPERM not in facts[f"open:{path}"], facts
    for d in ("0", "1"):
        if d not in devices:
            assert facts[f"node:/dev/nvidia{d}"] == "absent", facts
            assert facts[f"env:GPUSLICE_FAKE_GPU{d}"] == "unset", facts
        else:
            assert facts[f"env:GPUSLICE_FAKE_GPU{d}"] == ("present" if env else "unset"), facts
    assert facts["env:GPUSLICE_FAKE_DRIVER"] == ("1" if env else "unset"), facts
    assert facts["mount:content"] == gpu.MOUNT_CONTENT, facts
    assert "ro" in facts["mount:opts"].split(","), facts
    assert EROFS in facts["mount:write"], facts
    assert not (gpu.host_dir / "written").exists()
    # the createContainer hook ran on the host, with the state of this
    # container on stdin and exactly the env the spec gave it
    state = json.loads((gpu.markers / f"{cid}.state.json").read_text())
    assert state["id"] == cid
    env = (gpu.markers / f"{cid}.env").read_text().split("\n")
    assert "GPUSLICE_FAKE_HOOK=1" in env
    assert not any(e.startswith(("GPUSLICE_FAKE_GPU", "GPUSLICE_FAKE_DRIVER", "TERM=")) for e in env), env


# --------------------------------------------------------------------------
# plain runc / crun: the harness and the assertions


def test_lifecycle(plain_runtime, bundle, cid):
    bundle.shell("echo hello from $(hostname); exit 3")
    bundle.write()
    plain_runtime.create(bundle, cid)
    assert plain_runtime.state(cid)["status"] == "created"
    assert plain_runtime.list_ids() == [cid]
    pid = int((bundle.path / f"{cid}.pid").read_text())
    plain_runtime.start(cid)
    assert ocitest.wait_pid(pid, 30) == 3
    assert plain_runtime.state(cid)["status"] == "stopped"
    plain_runtime.delete(cid)
    assert plain_runtime.list_ids() == []
    assert (bundle.path / f"{cid}.out").read_text() == "hello from gpuslice-test\n"


def test_fake_gpu_applied_by_hand(plain_runtime, bundle, fake_gpu, cid):
    fake_gpu.apply_by_hand(bundle.spec, devices=("0",))
    facts = run_probe(plain_runtime, bundle, cid)
    assert_fake_gpu_injected(facts, fake_gpu, cid, devices=("0",))


def test_device_cgroup_denies_without_allow_rule(plain_runtime, bundle, fake_gpu, cid):
    """Proves the ENXIO assertion means something: without the allow rule
    the same nodes give EPERM."""
    fake_gpu.apply_by_hand(bundle.spec, devices=("0",))
    res = bundle.spec["linux"]["resources"]
    res["devices"] = [r for r in res["devices"] if r.get("major") != ocitest.NVIDIA_MAJOR]
    facts = run_probe(plain_runtime, bundle, cid)
    assert facts["node:/dev/nvidia0"].startswith("character special file c3 0 ")
    assert EPERM in facts["open:/dev/nvidia0"], facts


def test_without_request_no_gpu(plain_runtime, bundle, fake_gpu, cid):
    facts = run_probe(plain_runtime, bundle, cid)
    assert facts["node:/dev/nvidia0"] == "absent"
    assert facts["node:/dev/nvidiactl"] == "absent"
    assert facts["env:GPUSLICE_FAKE_DRIVER"] == "unset"
    assert not (fake_gpu.markers / f"{cid}.state.json").exists()


def run_many(rt: ocitest.Runtime, make_bundle, ids: list[str], annotate=None) -> list[tuple[int, str, str]]:
    bundles = []
    for i in ids:
        b = make_bundle(i)
        b.shell(f"echo {i}")
        if annotate:
            annotate(b)
        bundles.append(b)
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(ids)) as ex:
        return list(ex.map(lambda a: rt.run_container(*a), zip(bundles, ids)))


def test_concurrent_20_plain(plain_runtime, make_bundle, cid):
    ids = [f"{cid}-{n}" for n in range(20)]
    results = run_many(plain_runtime, make_bundle, ids)
    assert [(rc, out) for rc, out, _ in results] == [(0, f"{i}\n") for i in ids]
    assert plain_runtime.list_ids() == []


# --------------------------------------------------------------------------
# gpuslice-runtime in front of runc / crun

ANNOTATION = "cdi.k8s.io/gpuslice-test"


@pytest.mark.gpuslice
def test_gpuslice_lifecycle_without_request(gpuslice_runtime, bundle, fake_gpu, cid):
    """No request: plain exec of the low-level runtime, config.json not rewritten."""
    bundle.shell("echo plain; exit 4")
    before = bundle.write()
    mtime = bundle.config_path.stat().st_mtime_ns
    gpuslice_runtime.create(bundle, cid)
    assert bundle.config_path.read_bytes() == before
    assert bundle.config_path.stat().st_mtime_ns == mtime
    pid = int((bundle.path / f"{cid}.pid").read_text())
    gpuslice_runtime.start(cid)
    assert ocitest.wait_pid(pid, 30) == 4
    assert gpuslice_runtime.state(cid)["status"] == "stopped"
    gpuslice_runtime.delete(cid)
    assert gpuslice_runtime.list_ids() == []
    assert (bundle.path / f"{cid}.out").read_text() == "plain\n"
    assert not (fake_gpu.markers / f"{cid}.state.json").exists()


@pytest.mark.gpuslice
def test_gpuslice_injects_fake_gpu(gpuslice_runtime, bundle, fake_gpu, cid):
    bundle.annotate(ANNOTATION, fake_gpu.qualified("0"))
    facts = run_probe(gpuslice_runtime, bundle, cid)
    assert_fake_gpu_injected(facts, fake_gpu, cid, devices=("0",))
    assert gpuslice_runtime.list_ids() == []


@pytest.mark.gpuslice
def test_gpuslice_injects_two_devices(gpuslice_runtime, bundle, fake_gpu, cid):
    bundle.annotate(ANNOTATION, fake_gpu.qualified("0", "1"))
    facts = run_probe(gpuslice_runtime, bundle, cid)
    assert_fake_gpu_injected(facts, fake_gpu, cid, devices=("0", "1"))


@pytest.mark.gpuslice
def test_gpuslice_rewrites_config(request, gpuslice_runtime, bundle, fake_gpu, gpuslice_state_dir, cid):
    """With a request: config.json rewritten in place (same mode, no temp
    file left), the CDI edits in it, and no gpuslice-hook: the runtime
    execs runc create itself, without one more exec on the container's way
    in, and the state dir names the pid file runc writes as its init's (no
    limits: nothing of gpuslice's waits for runc to record it)."""
    from conftest import gpuslice_hook_path
    hook = gpuslice_hook_path(request.config)
    bundle.annotate(ANNOTATION, fake_gpu.qualified("0"))
    bundle.write()
    bundle.config_path.chmod(0o640)
    gpuslice_runtime.create(bundle, cid)
    try:
        assert bundle.config_path.stat().st_mode & 0o7777 == 0o640
        assert sorted(p.name for p in bundle.path.iterdir()) == sorted(
            ["config.json", f"{cid}.out", f"{cid}.err", f"{cid}.pid"])
        spec = bundle.read()
        assert {d["path"] for d in spec["linux"]["devices"]} >= {"/dev/nvidia0", "/dev/nvidiactl"}
        assert "GPUSLICE_FAKE_GPU0=present" in spec["process"]["env"]
        assert not [h for hooks in spec.get("hooks", {}).values() for h in hooks if h["path"] == hook], spec["hooks"]
        # the CDI spec's own hook is kept
        assert any(h["path"] == str(fake_gpu.hook) for h in spec["hooks"]["createContainer"])
        cdir = gpuslice_state_dir / "containers" / cid
        record = ocitest.state_record(cdir)
        assert record["init_pid_file"] == str(bundle.path / f"{cid}.pid")
        assert record["format"] == 3 and record["status"] == "created" and "GPUSLICE_FAKE_GPU0=present" in record["cdi_env"]
        assert sorted(p.name for p in cdir.iterdir()) == ["state.json"]
    finally:
        gpuslice_runtime.delete(cid, force=True)


@pytest.mark.gpuslice
def test_gpuslice_create_reads_specs_through_root_cache_and_sees_a_changed_spec(gpuslice_runtime, bundle, fake_gpu,
                                                                                cid):
    """A create keeps what it parsed in root's spec cache
    (/run/gpuslice/cdi-cache, entries that hold the spec's very text), and a
    spec rewritten in place is what the next create injects."""
    cache = Path("/run/gpuslice/cdi-cache")

    def cached(text: str) -> bool:
        return any(text.encode() in e.read_bytes() for e in cache.iterdir())

    bundle.annotate(ANNOTATION, fake_gpu.qualified("0"))
    bundle.write()
    first = fake_gpu.spec_file.read_text()
    gpuslice_runtime.create(bundle, cid)
    gpuslice_runtime.delete(cid, force=True)
    assert cache.stat().st_mode & 0o7777 == 0o700 and cache.stat().st_uid == 0
    assert cached(first)

    spec = json.loads(first)
    spec["devices"][0]["containerEdits"]["env"].append("GPUSLICE_SPEC_EDITED=1")
    fake_gpu.spec_file.write_text(json.dumps(spec, indent=2) + "\n")
    bundle.write()
    gpuslice_runtime.create(bundle, cid)
    try:
        env = bundle.read()["process"]["env"]
        assert "GPUSLICE_SPEC_EDITED=1" in env and "GPUSLICE_FAKE_GPU0=present" in env
        assert cached(fake_gpu.spec_file.read_text())
    finally:
        gpuslice_runtime.delete(cid, force=True)


OLD_MTIME = 946684800  # 2000-01-01: older than any spec file a create has seen


def deployed_with_old_times(tool_argv: list[str], staged: Path, spec_dir: Path) -> None:
    """Every file in `staged` (given OLD_MTIME first) deployed into
    `spec_dir` by a tool that keeps times, as an operator's copy does."""
    for f in staged.iterdir():
        os.utime(f, (OLD_MTIME, OLD_MTIME))
    subprocess.run(tool_argv, check=True, capture_output=True, text=True, cwd=staged.parent)
    for f in staged.iterdir():
        assert (spec_dir / f.name).stat().st_mtime == OLD_MTIME


@pytest.mark.gpuslice
def test_gpuslice_create_sees_spec_files_deployed_with_old_mtimes(gpuslice_runtime, bundle, fake_gpu, gpuslice_state_dir,
                                                                  tmp_path, cid):
    """Spec files added, replaced and edited by `cp -a`, `rsync -a` and
    `tar x` keep their (old) mtimes, and an edit can keep the very inode,
    size and mtime of the file it changes: root's spec cache is keyed on
    each file's whole text, so the next create injects what each file says
    now, and refuses a device that a late file defines twice."""
    staged = tmp_path / "staged"
    staged.mkdir()
    spec_dir = fake_gpu.spec_dir

    def create_env(device: str) -> list[str]:
        bundle.annotate(ANNOTATION, fake_gpu.qualified(device))
        bundle.write()
        gpuslice_runtime.create(bundle, cid)
        try:
            return bundle.read()["process"]["env"]
        finally:
            gpuslice_runtime.delete(cid, force=True)

    def extra_spec(env: str) -> str:
        spec = {"cdiVersion": "0.6.0", "kind": fake_gpu.KIND,
                "devices": [{"name": "late", "containerEdits": {
                    "env": [env], "deviceNodes": [fake_gpu.node("/dev/nvidia1")]}}]}
        return json.dumps(spec, indent=2) + "\n"

    assert "GPUSLICE_FAKE_GPU0=present" in create_env("0")  # the fake GPU's spec, now in root's cache

    # Added by cp -a: a device that no spec defined before.
    (staged / "late.json").write_text(extra_spec("GPUSLICE_LATE=aaaa"))
    deployed_with_old_times(["cp", "-a", "staged/late.json", str(spec_dir)], staged, spec_dir)
    assert "GPUSLICE_LATE=aaaa" in create_env("late")

    # Replaced by rsync -a (a new file renamed over the old), as old as the one it replaces.
    (staged / "late.json").write_text(extra_spec("GPUSLICE_LATE=bbbbbb"))
    deployed_with_old_times(["rsync", "-a", "staged/", str(spec_dir) + "/"], staged, spec_dir)
    env = create_env("late")
    assert "GPUSLICE_LATE=bbbbbb" in env and "GPUSLICE_LATE=aaaa" not in env

    # Edited in place by cp -a over it: the same inode, size and mtime.
    before = (spec_dir / "late.json").stat()
    (staged / "late.json").write_text(extra_spec("GPUSLICE_LATE=cccccc"))
    deployed_with_old_times(["cp", "-a", "staged/late.json", str(spec_dir)], staged, spec_dir)
    after = (spec_dir / "late.json").stat()
    assert (after.st_ino, after.st_size, after.st_mtime) == (before.st_ino, before.st_size, before.st_mtime)
    env = create_env("late")
    assert "GPUSLICE_LATE=cccccc" in env and "GPUSLICE_LATE=bbbbbb" not in env

    # Replaced by tar x of a staged copy: again the same size and mtime.
    (staged / "late.json").write_text(extra_spec("GPUSLICE_LATE=dddddd"))
    for f in staged.iterdir():
        os.utime(f, (OLD_MTIME, OLD_MTIME))
    archive = tmp_path / "specs.tar"
    subprocess.run(["tar", "-cf", str(archive), "-C", str(staged), "late.json"], check=True)
    deployed_with_old_times(["tar", "-xf", str(archive), "-C", str(spec_dir)], staged, spec_dir)
    assert (spec_dir / "late.json").stat().st_size == before.st_size
    env = create_env("late")
    assert "GPUSLICE_LATE=dddddd" in env and "GPUSLICE_LATE=cccccc" not in env

    # Added by cp -a: a second file that defines device "0" again.
    (staged / "late.json").unlink()
    (staged / "again.json").write_text(json.dumps(fake_gpu.cdi_spec(), indent=2) + "\n")
    deployed_with_old_times(["cp", "-a", "staged/again.json", str(spec_dir)], staged, spec_dir)
    bundle.annotate(ANNOTATION, fake_gpu.qualified("0"))
    bundle.write()
    p = gpuslice_runtime.create(bundle, cid, check=False)
    assert p.returncode != 0 and "again.json" in p.stderr, p.stderr
    assert not (gpuslice_state_dir / "containers" / cid).exists()
    assert cid not in gpuslice_runtime.list_ids()


def collection_comes(rt: ocitest.Runtime, make_bundle, gpu: ocitest.FakeGpu, state_dir: Path, cid: str) -> None:
    """The collection of stale state dirs that a create with devices makes
    now and then (once a minute), made to come now: its marker aged, then
    such a create (deleted again)."""
    marker = state_dir / "stale-collected"
    if marker.exists():
        os.utime(marker, (0, 0))
    collector = make_bundle("collector")
    collector.annotate(ANNOTATION, gpu.qualified("1"))
    collector.write()
    rt.create(collector, cid + "-collector")
    rt.delete(cid + "-collector", force=True)
    assert (marker.stat().st_mtime > 0)


@pytest.mark.gpuslice
def test_gpuslice_create_without_pid_file_names_one_in_the_state_dir(gpuslice_runtime, bundle, make_bundle, fake_gpu,
                                                                      gpuslice_state_dir, cid):
    """A create that names no --pid-file (a person, not containerd): runc is
    given one in the state dir, which the dir names as its init's. While
    that init runs, the dir is live although no process of gpuslice's is
    left (a collection of stale dirs keeps it, an exec gets its CDI env);
    once it has ended, the dir is stale and collected."""
    bundle.annotate(ANNOTATION, fake_gpu.qualified("0"))
    bundle.shell(f"while [ ! -e {fake_gpu.MOUNT_DEST}/release ]; do sleep 0.05; done")
    bundle.write()
    with open(bundle.path / "out", "wb") as out:  # files: the container holds them open
        p = subprocess.run(gpuslice_runtime.cmd("create", "--bundle", str(bundle.path), cid), env=gpuslice_runtime.env,
                           stdin=subprocess.DEVNULL, stdout=out, stderr=out, timeout=60)
    try:
        assert p.returncode == 0, (bundle.path / "out").read_text()
        init = gpuslice_runtime.state(cid)["pid"]
        cdir = gpuslice_state_dir / "containers" / cid
        assert int((cdir / "init.pid").read_text()) == init
        assert ocitest.state_record(cdir)["init_pid_file"] == str(cdir / "init.pid")
        assert "init" not in ocitest.state_record(cdir)
        collection_comes(gpuslice_runtime, make_bundle, fake_gpu, gpuslice_state_dir, cid)
        assert cdir.is_dir()
        gpuslice_runtime.start(cid)
        process = bundle.path / "process.json"
        process.write_text(json.dumps({"args": ["true"], "cwd": "/", "env": ["PATH=/bin"], "user": {"uid": 0, "gid": 0}}))
        gpuslice_runtime.run("exec", "--process", str(process), cid)
        assert "GPUSLICE_FAKE_DRIVER=1" in process.read_text()
        (fake_gpu.host_dir / "release").touch()
        assert ocitest.wait_pid(init, 30) == 0
        collection_comes(gpuslice_runtime, make_bundle, fake_gpu, gpuslice_state_dir, cid)
        assert not cdir.exists()
    finally:
        gpuslice_runtime.delete(cid, force=True)
    assert not (gpuslice_state_dir / "containers" / cid).exists()


@pytest.mark.gpuslice
def test_gpuslice_create_refused_for_a_running_id_leaves_its_pid_file(gpuslice_runtime, bundle, make_bundle, fake_gpu,
                                                                      gpuslice_state_dir, cid):
    """A second create of a running container's id naming the same pid file
    (a retry, a person's script): refused before it touches that file, by
    which the running container's state dir lives (a collection keeps it)."""
    bundle.annotate(ANNOTATION, fake_gpu.qualified("0"))
    bundle.shell("sleep 60")
    bundle.write()
    gpuslice_runtime.create(bundle, cid)
    try:
        pid_file = bundle.path / f"{cid}.pid"
        init = int(pid_file.read_text())
        again = make_bundle("again")
        again.annotate(ANNOTATION, fake_gpu.qualified("1"))
        again.write()
        p = gpuslice_runtime.create(again, cid, check=False, pid_file=pid_file)
        assert p.returncode != 0 and "already in use" in p.stderr, p.stderr
        assert int(pid_file.read_text()) == init
        collection_comes(gpuslice_runtime, make_bundle, fake_gpu, gpuslice_state_dir, cid)
        assert ocitest.state_record(gpuslice_state_dir / "containers" / cid)["cdi_env"]
    finally:
        gpuslice_runtime.delete(cid, force=True)
    assert not (gpuslice_state_dir / "containers" / cid).exists()


@pytest.mark.gpuslice
def test_gpuslice_failed_runc_create_leaves_only_stale_state(gpuslice_runtime, bundle, make_bundle, fake_gpu,
                                                            gpuslice_state_dir, cid):
    """runc refuses the create (its root is missing): runc's status comes
    back. Nothing of gpuslice's waits for runc (no limits): the state dir
    the runtime made names a pid file runc never wrote, and is stale once
    runc has exited; the delete that containerd sends after a failed create
    removes it, and so does the next collection of stale dirs."""
    bundle.annotate(ANNOTATION, fake_gpu.qualified("0"))
    bundle.spec["root"]["path"] = str(bundle.path / "no-such-rootfs")
    bundle.write()
    cdir = gpuslice_state_dir / "containers" / cid
    assert gpuslice_runtime.create(bundle, cid, check=False).returncode != 0
    assert cdir.is_dir() and not (bundle.path / f"{cid}.pid").exists()
    gpuslice_runtime.run("delete", "--force", cid, check=False)
    assert not cdir.exists()
    assert gpuslice_runtime.create(bundle, cid, check=False).returncode != 0
    collection_comes(gpuslice_runtime, make_bundle, fake_gpu, gpuslice_state_dir, cid)
    assert not cdir.exists()
    assert gpuslice_runtime.list_ids() == []


@pytest.mark.gpuslice
def test_gpuslice_create_retried_at_once_after_a_failed_one_is_not_refused(gpuslice_runtime, bundle, fake_gpu,
                                                                            busybox_rootfs, cid):
    """The state dir of a create that runc refused is stale as soon as runc
    has exited: a create of the same id made at once takes it over instead
    of finding the id in use."""
    bundle.annotate(ANNOTATION, fake_gpu.qualified("0"))
    bundle.spec["root"]["path"] = str(bundle.path / "no-such-rootfs")
    bundle.write()
    assert gpuslice_runtime.create(bundle, cid, check=False).returncode != 0
    bundle.spec["root"]["path"] = str(busybox_rootfs)
    bundle.write()
    p = gpuslice_runtime.create(bundle, cid, check=False)
    try:
        assert p.returncode == 0, p.stderr
    finally:
        gpuslice_runtime.delete(cid, force=True)


@pytest.mark.gpuslice
def test_gpuslice_create_of_a_live_id_leaves_that_container_alone(plain_runtime, gpuslice_runtime, bundle, make_bundle,
                                                                  fake_gpu, gpuslice_state_dir, cid):
    """A GPU create whose id is a running plain container's (made without
    gpuslice, so no state dir says so): runc refuses it, and the state dir
    gpuslice made is stale (the next collection removes it); the other
    container is neither deleted nor taken for this one's."""
    plain = make_bundle("plain")
    plain.write()
    plain_runtime.create(plain, cid)
    try:
        bundle.annotate(ANNOTATION, fake_gpu.qualified("0"))
        bundle.write()
        p = gpuslice_runtime.create(bundle, cid, check=False)
        assert p.returncode != 0
        collection_comes(gpuslice_runtime, make_bundle, fake_gpu, gpuslice_state_dir, cid)
        assert not (gpuslice_state_dir / "containers" / cid).exists()
        assert plain_runtime.state(cid)["status"] == "created"
    finally:
        plain_runtime.delete(cid, force=True)


def use_lowlevel_script(request, config: Path, gpu: ocitest.FakeGpu, state_dir: Path, log_dir: Path,
                        script: Path, text: str) -> None:
    """The wrapper's config rewritten to run `script` (written with `text`)
    as its low-level runtime."""
    script.write_text(text)
    script.chmod(0o755)
    write_gpuslice_config(config, [gpu.spec_dir], str(script), request.config.getoption("--gpuslice-hook"),
                          state_dir, log_dir)


@pytest.mark.gpuslice
def test_gpuslice_create_execs_the_runtime_with_open_signals_and_none_of_its_files(request, gpuslice_runtime,
                                                                                   gpuslice_config, bundle, fake_gpu,
                                                                                   gpuslice_state_dir, test_tmp, cid):
    """The create of a container with devices (no limits) execs the
    low-level runtime in its own process (the caller sees the runtime's own
    exit, a kill -9 of the create is one of the runtime), with no signal
    blocked and no file of the wrapper's open, and nothing else of
    gpuslice's runs. A create killed before the runtime wrote its pid file
    leaves stale state, which the delete that follows removes (test_sharing
    has the same for a container with limits, whose create leaves a process
    that records its init)."""
    pid_file = test_tmp / "runtime.pid"
    blocked = test_tmp / "runtime.sigblk"
    inherited = test_tmp / "runtime.fds"
    # Python, not sh: dash clears the signal mask it starts with.
    use_lowlevel_script(request, gpuslice_config, fake_gpu, gpuslice_state_dir, test_tmp / "gpuslice-log",
                        test_tmp / "slow-runtime.py",
                        "#!/usr/bin/python3\n"
                        "import os, sys, time\n"
                        "if 'create' not in sys.argv: sys.exit(1)\n"
                        "status = open('/proc/self/status').read().splitlines()\n"
                        f"open({str(blocked)!r}, 'w').write([l for l in status if l.startswith('SigBlk:')][0])\n"
                        "fds = [os.readlink(f'/proc/self/fd/{fd}') for fd in os.listdir('/proc/self/fd')\n"
                        "       if os.path.exists(f'/proc/self/fd/{fd}')]\n"
                        f"open({str(inherited)!r}, 'w').write(chr(10).join(fds))\n"
                        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
                        "time.sleep(60)\n")
    bundle.annotate(ANNOTATION, fake_gpu.qualified("0"))
    bundle.write()
    wrapper = subprocess.Popen(gpuslice_runtime.cmd("create", "--bundle", str(bundle.path), cid),
                               env=gpuslice_runtime.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        assert ocitest.eventually(lambda: pid_file.exists() and pid_file.read_text().strip() != ""), "runtime not started"
        assert int(pid_file.read_text()) == wrapper.pid
        assert blocked.read_text().split() == ["SigBlk:", "0" * 16]
        # nothing of the wrapper's own: its log file (written before the
        # create) once kept runc's create 50 ms longer
        log_dir = test_tmp / "gpuslice-log"
        assert (log_dir / "gpuslice-runtime.log").exists()
        assert not [f for f in inherited.read_text().splitlines() if f.startswith(str(log_dir))]
        assert (gpuslice_state_dir / "containers" / cid).is_dir()
        # no process but the runtime: the wrapper's children are its (none)
        children = Path(f"/proc/{wrapper.pid}/task/{wrapper.pid}/children").read_text().split()
        assert children == [], children
        assert [t.name for t in Path(f"/proc/{wrapper.pid}/task").iterdir()] == [str(wrapper.pid)]
        wrapper.kill()
        wrapper.wait(10)
        assert (gpuslice_state_dir / "containers" / cid).is_dir()
        gpuslice_runtime.run("delete", cid, check=False)  # the runtime here refuses it
        assert not (gpuslice_state_dir / "containers" / cid).exists()
    finally:
        if wrapper.poll() is None:
            wrapper.kill()
            wrapper.wait(10)


@pytest.mark.gpuslice
def test_gpuslice_hook_state_dir(gpuslice_runtime, bundle, fake_gpu, gpuslice_state_dir, cid):
    """gpuslice-hook's createRuntime makes <state-dir>/containers/<id>/ (root,
    0700), its poststop removes it; state-dir comes from the same config."""
    bundle.annotate(ANNOTATION, fake_gpu.qualified("0"))
    bundle.shell("sleep 30")
    bundle.write()
    gpuslice_runtime.create(bundle, cid)
    cdir = gpuslice_state_dir / "containers" / cid
    try:
        st = cdir.stat()
        assert (st.st_mode & 0o7777, st.st_uid) == (0o700, 0)
        gpuslice_runtime.start(cid)
        assert cdir.is_dir()
    finally:
        gpuslice_runtime.delete(cid, force=True)
    assert not cdir.exists()
    assert gpuslice_runtime.list_ids() == []


@pytest.mark.gpuslice
def test_gpuslice_run_leaves_no_state(request, gpuslice_runtime, bundle, fake_gpu, gpuslice_state_dir, cid):
    """`run` (create, start, wait, delete in one) through gpuslice-runtime:
    gpuslice-hook records the init at createRuntime (nothing else sees it),
    with an explicit env that owes nothing to the container's; the
    container's exit status comes back, and its state dir is gone once runc
    has deleted it (there is no poststop hook: the runtime removes it)."""
    from conftest import gpuslice_hook_path
    hook = gpuslice_hook_path(request.config)
    bundle.annotate(ANNOTATION, fake_gpu.qualified("0"))
    bundle.spec["process"]["env"] += ["LD_PRELOAD=/tmp/from-the-image.so", "GPUSLICE_LEAK_CANARY=1"]
    bundle.shell("test -e /dev/nvidia0 && echo has-gpu; exit 3")
    bundle.write()
    p = gpuslice_runtime.run("run", "--bundle", str(bundle.path), cid, check=False)
    assert p.returncode == 3, p.stdout + p.stderr
    assert "has-gpu" in p.stdout
    assert not (gpuslice_state_dir / "containers" / cid).exists()
    assert gpuslice_runtime.list_ids() == []
    spec = bundle.read()
    assert "poststop" not in spec.get("hooks", {}), spec.get("hooks")
    entries = [h for h in spec["hooks"].get("createRuntime", []) if h["path"] == hook]
    assert len(entries) == 1, spec["hooks"]
    env = entries[0].get("env")
    assert env is not None, "gpuslice-hook without an explicit env"
    assert not any(e.startswith(("LD_PRELOAD=", "GPUSLICE_LEAK_CANARY=", "GPUSLICE_FAKE_")) for e in env), env


def hooks_d_prestart(bundle, hook: str, config: Path, stages=("prestart", "poststop")) -> None:
    """What podman and CRI-O add from the packaged oci-hooks.d files."""
    for stage in stages:
        bundle.spec.setdefault("hooks", {}).setdefault(stage, []).append(
            {"path": hook, "args": ["gpuslice-hook", stage],
             "env": ["PATH=/usr/bin:/bin", f"GPUSLICE_CONFIG={config}"], "timeout": 30})


@pytest.mark.gpuslice
def test_hook_mode_next_to_gpuslice_runtime_changes_nothing(request, gpuslice_runtime, bundle, fake_gpu,
                                                            gpuslice_config, cid):
    """CRI-O with both gpuslice-runtime and the hooks.d file: the wrapper
    prepared the container, so the prestart hook lets it run."""
    from conftest import gpuslice_hook_path
    bundle.annotate(ANNOTATION, fake_gpu.qualified("0"))
    hooks_d_prestart(bundle, gpuslice_hook_path(request.config), gpuslice_config)
    bundle.write()
    gpuslice_runtime.create(bundle, cid)
    gpuslice_runtime.start(cid)
    gpuslice_runtime.delete(cid, force=True)


# The bundle flag of runc's create in every spelling its parser (Go's flag
# package) takes: one dash or two, "=value" or the next argument.
BUNDLE_SPELLINGS = ["--bundle B", "--bundle=B", "-bundle B", "-bundle=B", "-b B", "-b=B", "--b B", "--b=B"]


def create_in(rt: ocitest.Runtime, cwd: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    """`rt create ARGS` run from `cwd`, the container's stdio on files."""
    with open(out, "wb") as o, open(out.with_suffix(".err"), "w+") as e:
        p = subprocess.run(rt.cmd("create", *args), cwd=cwd, env=rt.env, stdin=subprocess.DEVNULL, stdout=o, stderr=e,
                           timeout=60)
        e.seek(0)
        p.stderr = e.read()
    return p


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])  # crun reads flags with argp: its -bundle is -b undle
@pytest.mark.parametrize("spelling", BUNDLE_SPELLINGS)
def test_gpuslice_reads_the_bundle_flag_as_runc_does(plain_runtime, gpuslice_runtime, bundle, make_bundle, fake_gpu,
                                                      test_tmp, cid, spelling):
    """runc takes each spelling (a plain container is created with it), and
    gpuslice-runtime given the same one edits that bundle's config.json,
    never the one in its current directory, and passes the arguments on
    as they were."""
    def flag(b: ocitest.Bundle) -> list[str]:
        return [word.replace("B", str(b.path)) for word in spelling.split()]

    decoy = make_bundle("decoy")
    decoy.shell("exit 0")
    decoy_before = decoy.write()
    plain = make_bundle("plain")
    plain.shell("exit 0")
    plain.write()
    p = create_in(plain_runtime, decoy.path, test_tmp / "plain.out", *flag(plain), f"{cid}-runc")
    assert p.returncode == 0, p.stderr
    assert plain_runtime.state(f"{cid}-runc")["bundle"] == str(plain.path)
    plain_runtime.delete(f"{cid}-runc", force=True)

    bundle.annotate(ANNOTATION, fake_gpu.qualified("0"))
    bundle.shell("exit 0")
    bundle.write()
    p = create_in(gpuslice_runtime, decoy.path, test_tmp / "gpuslice.out", *flag(bundle), cid)
    assert p.returncode == 0, p.stderr
    assert gpuslice_runtime.state(cid)["bundle"] == str(bundle.path)
    devices = [d["path"] for d in json.loads(bundle.config_path.read_text())["linux"]["devices"]]
    assert "/dev/nvidia0" in devices, devices
    assert decoy.config_path.read_bytes() == decoy_before
    gpuslice_runtime.delete(cid, force=True)


@pytest.mark.gpuslice
@pytest.mark.parametrize("args", [["-bundlex", "B"], ["---bundle", "B"], ["--bundle"], ["--config", "B/config.json"]],
                         ids=["unknown flag", "three dashes", "no value", "crun's --config"])
def test_gpuslice_refuses_a_create_whose_bundle_it_cannot_be_sure_of(gpuslice_runtime, bundle, make_bundle, fake_gpu,
                                                                      test_tmp, cid, args):
    """A command line gpuslice cannot read as runc does: no config.json is
    edited, runc is not run, and the error names the argument."""
    decoy = make_bundle("decoy")
    decoy.annotate(ANNOTATION, fake_gpu.qualified("0"))
    decoy.shell("exit 0")
    decoy_before = decoy.write()
    bundle.annotate(ANNOTATION, fake_gpu.qualified("0"))
    bundle_before = bundle.write()
    argv = [a.replace("B", str(bundle.path)) for a in args]
    p = create_in(gpuslice_runtime, decoy.path, test_tmp / "create.out", *argv, cid)
    assert p.returncode != 0
    named = "create" if args == ["--bundle"] else argv[0]  # the id taken for its value: no id left
    assert "cannot read create's command line" in p.stderr and f'"{named}"' in p.stderr, p.stderr
    assert decoy.config_path.read_bytes() == decoy_before
    assert bundle.config_path.read_bytes() == bundle_before
    assert gpuslice_runtime.list_ids() == []


@pytest.mark.gpuslice
def test_gpuslice_unknown_device_fails_cleanly(gpuslice_runtime, bundle, fake_gpu, cid):
    bundle.annotate(ANNOTATION, "nvidia.com/gpu=7")
    before = bundle.write()
    p = gpuslice_runtime.create(bundle, cid, check=False)
    assert p.returncode != 0
    assert "nvidia.com/gpu=7" in p.stderr, p.stderr
    assert len([line for line in p.stderr.splitlines() if line.strip()]) >= 1
    assert gpuslice_runtime.list_ids() == []
    assert not (gpuslice_runtime.root / cid).exists()
    assert bundle.config_path.read_bytes() == before
    # no temp file left in the bundle by an aborted atomic write
    assert sorted(p.name for p in bundle.path.iterdir()) == sorted(["config.json", f"{cid}.out", f"{cid}.err"])
    assert not (fake_gpu.markers / f"{cid}.state.json").exists()


@pytest.mark.gpuslice
@pytest.mark.parametrize("outcome", ["refused create", "run"])
def test_gpuslice_tidies_what_a_killed_create_left_in_the_bundle(gpuslice_runtime, bundle, fake_gpu, cid, outcome):
    """A create killed while writing config.json (kill -9) left its
    temporary beside it: the next create or run of the bundle removes it,
    whether it fails or runs the container to its end (a create that
    succeeds leaves that to its init recorder: test_sharing). A temporary
    whose writer still runs is left alone."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = bundle.path / f"config.json.gpuslice-tmp.{dead.pid}.12345"
    live = bundle.path / f"config.json.gpuslice-tmp.{os.getpid()}.12345"
    bundle.annotate(ANNOTATION, "nvidia.com/gpu=7" if outcome == "refused create" else fake_gpu.qualified("0"))
    bundle.shell("exit 0")
    bundle.write()
    stale.write_text("{}")
    live.write_text("{}")
    if outcome == "refused create":
        p = gpuslice_runtime.create(bundle, cid, check=False)
        assert p.returncode != 0 and "nvidia.com/gpu=7" in p.stderr, p.stderr
    else:
        p = gpuslice_runtime.run("run", "--bundle", str(bundle.path), cid, check=False)
        assert p.returncode == 0, p.stdout + p.stderr
    assert not stale.exists()
    assert live.exists()


@pytest.mark.gpuslice
def test_gpuslice_unknown_device_error_in_json_log(gpuslice_runtime, bundle, test_tmp, cid):
    """containerd's shim reads a failed create's error from the --log file
    (runc's JSON lines), not from stderr: the wrapper must write it there."""
    log = test_tmp / "runtime.log"
    rt = ocitest.Runtime(gpuslice_runtime.name, [*gpuslice_runtime.argv, "--log", str(log), "--log-format", "json"],
                         gpuslice_runtime.root, env=gpuslice_runtime.env, lowlevel=gpuslice_runtime.lowlevel)
    bundle.annotate(ANNOTATION, "nvidia.com/gpu=7")
    bundle.write()
    p = rt.create(bundle, cid, check=False)
    assert p.returncode != 0
    entries = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    errors = [e for e in entries if e.get("level") == "error"]
    assert errors and "nvidia.com/gpu=7" in errors[-1]["msg"], entries
    assert "time" in errors[-1]
    assert rt.list_ids() == []


@pytest.mark.gpuslice
def test_gpuslice_passes_global_flags(gpuslice_runtime, bundle, test_tmp, cid):
    """--log / --log-format before the verb reach the low-level runtime."""
    log = test_tmp / "runtime.log"
    rt = ocitest.Runtime(gpuslice_runtime.name, [*gpuslice_runtime.argv, "--log", str(log), "--log-format", "json"],
                         gpuslice_runtime.root, env=gpuslice_runtime.env, lowlevel=gpuslice_runtime.lowlevel)
    bundle.shell("echo flags")
    rc, out, _ = rt.run_container(bundle, cid)
    assert (rc, out) == (0, "flags\n")
    assert log.exists()


@pytest.mark.gpuslice
def test_gpuslice_concurrent_20(gpuslice_runtime, make_bundle, fake_gpu, cid):
    ids = [f"{cid}-{n}" for n in range(20)]
    results = run_many(gpuslice_runtime, make_bundle, ids,
                       annotate=lambda b: b.annotate(ANNOTATION, fake_gpu.qualified("0")))
    assert [(rc, out) for rc, out, _ in results] == [(0, f"{i}\n") for i in ids]
    assert gpuslice_runtime.list_ids() == []
    for i in ids:
        assert (fake_gpu.markers / f"{i}.state.json").exists(), i
