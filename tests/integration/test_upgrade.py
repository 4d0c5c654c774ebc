"""A node upgraded under running containers: containers created by the last
release that wrote state format 2 (docs/state.md, "Upgrades"), finished by
this build.

The old release is built from this repository's own history
(build_last_release.sh: `git archive` of that commit, its runtime and
monitor only), once per build dir (GPUSLICE_UPGRADE_DIR). A clone without
that commit (a shallow one) fails here, naming the fix: the test never
quietly passes without the old build.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

import ocitest
from conftest import KIND, built

REPO = Path(__file__).resolve().parents[2]
LEGACY_FILES = {"format", "creator", "cdi-env"}


@pytest.fixture(scope="session")
def last_release() -> Path:
    """The bin dir of the old build (build_last_release.sh, which does
    nothing when ctest's setup test has built it already)."""
    base = Path(os.environ.get("GPUSLICE_UPGRADE_DIR") or REPO / "build" / "upgrade")
    p = subprocess.run(["bash", str(Path(__file__).parent / "build_last_release.sh"), str(base)],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    return base / "build" / "shim"


@pytest.fixture
def old_and_new(sharing_runtime, last_release, plain_runtime, test_tmp):
    """(old, new, state dir): the old release's gpuslice-runtime and this
    build's, on one config, one runc root, one state dir. The monitor checks
    every 100 ms, with the fake NVML."""
    new, state = sharing_runtime
    conf = Path(new.env["GPUSLICE_CONFIG"])
    conf.write_text(conf.read_text() + f'\n[monitor]\ninterval = "100ms"\naction = "log"\n'
                                       f'nvml-path = "{built("GPUSLICE_FAKE_NVML")}"\n')
    old = ocitest.Runtime("gpuslice-old+runc", [str(last_release / "gpuslice-runtime")], plain_runtime.root,
                          env=new.env, lowlevel=plain_runtime)
    return old, new, state


def legacy_files(cdir: Path) -> set[str]:
    return {p.name for p in cdir.iterdir()} & LEGACY_FILES


def created_by_the_old_release(old: ocitest.Runtime, bundle: ocitest.Bundle, cid: str, cdir: Path) -> None:
    old.create(bundle, cid)
    assert (cdir / "format").read_text() == "gpuslice-state 2\n"
    assert not (cdir / "state.json").exists() and legacy_files(cdir) == LEGACY_FILES


def old_monitor_of(cdir: Path) -> int:
    """The pid in the old record's `monitor` file, which the old init
    recorder writes just after the create returns."""
    assert wait_for(lambda: (cdir / "monitor").exists()), sorted(p.name for p in cdir.iterdir())
    return int((cdir / "monitor").read_text().split()[0])


def wait_for(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.fixture
def rootfs(busybox_rootfs, test_tmp) -> Path:
    """busybox with hostile_test, which allocates through the fake libcuda."""
    root = test_tmp / "rootfs"
    shutil.copytree(busybox_rootfs, root, symlinks=True)
    ocitest.copy_with_libs(built("GPUSLICE_HOSTILE"), root, "/bin/hostile_test")
    return root


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
def test_a_container_with_a_device_from_the_last_release_is_finished_by_this_build(old_and_new, test_tmp,
                                                                                    spec_template, rootfs, cid):
    """Created by the old release (a device, no limits: no monitor), then
    started, exec'd into, stopped and deleted by this build: the exec gets the CDI
    env the old create recorded, delete removes the old state dir."""
    old, new, state = old_and_new
    cdir = state / "containers" / cid
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=whole")
    bundle.shell("trap 'exit 0' TERM; while :; do sleep 0.05; done")
    bundle.write()
    created_by_the_old_release(old, bundle, cid, cdir)
    try:
        new.start(cid)
        assert new.state(cid)["status"] == "running"
        process = bundle.path / "process.json"
        process.write_text(json.dumps({"args": ["true"], "cwd": "/", "env": ["PATH=/bin"],
                                       "user": {"uid": 0, "gid": 0}}))
        new.run("exec", "--process", str(process), cid)
        env = json.loads(process.read_text())["env"]
        assert "LD_LIBRARY_PATH=/usr/local/nvidia/lib64" in env, env
        init = int((bundle.path / f"{cid}.pid").read_text())
        new.run("kill", cid, "TERM")
        assert ocitest.wait_pid(init, 30) == 0
        new.delete(cid)
        assert not cdir.exists()
    finally:
        new.delete(cid, force=True)


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
def test_the_monitor_of_a_container_from_the_last_release_is_restarted_by_this_build(old_and_new, test_tmp,
                                                                                     spec_template, rootfs, cid):
    """Created by the old release with a 256 MiB limit; its monitor (the old
    gpuslice-shim) dies, as in an upgrade that restarts everything. This
    build's `state` starts its own gpuslice-shim from the old record's
    arguments, and the record becomes state.json (format 3, the old files
    gone). The container then runs under the limit (100 MiB granted, 300
    refused), and when it ends the new monitor removes its state."""
    old, new, state = old_and_new
    cdir = state / "containers" / cid
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=0")  # 256 MiB
    bundle.shell("/bin/hostile_test alloc 100; echo granted-exit $?; /bin/hostile_test alloc 300; echo refused-exit $?")
    bundle.write()
    created_by_the_old_release(old, bundle, cid, cdir)
    try:
        old_monitor = old_monitor_of(cdir)
        # the old build's own (its runtime, monitoring in place, or its gpuslice-shim)
        assert Path(os.readlink(f"/proc/{old_monitor}/exe")).parent == Path(old.argv[0]).parent
        os.kill(old_monitor, signal.SIGKILL)
        assert wait_for(lambda: not Path(f"/proc/{old_monitor}").exists() or
                        Path(f"/proc/{old_monitor}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z")

        assert new.state(cid)["status"] == "created"
        record = ocitest.state_record(cdir)
        assert record["format"] == 3 and not legacy_files(cdir), sorted(p.name for p in cdir.iterdir())
        monitor = record["monitor"]["pid"]
        assert monitor != old_monitor
        assert os.readlink(f"/proc/{monitor}/exe") == str(Path(new.argv[0]).parent / "gpuslice-shim")
        assert any("LD_LIBRARY_PATH=" in kv for kv in record["cdi_env"])

        new.start(cid)
        init = int((bundle.path / f"{cid}.pid").read_text())
        assert ocitest.wait_pid(init, 30) == 0
        out = (bundle.path / f"{cid}.out").read_text()
        assert "granted-exit 0" in out and "refused-exit 1" in out, out + (bundle.path / f"{cid}.err").read_text()
        assert wait_for(lambda: not cdir.exists()), sorted(p.name for p in cdir.iterdir())
        new.delete(cid)
    finally:
        new.delete(cid, force=True)
    assert not cdir.exists()


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
def test_a_container_of_the_last_release_with_its_old_monitor_is_deleted_by_this_build(old_and_new, test_tmp,
                                                                                       spec_template, rootfs, cid):
    """Created and started by the old release with a limit, its old monitor
    still running: this build's delete --force ends it, the state dir goes,
    and the old monitor exits with the container."""
    old, new, state = old_and_new
    cdir = state / "containers" / cid
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=0")
    bundle.shell("sleep 600")
    bundle.write()
    created_by_the_old_release(old, bundle, cid, cdir)
    old_monitor = old_monitor_of(cdir)
    try:
        old.start(cid)
        assert new.state(cid)["status"] == "running"
        assert old_monitor_of(cdir) == old_monitor  # alive: left alone, not migrated
        new.delete(cid, force=True)
        assert not cdir.exists()
        assert wait_for(lambda: not Path(f"/proc/{old_monitor}").exists() or
                        Path(f"/proc/{old_monitor}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z")
    finally:
        new.delete(cid, force=True)
