"""gpuslice-runtime's front (runtime/front/front.h): before the C library
starts, it execs the low-level runtime when the record the full program
saved shows that the full program would do nothing else, and it writes
nothing.

Which path a call took is read from strace: after the wrapper's execve, the
full program's first system call is glibc's arch_prctl; the front's is the
execve of the runtime. Every test runs under runc and crun.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import time

from pathlib import Path

import pytest

import ocitest

ANNOTATION = "cdi.k8s.io/gpuslice-test"
RECORD_DIR = Path("/run/gpuslice/runtime-front")

pytestmark = pytest.mark.gpuslice


def record_name(config_path: str) -> str:
    """FNV-1a 64 of the config path, as runtime/front/front.c names it."""
    h = 0xcbf29ce484222325
    for b in config_path.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def record_of(rt: ocitest.Runtime) -> Path:
    return RECORD_DIR / record_name(rt.env["GPUSLICE_CONFIG"])


def path_taken(rt: ocitest.Runtime, log: Path, *args: str, env: dict | None = None, prefix: tuple = ()) -> tuple[str, subprocess.CompletedProcess]:
    """("front" or "full", the call) for `rt` called with args under strace.
    A create is traced without its children: strace would wait for the
    container's init, which waits for `start`."""
    wrapper = rt.argv[0]
    follow = ["-f"] if "create" not in args else []
    p = subprocess.run(["strace", *follow, "-qq", "-e", "trace=execve,arch_prctl", "-o", str(log), *prefix, *rt.cmd(*args)],
                       env=rt.env if env is None else env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=60)
    # "PID call" lines with -f, plain "call" lines without
    events = [line.split(None, 1) if follow else ["0", line] for line in log.read_text().splitlines()]
    start = next(i for i, (_, call) in enumerate(events) if call.startswith(f'execve("{wrapper}"') and "= 0" in call)
    pid = events[start][0]
    after = next(call for who, call in events[start + 1:] if who == pid)
    if after.startswith("arch_prctl("):
        return "full", p
    assert after.startswith(f'execve("{rt.lowlevel.argv[0]}"'), events
    return "front", p


