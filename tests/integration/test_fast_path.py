"""gpuslice-runtime's fast path (shim/fast_path/): before the C library
starts, it execs the low-level runtime when the record the full program
saved shows that the full program would do nothing else.

Which path a call took is read from strace: after the wrapper's execve, the
full program's first system call is glibc's arch_prctl; the fast path's is
the execve of the runtime. Every test runs under runc and crun.
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
RECORD_DIR = Path("/run/gpuslice/runtime-fast-path")

pytestmark = pytest.mark.gpuslice


def record_name(config_path: str) -> str:
    """FNV-1a 64 of the config path, as shim/fast_path/fast_path.c names it."""
    h = 0xcbf29ce484222325
    for b in config_path.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def record_of(rt: ocitest.Runtime) -> Path:
    return RECORD_DIR / record_name(rt.env["GPUSLICE_CONFIG"])


def path_taken(rt: ocitest.Runtime, log: Path, *args: str, env: dict | None = None, prefix: tuple = ()) -> tuple[str, subprocess.CompletedProcess]:
    """("fast" or "full", the call) for `rt` called with args under strace.
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
    # the next of the wrapper's own calls, or the runtime's execve in a
    # child (the fast path's delete of a live container forks)
    after = next(call for who, call in events[start + 1:]
                 if who == pid or call.startswith(f'execve("{rt.lowlevel.argv[0]}"'))
    if after.startswith("arch_prctl("):
        return "full", p
    assert after.startswith(f'execve("{rt.lowlevel.argv[0]}"'), events
    return "fast", p