def assert_took(expected: str, rt: ocitest.Runtime, log: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    taken, p = path_taken(rt, log, *args, **kw)
    assert p.returncode == 0, p.stderr
    assert taken == expected, f"{' '.join(args)} took the {taken} path: {p.stderr}"
    return p


def created_then_seen_by_the_front(rt: ocitest.Runtime, log: Path, bundle: ocitest.Bundle, cid: str) -> None:
    """`cid` created without request (the full program saves the record),
    then passed through by the front."""
    bundle.shell("exit 0")
    bundle.write()
    rt.create(bundle, cid)
    assert_took("front", rt, log, "state", cid)


def created_with_a_device(rt: ocitest.Runtime, bundle: ocitest.Bundle, gpu: ocitest.FakeGpu, cid: str, script: str,
                          state_root: Path) -> tuple[Path, int]:
    """`cid` created with device 0 of the fake GPU (no limits), running
    `script`: its state dir and its init's pid."""
    bundle.annotate(ANNOTATION, gpu.qualified("0"))
    bundle.shell(script)
    bundle.write()
    rt.create(bundle, cid)
    state_dir = state_root / "containers" / cid
    assert state_dir.is_dir()
    pid = int((bundle.path / f"{cid}.pid").read_text())
    return state_dir, pid


@pytest.fixture
def fresh_record(gpuslice_runtime):
    """No record of this config yet (config paths are per test)."""
    record = record_of(gpuslice_runtime)
    record.unlink(missing_ok=True)
    yield record
    record.unlink(missing_ok=True)


def test_container_without_request_starts_and_ends_through_the_front(gpuslice_runtime, fresh_record, bundle, cid,
                                                                   gpuslice_state_dir, test_tmp):
    rt, log = gpuslice_runtime, test_tmp / "strace.log"
    bundle.shell("echo fast; exit 3")
    bundle.write()
    assert not fresh_record.exists()
    rt.create(bundle, cid)  # always the full program, which saves the record
    st = fresh_record.stat()
    assert (st.st_uid, st.st_mode & 0o777) == (0, 0o600)
    config = Path(rt.env["GPUSLICE_CONFIG"]).read_bytes()
    record = fresh_record.read_bytes()
    assert record.endswith(b"config-bytes %d\n" % len(config) + config), record
    assert f"\nruntime {rt.lowlevel.argv[0]}\ntrigger ".encode() in record, record
    assert f"\nstate-dir {gpuslice_state_dir}\n".encode() in record, record
    assert b"\ntrigger cdi.k8s.io/\n" in record and record.count(b"\ntrigger ") == 3, record

    pid = int((bundle.path / f"{cid}.pid").read_text())
    assert '"status": "created"' in assert_took("front", rt, log, "state", cid).stdout
    assert_took("front", rt, log, "start", cid)
    assert ocitest.wait_pid(pid, 30) == 3
    assert_took("front", rt, log, "delete", cid)
    assert rt.list_ids() == []
    assert (bundle.path / f"{cid}.out").read_text() == "fast\n"
    assert not (gpuslice_state_dir / "containers" / cid).exists()

    # the record in place, a create that asks for nothing is the front's too
    second = cid + "-2"
    assert_took("front", rt, log, *create_args(bundle, second), prefix=QUIET)
    pid = int((bundle.path / f"{second}.pid").read_text())
    assert_took("front", rt, log, "start", second)
    assert ocitest.wait_pid(pid, 30) == 3
    assert_took("front", rt, log, "delete", second)
    assert not (gpuslice_state_dir / "containers" / second).exists()


# create's stdio is the container's: on a pipe, the call would not return
QUIET = ("sh", "-c", 'exec "$@" </dev/null >/dev/null 2>&1', "sh")


def create_args(bundle: ocitest.Bundle, cid: str) -> tuple:
    return "create", "--bundle", str(bundle.path), "--pid-file", str(bundle.path / f"{cid}.pid"), cid


def test_a_create_that_may_ask_for_a_device_is_the_full_programs(gpuslice_runtime, fresh_record, bundle, fake_gpu,
                                                                  cid, gpuslice_state_dir, test_tmp):
    """A request the entry's scan of config.json could miss would give a
    container no device, or no limit: every spelling of one, and whatever
    could hide one (a JSON escape), goes to the full program, which then
    injects the device."""
    rt, log = gpuslice_runtime, test_tmp / "strace.log"
    bundle.shell("exit 0")
    bundle.write()
    rt.create(bundle, cid)  # the full program writes the record
    rt.delete(cid, force=True)
    key = ANNOTATION.replace("/", "\\/")  # "cdi.k8s.io\/gpuslice-test": the same key once parsed
    for n, spelling in enumerate((ANNOTATION, key, ANNOTATION.replace("c", "\\u0063", 1))):
        bundle.annotate(ANNOTATION, fake_gpu.qualified("0"))
        text = bundle.write().decode().replace(json.dumps(ANNOTATION), json.dumps(ANNOTATION).replace(ANNOTATION, spelling))
        bundle.config_path.write_text(text)
        one = f"{cid}-{n}"
        assert_took("full", rt, log, *create_args(bundle, one), prefix=QUIET)
        assert ocitest.state_record(gpuslice_state_dir / "containers" / one)["cdi_env"], spelling  # the device is in
        rt.delete(one, force=True)
    # a device named in linux.devices, and a limit in the env
    bundle.spec["annotations"].pop(ANNOTATION)
    bundle.spec["linux"].setdefault("devices", []).append({"path": fake_gpu.qualified("0")})
    bundle.write()
    assert_took("full", rt, log, *create_args(bundle, cid + "-dev"), prefix=QUIET)
    assert (gpuslice_state_dir / "containers" / (cid + "-dev")).exists()
    rt.delete(cid + "-dev", force=True)
    bundle.spec["linux"]["devices"].pop()
    bundle.spec["process"]["env"].append("GPUSLICE_MEMORY_LIMIT=1Gi")
    bundle.write()
    taken, p = path_taken(rt, log, *create_args(bundle, cid + "-env"), prefix=QUIET)
    assert (taken, p.returncode) == ("full", 1)  # refused: a limit no claimed device carries
    assert cid + "-env" not in rt.list_ids()


def test_containers_with_state_are_left_to_the_full_program(gpuslice_runtime, fresh_record, bundle, make_bundle,
                                                            fake_gpu, cid, gpuslice_state_dir, test_tmp):
    """A verb of a container that has a state dir may have more to do than
    the runtime's (remove the state, add the CDI env): the front leaves
    delete and exec to the full program, and the verbs that start a monitor
    again (start, state, ...) where the dir has run/ (a container with
    limits, the only kind with a monitor). Another container's verbs, and a
    plain verb, stay the front's."""
    rt, log = gpuslice_runtime, test_tmp / "strace.log"
    # It runs until the test lets it end (a file in the fake driver's
    # directory, bound into it): the delete below must find it running,
    # however long the straced calls before it take on a busy machine.
    release = fake_gpu.host_dir / "release"
    state_dir, pid = created_with_a_device(
        rt, bundle, fake_gpu, cid, f"while [ ! -e {fake_gpu.MOUNT_DEST}/release ]; do sleep 0.05; done",
        gpuslice_state_dir)
    assert fresh_record.exists()
    assert_took("front", rt, log, "state", cid)  # devices without limits: no monitor
    (state_dir / "run").mkdir()  # as a container with limits has it
    assert_took("full", rt, log, "state", cid)
    (state_dir / "run").rmdir()
    assert_took("front", rt, log, "start", cid)
    # exec gets the container's CDI env; the id after flags is still found
    process = test_tmp / "process.json"
    process.write_text(json.dumps({"args": ["true"], "cwd": "/", "env": ["PATH=/bin"], "user": {"uid": 0, "gid": 0}}))
    assert_took("full", rt, log, "exec", "--process", str(process), cid)
    assert "GPUSLICE_FAKE_DRIVER=1" in process.read_text()
    # a verb the full program only passes on, and another container's
    assert_took("front", rt, log, "list")
    plain = make_bundle("plain")
    plain.shell("exit 0")
    plain.write()
    rt.create(plain, cid + "-plain")
    assert_took("front", rt, log, "state", cid + "-plain")
    assert_took("front", rt, log, "delete", "--force", cid + "-plain")
    # a flag the front does not know: it cannot be sure which argument is the id
    taken, _ = path_taken(rt, log, "state", "--unknown-flag", cid + "-plain")
    assert taken == "full"
    taken, p = path_taken(rt, log, "delete", cid)
    assert (taken, p.returncode) == ("full", 1), p.stderr  # runc: it is running
    assert state_dir.is_dir()
    release.touch()
    assert ocitest.wait_pid(pid, 30) == 0
    assert_took("full", rt, log, "delete", cid)
    assert not state_dir.exists()
    assert rt.list_ids() == []


def test_any_change_of_the_config_goes_through_the_full_program(gpuslice_runtime, fresh_record, bundle, cid,
                                                                    test_tmp):
    rt, log = gpuslice_runtime, test_tmp / "strace.log"
    created_then_seen_by_the_front(rt, log, bundle, cid)
    config = Path(rt.env["GPUSLICE_CONFIG"])
    config.write_bytes(config.read_bytes() + b"# one more comment\n")
    assert_took("full", rt, log, "state", cid)
    assert fresh_record.read_bytes().endswith(b"# one more comment\n")  # saved again: passed through from now on
    assert_took("front", rt, log, "state", cid)
    # not for a process that is not root's
    taken, _ = path_taken(rt, log, "state", cid, prefix=("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"))
    assert taken == "full"
    rt.delete(cid)


def test_only_a_record_of_roots_is_trusted(gpuslice_runtime, fresh_record, bundle, cid,
                                                                         test_tmp):
    rt, log = gpuslice_runtime, test_tmp / "strace.log"
    created_then_seen_by_the_front(rt, log, bundle, cid)

    os.chmod(fresh_record, 0o620)
    assert_took("full", rt, log, "state", cid)
    assert fresh_record.stat().st_mode & 0o777 == 0o600  # saved anew
    os.chown(fresh_record, 65534, 0)
    assert_took("full", rt, log, "state", cid)
    assert fresh_record.stat().st_uid == 0
    assert_took("front", rt, log, "state", cid)

    # a record directory others could write to
    mode = RECORD_DIR.stat().st_mode & 0o7777
    try:
        os.chmod(RECORD_DIR, 0o777)
        assert_took("full", rt, log, "state", cid)
        assert_took("full", rt, log, "state", cid)  # and none saved there
    finally:
        os.chmod(RECORD_DIR, mode)
    assert_took("front", rt, log, "state", cid)
    rt.delete(cid)


def test_a_record_another_build_wrote_goes_through_the_full_program(gpuslice_runtime, fresh_record, bundle, cid,
                                                                    test_tmp):
    """What a record says (above all which config.json keys ask for a GPU) is
    the decision of the build that wrote it: after an upgrade, the new
    binary's entry must not act on the old one's record."""
    rt, log = gpuslice_runtime, test_tmp / "strace.log"
    created_then_seen_by_the_front(rt, log, bundle, cid)
    notes = subprocess.run(["readelf", "-n", rt.argv[0]], capture_output=True, text=True, check=True).stdout
    build_id = re.search(r"Build ID: ([0-9a-f]+)", notes).group(1)
    lines = fresh_record.read_bytes().split(b"\n")
    assert lines[1] == b"writer " + build_id.encode(), lines[:2]
    other = build_id[:-1] + ("0" if build_id[-1] != "0" else "1")
    lines[1] = b"writer " + other.encode()
    fresh_record.write_bytes(b"\n".join(lines))
    assert_took("full", rt, log, "state", cid)
    assert fresh_record.read_bytes().split(b"\n")[1] == b"writer " + build_id.encode()  # saved anew
    assert_took("front", rt, log, "state", cid)
    rt.delete(cid)


def test_the_front_runs_the_runtime_the_full_program_would_find(gpuslice_runtime, bundle, cid, test_tmp):
    """The record names the runtimes as the config does; the front looks for
    them itself, at every call, the way the full program does: a runtime put
    since in a directory searched first is the one it runs, and never
    gpuslice-runtime itself, whatever name it is installed under."""
    log = test_tmp / "strace.log"
    name = "gpuslice-test-" + Path(gpuslice_runtime.lowlevel.argv[0]).name
    first, second = test_tmp / "first", test_tmp / "second"
    first.mkdir()
    second.mkdir()
    shutil.copy2(gpuslice_runtime.lowlevel.argv[0], second / name)
    config = test_tmp / "by-name.toml"
    config.write_text(Path(gpuslice_runtime.env["GPUSLICE_CONFIG"]).read_text()
                      .replace(f'"{gpuslice_runtime.lowlevel.argv[0]}"', f'"{name}"'))
    assert f'"{name}"' in config.read_text()
    env = dict(gpuslice_runtime.env, GPUSLICE_CONFIG=str(config), PATH=f"{first}:{second}:{os.environ['PATH']}")
    lowlevel = ocitest.Runtime(name, [str(second / name)], gpuslice_runtime.root)
    rt = ocitest.Runtime("gpuslice by name", gpuslice_runtime.argv, gpuslice_runtime.root, env=env, lowlevel=lowlevel)
    record = record_of(rt)
    try:
        created_then_seen_by_the_front(rt, log, bundle, cid)
        (first / name).symlink_to(Path(gpuslice_runtime.argv[0]).resolve())  # itself, first in PATH: passed over
        assert_took("front", rt, log, "state", cid)
        (first / name).unlink()
        shutil.copy2(gpuslice_runtime.lowlevel.argv[0], first / name)  # now found first
        rt.lowlevel = ocitest.Runtime(name, [str(first / name)], gpuslice_runtime.root)
        assert_took("front", rt, log, "state", cid)
        rt.delete(cid)
    finally:
        record.unlink(missing_ok=True)