def assert_took(expected: str, rt: ocitest.Runtime, log: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    taken, p = path_taken(rt, log, *args, **kw)
    assert p.returncode == 0, p.stderr
    assert taken == expected, f"{' '.join(args)} took the {taken} path: {p.stderr}"
    return p


def created_for_the_fast_path(rt: ocitest.Runtime, log: Path, bundle: ocitest.Bundle, cid: str) -> None:
    """`cid` created without request (the full program saves the record),
    then seen on the fast path."""
    bundle.shell("exit 0")
    bundle.write()
    rt.create(bundle, cid)
    assert_took("fast", rt, log, "state", cid)


def start_time(pid: int) -> int:
    """Field 22 of /proc/PID/stat, as the state dir's records hold it."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


def created_with_a_device(rt: ocitest.Runtime, bundle: ocitest.Bundle, gpu: ocitest.FakeGpu, cid: str, script: str,
                          state_root: Path, init_recorded: bool = False) -> tuple[Path, int]:
    """`cid` created with device 0 of the fake GPU (no limits), running
    `script`: its state dir and its init's pid. With `init_recorded`, the
    init is recorded in the state dir as it is for a container with limits
    (by a process of the create's own that waits for the runtime to exit)."""
    bundle.annotate(ANNOTATION, gpu.qualified("0"))
    bundle.shell(script)
    bundle.write()
    rt.create(bundle, cid)
    state_dir = state_root / "containers" / cid
    assert state_dir.is_dir()
    pid = int((bundle.path / f"{cid}.pid").read_text())
    if init_recorded:
        (state_dir / "init").write_text(f"{pid} {start_time(pid)}\n")
    return state_dir, pid


@pytest.fixture
def fresh_record(gpuslice_runtime):
    """No record of this config yet (config paths are per test)."""
    record = record_of(gpuslice_runtime)
    record.unlink(missing_ok=True)
    yield record
    record.unlink(missing_ok=True)


def test_container_without_request_starts_and_ends_on_the_fast_path(gpuslice_runtime, fresh_record, bundle, cid,
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
    # what the config parsed to, for the calls left to the full program
    assert b"\nconfig-parsed " in record and b"\nconfig-parsed none\n" not in record, record
    assert f"\nruntime {rt.lowlevel.argv[0]}\n".encode() in record, record
    assert f"\nstate-dir {gpuslice_state_dir}\n".encode() in record, record

    pid = int((bundle.path / f"{cid}.pid").read_text())
    assert '"status": "created"' in assert_took("fast", rt, log, "state", cid).stdout
    assert_took("fast", rt, log, "start", cid)
    assert ocitest.wait_pid(pid, 30) == 3
    assert_took("fast", rt, log, "delete", cid)
    assert rt.list_ids() == []
    assert (bundle.path / f"{cid}.out").read_text() == "fast\n"
    assert not (gpuslice_state_dir / "containers" / cid).exists()

    # the record in place, a create that asks for nothing is the entry's too
    second = cid + "-2"
    assert_took("fast", rt, log, *create_args(bundle, second), prefix=QUIET)
    pid = int((bundle.path / f"{second}.pid").read_text())
    assert_took("fast", rt, log, "start", second)
    assert ocitest.wait_pid(pid, 30) == 3
    assert_took("fast", rt, log, "delete", second)
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
        assert (gpuslice_state_dir / "containers" / one / "cdi-env").exists(), spelling  # the device is in
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


def test_a_create_with_a_device_reads_its_config_record_and_config_json_once(gpuslice_runtime, fresh_record, bundle,
                                                                             fake_gpu, cid, gpuslice_state_dir,
                                                                             test_tmp):
    """The entry hands what it read to the full program (fast_path.h's
    hand-over): a create with a device opens the config, its record and
    config.json once each, and still gets the device; with no record to
    match (the first create), the full program reads them itself."""
    rt, log = gpuslice_runtime, test_tmp / "strace.log"
    config = rt.env["GPUSLICE_CONFIG"]

    def opens(one: str) -> dict[str, int]:
        bundle.annotate(ANNOTATION, fake_gpu.qualified("0"))
        bundle.write()
        p = subprocess.run(["strace", "-qq", "-e", "trace=openat,open", "-o", str(log), *QUIET,
                            *rt.cmd(*create_args(bundle, one))],
                           env=rt.env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        assert (gpuslice_state_dir / "containers" / one / "cdi-env").exists()  # the device is in
        calls = [line for line in log.read_text().splitlines() if line.startswith(("openat(", "open("))]
        count = {name: sum(f'"{path}"' in c for c in calls) for name, path in
                 (("config", config), ("record", record_of(rt).name), ("config.json", bundle.config_path))}
        rt.delete(one, force=True)
        return count

    # no record yet: the entry looks for it and stops; the full program reads all three
    assert opens(cid + "-first") == {"config": 1, "record": 2, "config.json": 1}
    assert opens(cid) == {"config": 1, "record": 1, "config.json": 1}


def test_a_create_takes_its_config_as_parsed_from_the_record(gpuslice_runtime, fresh_record, bundle, fake_gpu, cid,
                                                            gpuslice_state_dir):
    """The record keeps what the full program made of the config's bytes
    (shim::config_snapshot), and a create with a device takes its config
    from there instead of parsing the text again: a record whose parsed
    config names another state dir (which only root could write) puts the
    container's state there."""
    rt = gpuslice_runtime
    bundle.annotate(ANNOTATION, fake_gpu.qualified("0"))
    bundle.write()
    rt.create(bundle, cid)  # the full program writes the record
    rt.delete(cid, force=True)
    record = fresh_record.read_bytes()
    size, rest = record.split(b"\nconfig-parsed ", 1)[1].split(b"\n", 1)
    parsed = rest[:int(size)]
    ours = str(gpuslice_state_dir).encode()
    other = gpuslice_state_dir.with_name(gpuslice_state_dir.name[:-1] + "X")  # as long: the size holds
    assert parsed.count(ours) == 1 and not other.exists()
    fresh_record.write_bytes(record.replace(b"config-parsed %s\n%s" % (size, parsed),
                                            b"config-parsed %s\n%s" % (size, parsed.replace(ours, str(other).encode()))))
    second = cid + "-2"
    rt.create(bundle, second)
    assert (other / "containers" / second / "cdi-env").exists()
    assert not (gpuslice_state_dir / "containers" / second).exists()
    rt.delete(second, force=True)
    assert not (other / "containers" / second).exists()


def test_containers_with_state_or_a_monitor_are_left_to_the_full_program(gpuslice_runtime, fresh_record, bundle,
                                                                         fake_gpu, cid, gpuslice_state_dir, test_tmp):
    rt, log = gpuslice_runtime, test_tmp / "strace.log"
    # It runs until the test lets it end (a file in the fake driver's
    # directory, bound into it): the delete below must find it running,
    # however long the straced calls before it take on a busy machine.
    release = fake_gpu.host_dir / "release"
    state_dir, pid = created_with_a_device(
        rt, bundle, fake_gpu, cid, f"while [ ! -e {fake_gpu.MOUNT_DEST}/release ]; do sleep 0.05; done",
        gpuslice_state_dir)
    assert state_dir.is_dir()
    assert fresh_record.exists()
    # devices without limits: no monitor to start again
    assert_took("fast", rt, log, "state", cid)
    assert_took("fast", rt, log, "start", cid)
    # exec gets the container's CDI env; the id after flags is still found
    process = test_tmp / "process.json"
    process.write_text(json.dumps({"args": ["true"], "cwd": "/", "env": ["PATH=/bin"], "user": {"uid": 0, "gid": 0}}))
    assert_took("full", rt, log, "exec", "--process", str(process), cid)
    assert "GPUSLICE_FAKE_DRIVER=1" in process.read_text()
    # a container with a monitor: `state` may have to start it again
    (state_dir / "monitor-args").write_bytes(b"")
    assert_took("full", rt, log, "state", cid)
    (state_dir / "monitor-args").unlink()
    (state_dir / "region-id").unlink(missing_ok=True)  # a monitor it tried to start (none: no init recorded)
    # a verb the full program only passes on stays fast
    assert_took("fast", rt, log, "list")
    # a state dir with a file a container without limits never has
    (state_dir / "limits").write_text("")
    taken, p = path_taken(rt, log, "delete", cid)
    assert (taken, p.returncode) == ("full", 1), p.stderr  # runc: it is running
    (state_dir / "limits").unlink()
    release.touch()
    assert ocitest.wait_pid(pid, 30) == 0
    assert_took("fast", rt, log, "delete", cid)  # the init has ended: the dir goes first
    assert not state_dir.exists()
    assert rt.list_ids() == []


def test_a_container_whose_monitor_runs_is_the_fast_paths(gpuslice_runtime, fresh_record, bundle, fake_gpu, cid,
                                                          gpuslice_state_dir, test_tmp):
    """For `state` and `start` of a container with a monitor the full
    program's only extra is to start the monitor again when it is gone: while
    the process its record names (pid and start time) runs, the entry execs
    the runtime; for any doubt about the record it leaves the call to the
    full program. A sleep stands in for the monitor (the entry only reads the
    record and /proc)."""
    rt, log = gpuslice_runtime, test_tmp / "strace.log"
    state_dir, pid = created_with_a_device(rt, bundle, fake_gpu, cid, "sleep 2", gpuslice_state_dir,
                                           init_recorded=True)
    record = state_dir / "monitor"
    stand_in = subprocess.Popen(["sleep", "60"])
    try:
        (state_dir / "monitor-args").write_bytes(b"")
        assert_took("full", rt, log, "state", cid)  # no record
        os.unlink(state_dir / "region-id")  # written by the restart the full program tried
        for text, taken in ((f"{stand_in.pid} {start_time(stand_in.pid)}\n", "fast"),
                            (f"{stand_in.pid} {start_time(stand_in.pid) + 1}\n", "full"),  # a reused pid
                            (f"{stand_in.pid} {start_time(stand_in.pid)}", "full"),  # not as the state dir writes it
                            (f"{stand_in.pid}\n", "full")):
            record.write_text(text)
            assert_took(taken, rt, log, "state", cid)
            (state_dir / "region-id").unlink(missing_ok=True)
        record.write_text(f"{stand_in.pid} {start_time(stand_in.pid)}\n")
        os.chmod(state_dir, 0o722)  # a state dir others could have written
        assert_took("full", rt, log, "state", cid)
        os.chmod(state_dir, 0o700)
        record.unlink()
        record.symlink_to(test_tmp / "elsewhere")
        (test_tmp / "elsewhere").write_text(f"{stand_in.pid} {start_time(stand_in.pid)}\n")
        assert_took("full", rt, log, "state", cid)
        record.unlink()
        record.write_text(f"{stand_in.pid} {start_time(stand_in.pid)}\n")
        assert_took("fast", rt, log, "start", cid)
    finally:
        stand_in.kill()
        stand_in.wait()
    (state_dir / "region-id").unlink(missing_ok=True)
    assert_took("full", rt, log, "state", cid)  # the monitor it names has ended
    assert ocitest.wait_pid(pid, 30) == 0
    rt.delete(cid)
    assert not state_dir.exists()


def test_delete_of_an_ended_container_whose_monitor_runs_leaves_the_dir_to_the_monitor(
        gpuslice_runtime, fresh_record, bundle, fake_gpu, cid, gpuslice_state_dir, test_tmp):
    """A container with limits (a state dir with more than plain files)
    whose init has ended: while the process its monitor record names runs,
    the entry execs the runtime's delete and leaves the dir to that monitor,
    which removes it when it sees the init end; with no monitor running the
    full program removes the dir. A sleep stands in for the monitor."""
    rt, log = gpuslice_runtime, test_tmp / "strace.log"
    stand_in = subprocess.Popen(["sleep", "60"])
    try:
        monitors = {"watched": f"{stand_in.pid} {start_time(stand_in.pid)}\n",
                    "unwatched": f"{stand_in.pid} {start_time(stand_in.pid) + 1}\n"}  # a reused pid
        # both created first: a create collects the dirs of ended inits
        created = {name: created_with_a_device(rt, bundle, fake_gpu, f"{cid}-{name}", "true", gpuslice_state_dir,
                                               init_recorded=True)
                   for name in monitors}
        dirs = {name: state_dir for name, (state_dir, _) in created.items()}
        for name, monitor in monitors.items():
            # started as a container without limits: a start refuses one
            # whose monitor cannot be started again
            rt.start(f"{cid}-{name}")
            (dirs[name] / "monitor-args").write_bytes(b"")
            (dirs[name] / "monitor").write_text(monitor)
            assert_took("fast" if name == "watched" else "full", rt, log, "state", f"{cid}-{name}")
            (dirs[name] / "region-id").unlink(missing_ok=True)  # written by the restart the full program tried
        for _, pid in created.values():
            assert ocitest.wait_pid(pid, 30) == 0
        # a live init keeps the call the full program's
        assert_took("fast", rt, log, "delete", f"{cid}-watched")
        assert dirs["watched"].is_dir()  # the monitor's to remove
        assert_took("full", rt, log, "delete", f"{cid}-unwatched")
        assert not dirs["unwatched"].exists()
        assert rt.list_ids() == []
    finally:
        stand_in.kill()
        stand_in.wait()


def test_delete_of_a_live_container_with_devices_is_fast_and_keeps_the_state_until_it_is_gone(
        gpuslice_runtime, fresh_record, bundle, fake_gpu, cid, gpuslice_state_dir, test_tmp):
    """The entry runs the runtime as a child and removes the state dir
    itself, as the full program does: only once the runtime said yes and
    the container's init is gone."""
    rt, log = gpuslice_runtime, test_tmp / "strace.log"
    state_dir, pid = created_with_a_device(rt, bundle, fake_gpu, cid, "sleep 60", gpuslice_state_dir)
    assert sorted(p.name for p in state_dir.iterdir()) == ["cdi-env", "creator", "format", "init-pid-file"]
    assert_took("fast", rt, log, "start", cid)
    taken, p = path_taken(rt, log, "delete", cid)
    assert taken == "fast" and p.returncode != 0, p.stderr  # refused by the runtime: the container runs
    assert state_dir.is_dir() and rt.list_ids() == [cid]
    # another runtime root knows no such container: the state stays
    other = test_tmp / "other-root"
    other.mkdir()
    taken, p = path_taken(rt, log, "--root", str(other), "delete", cid)
    assert taken == "fast" and p.returncode != 0
    assert state_dir.is_dir()
    assert_took("fast", rt, log, "delete", "--force", cid)
    ocitest.wait_pid(pid, 30)
    assert not state_dir.exists()
    assert rt.list_ids() == []
    # the runtime's status comes back: a second delete finds nothing
    taken, p = path_taken(rt, log, "delete", cid)
    assert taken == "fast" and p.returncode != 0, p.stderr


@pytest.mark.parametrize("names", ["1", "garbage"])
def test_delete_judges_a_pid_file_that_names_no_init_of_this_create_as_the_state_dir_does(
        gpuslice_runtime, fresh_record, bundle, fake_gpu, cid, gpuslice_state_dir, test_tmp, names):
    """A container without limits has no init record: its init is the
    process its runtime's pid file names, if that one started no earlier
    than the create. A pid file naming an older process (pid 1) or none
    (garbage) names no init of this create: the entry's delete takes the
    dir for stale and removes it first, whatever the runtime then says (here
    it refuses: the container runs), as the full program would."""
    rt, log = gpuslice_runtime, test_tmp / "strace.log"
    state_dir, pid = created_with_a_device(rt, bundle, fake_gpu, cid, "sleep 60", gpuslice_state_dir)
    assert_took("fast", rt, log, "start", cid)
    (bundle.path / f"{cid}.pid").write_text(names)
    taken, p = path_taken(rt, log, "delete", cid)
    assert taken == "fast" and p.returncode != 0, p.stderr  # refused by the runtime: the container runs
    assert not state_dir.exists()
    assert rt.list_ids() == [cid]
    rt.delete(cid, force=True)
    ocitest.wait_pid(pid, 30)


def test_any_change_of_config_or_path_goes_through_the_full_program(gpuslice_runtime, fresh_record, bundle, cid,
                                                                    test_tmp):
    rt, log = gpuslice_runtime, test_tmp / "strace.log"
    created_for_the_fast_path(rt, log, bundle, cid)
    config = Path(rt.env["GPUSLICE_CONFIG"])
    config.write_bytes(config.read_bytes() + b"# one more comment\n")
    assert_took("full", rt, log, "state", cid)
    assert fresh_record.read_bytes().endswith(b"# one more comment\n")  # saved again: fast from now on
    assert_took("fast", rt, log, "state", cid)
    other_path = dict(rt.env, PATH="/usr/sbin:/usr/bin:/sbin:/bin:/nonexistent")
    assert_took("full", rt, log, "state", cid, env=other_path)
    # not for a process that is not root's
    taken, _ = path_taken(rt, log, "state", cid, prefix=("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"))
    assert taken == "full"
    rt.delete(cid)


def test_only_a_record_of_roots_that_names_the_same_runtime_is_trusted(gpuslice_runtime, fresh_record, bundle, cid,
                                                                         test_tmp):
    rt, log = gpuslice_runtime, test_tmp / "strace.log"
    created_for_the_fast_path(rt, log, bundle, cid)

    os.chmod(fresh_record, 0o620)
    assert_took("full", rt, log, "state", cid)
    assert fresh_record.stat().st_mode & 0o777 == 0o600  # saved anew
    os.chown(fresh_record, 65534, 0)
    assert_took("full", rt, log, "state", cid)
    assert fresh_record.stat().st_uid == 0
    assert_took("fast", rt, log, "state", cid)

    # a record naming another program under the runtime's identity
    lines = fresh_record.read_bytes().split(b"\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(b"runtime "))
    lines[at] = b"runtime " + shutil.which("true").encode()
    fresh_record.write_bytes(b"\n".join(lines))
    p = assert_took("full", rt, log, "state", cid)
    assert '"status": "created"' in p.stdout

    # a record directory others could write to
    mode = RECORD_DIR.stat().st_mode & 0o7777
    try:
        os.chmod(RECORD_DIR, 0o777)
        assert_took("full", rt, log, "state", cid)
        assert_took("full", rt, log, "state", cid)  # and none saved there
    finally:
        os.chmod(RECORD_DIR, mode)
    assert_took("fast", rt, log, "state", cid)
    rt.delete(cid)


def test_a_record_another_build_wrote_goes_through_the_full_program(gpuslice_runtime, fresh_record, bundle, cid,
                                                                    test_tmp):
    """What a record says (above all which config.json keys ask for a GPU) is
    the decision of the build that wrote it: after an upgrade, the new
    binary's entry must not act on the old one's record."""
    rt, log = gpuslice_runtime, test_tmp / "strace.log"
    created_for_the_fast_path(rt, log, bundle, cid)
    notes = subprocess.run(["readelf", "-n", rt.argv[0]], capture_output=True, text=True, check=True).stdout
    build_id = re.search(r"Build ID: ([0-9a-f]+)", notes).group(1)
    lines = fresh_record.read_bytes().split(b"\n")
    assert lines[1] == b"writer " + build_id.encode(), lines[:2]
    other = build_id[:-1] + ("0" if build_id[-1] != "0" else "1")
    lines[1] = b"writer " + other.encode()
    fresh_record.write_bytes(b"\n".join(lines))
    assert_took("full", rt, log, "state", cid)
    assert fresh_record.read_bytes().split(b"\n")[1] == b"writer " + build_id.encode()  # saved anew
    assert_took("fast", rt, log, "state", cid)
    rt.delete(cid)


def test_a_runtime_that_would_now_be_found_first_goes_through_the_full_program(gpuslice_runtime, bundle, cid,
                                                                                 test_tmp):
    """The record names the runtime the search found; one put since in a
    directory the search looked in first (a crun installed, a runc in
    /usr/local/sbin) is the one the full program would run: the next call is
    the full program's, which finds it and records it."""
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
        created_for_the_fast_path(rt, log, bundle, cid)
        assert f"\nruntime {second / name}\n".encode() in record.read_bytes()
        assert_took("fast", rt, log, "state", cid)
        (first / "unrelated").write_text("")  # any change there: one look again
        assert_took("full", rt, log, "state", cid)
        assert_took("fast", rt, log, "state", cid)
        shutil.copy2(gpuslice_runtime.lowlevel.argv[0], first / name)  # now found first
        rt.lowlevel = ocitest.Runtime(name, [str(first / name)], gpuslice_runtime.root)
        assert_took("full", rt, log, "state", cid)
        assert f"\nruntime {first / name}\n".encode() in record.read_bytes()  # recorded anew
        assert_took("fast", rt, log, "state", cid)
        rt.delete(cid)
    finally:
        record.unlink(missing_ok=True)


def test_a_replaced_runtime_goes_through_the_full_program(gpuslice_runtime, bundle, cid, test_tmp):
    log = test_tmp / "strace.log"
    copy = test_tmp / "bin" / Path(gpuslice_runtime.lowlevel.argv[0]).name
    copy.parent.mkdir()
    shutil.copy2(gpuslice_runtime.lowlevel.argv[0], copy)
    config = test_tmp / "copy.toml"
    config.write_text(Path(gpuslice_runtime.env["GPUSLICE_CONFIG"]).read_text()
                      .replace(f'"{gpuslice_runtime.lowlevel.argv[0]}"', f'"{copy}"'))
    lowlevel = ocitest.Runtime(f"copy of {gpuslice_runtime.lowlevel.name}", [str(copy)], gpuslice_runtime.root)
    rt = ocitest.Runtime("gpuslice+copy", gpuslice_runtime.argv, gpuslice_runtime.root,
                         env=dict(gpuslice_runtime.env, GPUSLICE_CONFIG=str(config)), lowlevel=lowlevel)
    record = record_of(rt)
    try:
        created_for_the_fast_path(rt, log, bundle, cid)
        shutil.copy2(copy, copy.with_name("new"))
        os.replace(copy.with_name("new"), copy)  # the same path, another file
        assert_took("full", rt, log, "state", cid)
        assert_took("fast", rt, log, "state", cid)
        rt.delete(cid)
    finally:
        record.unlink(missing_ok=True)


# ---- a create with devices from a plan (shim/fast_path/create_plan.h) ------

PLAN_DIR = Path("/run/gpuslice/runtime-create-plans")


def plan_of(rt: ocitest.Runtime, devices: str) -> Path:
    """The plan of the config and device list, as create_plan.h names it."""
    return PLAN_DIR / ("create-" + record_name(rt.env["GPUSLICE_CONFIG"] + "\n" + devices))


def files_of(state_dir: Path) -> dict[str, str]:
    return {f.name: f.read_text() for f in sorted(state_dir.iterdir())}


def planned(rt: ocitest.Runtime, bundle: ocitest.Bundle, gpu: ocitest.FakeGpu, cid: str, log: Path) -> dict:
    """A create with devices 0 and 1 by the full program, which leaves a plan
    for them (its spec files are over two seconds old by then: one changed
    later in the same tick of the file system's clock would not show), and
    its config.json as it wrote it."""
    time.sleep(2.1)
    bundle.annotate(ANNOTATION, gpu.qualified("0", "1"))
    bundle.shell("exit 0")
    original = bundle.write()
    assert_took("full", rt, log, *create_args(bundle, cid), prefix=QUIET)
    assert plan_of(rt, gpu.qualified("0", "1")).exists()
    written = json.loads(bundle.config_path.read_text())
    bundle.config_path.write_bytes(original)
    # The state dir was new: no mark of a collection of stale dirs yet, which
    # a create leaves to the full program.
    assert_took("full", rt, log, *create_args(bundle, cid + "-0"), prefix=QUIET)
    rt.delete(cid + "-0", force=True)
    bundle.config_path.write_bytes(original)
    return written


def test_a_create_with_devices_a_plan_covers_is_the_entrys_and_the_same(gpuslice_runtime, fresh_record, bundle,
                                                                       fake_gpu, cid, gpuslice_state_dir, test_tmp):
    """The second create of the same devices is the entry's alone: the
    config.json it writes is the document the full program wrote, its state
    dir holds the same records, its log the same line, and the container
    gets the devices (its start and delete go on as for any)."""
    rt, log = gpuslice_runtime, test_tmp / "strace.log"
    by_full = planned(rt, bundle, fake_gpu, cid, log)
    second = cid + "-2"
    assert_took("fast", rt, log, *create_args(bundle, second), prefix=QUIET)
    assert json.loads(bundle.config_path.read_text()) == by_full
    full, entry = files_of(gpuslice_state_dir / "containers" / cid), files_of(gpuslice_state_dir / "containers" / second)
    assert sorted(full) == sorted(entry) == ["cdi-env", "creator", "format", "init-pid-file"]
    assert entry["cdi-env"] == full["cdi-env"] and entry["format"] == full["format"]
    assert entry["init-pid-file"] == f"{bundle.path / (second + '.pid')}\n"
    pid, start = map(int, entry["creator"].split())
    assert entry["creator"] == f"{pid} {start}\n" and pid > 0
    state = gpuslice_state_dir / "containers" / second
    assert (state.stat().st_mode & 0o777, (state / "creator").stat().st_mode & 0o777,
            (state / "cdi-env").stat().st_mode & 0o777) == (0o700, 0o600, 0o444)
    lines = (test_tmp / "gpuslice-log" / "gpuslice-runtime.log").read_text().splitlines()
    said = [re.sub(r"^\S+ gpuslice-runtime\[\d+\] ", "", line) for line in lines if ": injected " in line]
    assert (said[0], said[-1]) == tuple(f"info: container {c}: injected {fake_gpu.qualified('0', '1')}"
                                        for c in (cid, second))
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z gpuslice-runtime\[\d+\] info", lines[-1])
    init = int((bundle.path / f"{second}.pid").read_text())
    rt.start(second)
    assert ocitest.wait_pid(init, 30) == 0
    assert_took("fast", rt, log, "delete", second)
    assert not state.exists()
    rt.delete(cid, force=True)


def test_a_plan_that_no_longer_holds_leaves_the_create_to_the_full_program(gpuslice_runtime, fresh_record, bundle,
                                                                          fake_gpu, cid, gpuslice_state_dir,
                                                                          test_tmp):
    """Whatever the plan was made of, changed, and whatever in config.json it
    does not vouch for, is the full program's again; each create still gets
    its devices."""
    rt, log = gpuslice_runtime, test_tmp / "strace.log"
    # device 1's node as a spec that leaves its type, numbers and mode to the host node
    spec = fake_gpu.cdi_spec()
    node = fake_gpu.nodes["/dev/nvidia1"][0]
    spec["devices"][1]["containerEdits"]["deviceNodes"] = [{"path": "/dev/nvidia1", "hostPath": str(node)}]
    fake_gpu.spec_file.write_text(json.dumps(spec))
    planned(rt, bundle, fake_gpu, cid, log)
    original = bundle.config_path.read_bytes()
    n = 0

    def create(expected: str) -> dict:
        """A create that took the path expected: the config.json it wrote."""
        nonlocal n
        n += 1
        one = f"{cid}-{n}"
        assert_took(expected, rt, log, *create_args(bundle, one), prefix=QUIET)
        assert "GPUSLICE_FAKE_GPU1=present" in (gpuslice_state_dir / "containers" / one / "cdi-env").read_text()
        rt.delete(one, force=True)
        written = json.loads(bundle.config_path.read_text())
        bundle.config_path.write_bytes(original)
        return written

    create("fast")
    # an env entry spelled with an escape, an SELinux label
    spec = json.loads(original)
    spec["process"]["env"].append("X=\u00e9")
    bundle.config_path.write_text(json.dumps(spec, ensure_ascii=True))
    create("full")
    spec = json.loads(original)
    spec["linux"]["mountLabel"] = "system_u:object_r:container_file_t:s0"
    bundle.config_path.write_text(json.dumps(spec))
    assert path_taken(rt, log, *create_args(bundle, cid + "-label"), prefix=QUIET)[0] == "full"  # runc refuses it here
    if cid + "-label" in rt.list_ids():
        rt.delete(cid + "-label", force=True)
    bundle.config_path.write_bytes(original)
    create("fast")  # the full program left the plan as it was
    # a host node that changed: its mode, then its numbers
    node.chmod(0o600)
    create("full")
    create("fast")  # planned again by the full program, which saw the new mode
    node.unlink()
    os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(ocitest.NVIDIA_MAJOR, 7))
    assert {"path": "/dev/nvidia1", "type": "c", "major": ocitest.NVIDIA_MAJOR, "minor": 7, "fileMode": 0o600} in \
        create("full")["linux"]["devices"]
    assert {"path": "/dev/nvidia1", "type": "c", "major": ocitest.NVIDIA_MAJOR, "minor": 7, "fileMode": 0o600} in \
        create("fast")["linux"]["devices"]
    # a spec file that changed, then one more in the spec dir
    time.sleep(2.1)
    fake_gpu.spec_file.write_text(fake_gpu.spec_file.read_text() + " ")
    create("full")
    time.sleep(2.1)
    create("full")  # the full program planned nothing while the file was new
    create("fast")
    (fake_gpu.spec_dir / "other.yaml").write_text("cdiVersion: 0.6.0\nkind: example.com/other\ndevices: []\n")
    create("full")
    # stale dirs due to be collected
    marker = gpuslice_state_dir / "stale-collected"
    os.utime(marker, (time.time() - 120, time.time() - 120))
    create("full")
    rt.delete(cid, force=True)


def test_a_create_from_a_plan_refuses_nothing_the_full_program_would_not(gpuslice_runtime, fresh_record, bundle,
                                                                         fake_gpu, cid, gpuslice_state_dir, test_tmp):
    """An id in use, or a config.json the full program refuses, goes to the
    full program, which says why; nothing is left behind."""
    rt, log = gpuslice_runtime, test_tmp / "strace.log"
    planned(rt, bundle, fake_gpu, cid, log)
    # the id of a container that lives
    taken, p = path_taken(rt, log, *create_args(bundle, cid), prefix=QUIET)
    assert (taken, p.returncode) == ("full", 1)
    assert files_of(gpuslice_state_dir / "containers" / cid)["init-pid-file"].startswith(str(bundle.path))
    # a key given twice
    text = bundle.config_path.read_text().rstrip()
    bundle.config_path.write_text(text[:-1] + ', "ociVersion": "x"}')
    taken, p = path_taken(rt, log, *create_args(bundle, cid + "-twice"), prefix=QUIET)
    assert (taken, p.returncode) == ("full", 1)
    assert not (gpuslice_state_dir / "containers" / (cid + "-twice")).exists()
    rt.delete(cid, force=True)


def test_a_limit_of_gpushare_in_the_env_leaves_the_create_to_the_full_program(gpuslice_runtime, fresh_record, bundle,
                                                                              fake_gpu, cid, test_tmp):
    """With accept-gpushare-env, ALIYUN_COM_GPU_MEM_CONTAINER in the env is a
    limit the full program reads (or refuses): a plan made for the same
    devices without it does not cover such a create."""
    rt, log = gpuslice_runtime, test_tmp / "strace.log"
    config = Path(rt.env["GPUSLICE_CONFIG"])
    config.write_text(config.read_text().replace("[runtime]\n", "[runtime]\naccept-gpushare-env = true\n", 1))
    planned(rt, bundle, fake_gpu, cid, log)
    spec = json.loads(bundle.config_path.read_text())
    spec["process"]["env"].append("ALIYUN_COM_GPU_MEM_CONTAINER=abc")
    bundle.config_path.write_text(json.dumps(spec))
    taken, p = path_taken(rt, log, *create_args(bundle, cid + "-gpushare"), prefix=QUIET)
    assert (taken, p.returncode) == ("full", 1)  # refused: not a number of GiB
    assert cid + "-gpushare" not in rt.list_ids()
    rt.delete(cid, force=True)


def test_a_runtime_that_cannot_be_executed_gets_config_json_back(gpuslice_runtime, fresh_record, bundle, fake_gpu,
                                                                 cid, gpuslice_state_dir, test_tmp):
    """The entry's create undoes what it did when the runtime's exec fails
    (config.json as it was read, the state dir gone) and hands over: the
    full program then refuses, naming the runtime."""
    rt, log = gpuslice_runtime, test_tmp / "strace.log"
    runtime = test_tmp / "lowlevel-runtime"
    shutil.copy(rt.lowlevel.argv[0], runtime)
    config = Path(rt.env["GPUSLICE_CONFIG"])
    config.write_text(re.sub(r"runtimes = \[[^\]]*\]", f'runtimes = ["{runtime}"]', config.read_text(), count=1))
    planned(rt, bundle, fake_gpu, cid, log)
    original = bundle.config_path.read_bytes()
    runtime.chmod(0o644)
    try:
        one = cid + "-noexec"
        p = subprocess.run(rt.cmd(*create_args(bundle, one)), env=rt.env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=60)
        assert p.returncode == 1 and "no low-level runtime found" in p.stderr, p.stderr
        assert bundle.config_path.read_bytes() == original
        assert not (gpuslice_state_dir / "containers" / one).exists()
        lines = (test_tmp / "gpuslice-log" / "gpuslice-runtime.log").read_text().splitlines()
        assert sum(f"container {one}: injected " in line for line in lines) == 1  # the entry's, before its exec
    finally:
        runtime.chmod(0o755)
    rt.delete(cid, force=True)
