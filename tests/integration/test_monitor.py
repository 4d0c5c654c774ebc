"""gpuslice-shim's enforcement through the driver's own accounting (issue
12, part 2), with real runc containers.

The fake driver keeps each process's usage in /run/fake-nvidia-driver/
processes (its stand-in for the kernel driver's per-process accounting),
bind-mounted into the containers; the fake NVML, which the monitor loads by
path (monitor.nvml-path), lists the node's processes from it with host
pids, as the real NVML does. The offender is a static program with the fake
driver linked in (tests/fakes/bypass_static.c): no loader runs in it, so no
/etc/ld.so.preload and no interposer, and it allocates 300 MiB against a
256 MiB limit. Only the monitor can see it: it is logged as a bypass, and
killed, frozen or only logged per monitor.action.
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
from conftest import FAKE_UUID0, KIND, built

DRIVER_DIR = Path("/run/fake-nvidia-driver")


@pytest.fixture
def driver_accounting():
    """The fake driver's accounting dir on the host, empty, removed after."""
    shutil.rmtree(DRIVER_DIR, ignore_errors=True)
    (DRIVER_DIR / "processes").mkdir(parents=True)
    yield DRIVER_DIR / "processes"
    shutil.rmtree(DRIVER_DIR, ignore_errors=True)


@pytest.fixture(scope="module")
def bypass_rootfs(tmp_path_factory) -> Path:
    root = ocitest.build_busybox_rootfs(tmp_path_factory.mktemp("bypass") / "rootfs")
    ocitest.copy_with_libs(built("GPUSLICE_PROBE"), root, "/bin/probe")
    shutil.copy(built("GPUSLICE_BYPASS"), root / "bin" / "bypass_static")
    return root


def monitored(sharing_runtime, test_tmp, action: str):
    """sharing_runtime with the monitor checking every 100 ms, the fake NVML,
    the driver's accounting dir mounted into every container."""
    rt, state = sharing_runtime
    conf = test_tmp / "gpuslice.toml"
    conf.write_text(conf.read_text() + f'\n[monitor]\ninterval = "100ms"\naction = "{action}"\n'
                                       f'nvml-path = "{built("GPUSLICE_FAKE_NVML")}"\n')
    spec_file = test_tmp / "cdi" / "fake-driver.json"
    spec = json.loads(spec_file.read_text())
    spec["containerEdits"]["mounts"].append({"hostPath": str(DRIVER_DIR), "containerPath": str(DRIVER_DIR),
                                             "options": ["rbind", "rw", "nosuid", "nodev"]})
    spec_file.write_text(json.dumps(spec))
    return rt, state, test_tmp / "log" / "gpuslice-shim.log"


def wait_for(predicate, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    return predicate()


def text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def usage_of(state: Path, cid: str) -> dict:
    """What the container's monitor last reported, in its record."""
    return ocitest.state_record(state / "containers" / cid).get("usage", {})


def drop_usage(state: Path, cid: str) -> None:
    """The report taken out of the record: what comes next is a new one's."""
    record = ocitest.state_record(state / "containers" / cid)
    record.pop("usage", None)
    ocitest.write_state_record(state / "containers" / cid, record)


def status_when(state: Path, cid: str, key: str) -> dict:
    """The container's report once `key` is counted (it is written right
    after the log line)."""
    status = wait_for(lambda: usage_of(state, cid).get(key) and usage_of(state, cid))
    assert status, usage_of(state, cid)
    return status


def thaw(init: int) -> None:
    """Checks that the container of `init` is frozen (cgroup v1's freezer, or
    v2's cgroup.freeze), then thaws it."""
    cgroup = {l.split(":")[1]: l.split(":")[2] for l in Path(f"/proc/{init}/cgroup").read_text().splitlines()}
    if "freezer" in cgroup:
        freezer = Path("/sys/fs/cgroup/freezer") / cgroup["freezer"].lstrip("/")
        assert wait_for(lambda: (freezer / "freezer.state").read_text().strip() == "FROZEN")
        (freezer / "freezer.state").write_text("THAWED")
    else:
        v2 = Path("/sys/fs/cgroup") / cgroup[""].lstrip("/")
        assert (v2 / "cgroup.freeze").read_text().strip() == "1"
        (v2 / "cgroup.freeze").write_text("0")


def start(rt, test_tmp, spec_template, rootfs, cid, script):
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=0")  # 256 MiB
    bundle.spec["annotations"].update({"io.kubernetes.cri.sandbox-namespace": "team-a",
                                       "io.kubernetes.cri.sandbox-name": "trainer-0"})
    bundle.shell(script)
    bundle.write()
    rt.create(bundle, cid)
    rt.start(cid)
    return bundle, int((bundle.path / f"{cid}.pid").read_text())


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
def test_kill_a_process_past_the_limit_that_bypasses_the_interposer(sharing_runtime, test_tmp, spec_template,
                                                                    bypass_rootfs, driver_accounting, cid):
    rt, state, log = monitored(sharing_runtime, test_tmp, "kill")
    # The container stays until the status is read (the monitor removes the
    # state dir, status file and all, once the container has ended).
    bundle, init = start(rt, test_tmp, spec_template, bypass_rootfs, cid,
                         "/bin/bypass_static 300 30; echo bypass-exit $?; "
                         f"while [ ! -e {DRIVER_DIR}/go ]; do sleep 0.05; done")
    line = wait_for(lambda: [l for l in text(log).splitlines() if "killed pid" in l])
    assert line, text(log)
    assert f"container {cid} (pod team-a/trainer-0)" in line[0], line
    assert "GPU GPU-facea2a3-a4a5-a6a7-a8a9-aaabacadae00 used 314572800 bytes, limit 268435456" in line[0], line
    assert "without the interposer" in text(log) and "a bypass" in text(log), text(log)
    status = status_when(state, cid, "killed")
    assert status["killed"] == 1 and status["bypasses"] == 1 and status["breaches"] >= 1, status
    (DRIVER_DIR / "go").touch()
    assert ocitest.wait_pid(init, 30) == 0
    out = (bundle.path / f"{cid}.out").read_text()
    assert "bypass-exit 137" in out, out  # SIGKILL
    rt.delete(cid)


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
def test_log_only_leaves_the_process_running(sharing_runtime, test_tmp, spec_template, bypass_rootfs,
                                            driver_accounting, cid):
    rt, state, log = monitored(sharing_runtime, test_tmp, "log")
    bundle, init = start(rt, test_tmp, spec_template, bypass_rootfs, cid,
                         "/bin/probe dlsym alloc 200Mi ok 256Mi; /bin/bypass_static 300 2; echo bypass-exit $?")
    assert wait_for(lambda: "over the limit (monitor.action = log)" in text(log)), text(log)
    assert ocitest.wait_pid(init, 30) == 0
    out = (bundle.path / f"{cid}.out").read_text()
    assert "bypass-exit 0" in out and "held 2 s" in out, out
    assert text(log).count("a bypass") == 1, text(log)  # the probe took the region: not one
    assert "killed" not in text(log)
    rt.delete(cid)


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
def test_freeze_stops_the_whole_container(sharing_runtime, test_tmp, spec_template, bypass_rootfs,
                                         driver_accounting, cid):
    rt, state, log = monitored(sharing_runtime, test_tmp, "freeze")
    bundle, init = start(rt, test_tmp, spec_template, bypass_rootfs, cid, "/bin/bypass_static 300 30")
    assert wait_for(lambda: "froze the container" in text(log)), text(log)
    assert status_when(state, cid, "frozen")["frozen"] == 1
    # The container's freezer says so (cgroup v1 here; v2: cgroup.freeze).
    thaw(init)
    rt.delete(cid, force=True)


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
def test_status_reports_usage_and_the_compute_share(sharing_runtime, test_tmp, spec_template, bypass_rootfs,
                                                    driver_accounting, cid):
    """A burst slice (30%) alone on the GPU is not throttled: the status file
    shows both views of its memory and its SM use from NVML's samples, and
    the log says once that it ran over its share (reported, not enforced)."""
    rt, state, log = monitored(sharing_runtime, test_tmp, "kill")
    ocitest.copy_with_libs(built("GPUSLICE_SHARE_TEST"), bypass_rootfs, "/bin/share_test")
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, bypass_rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=burst")  # 256 MiB, compute 30, burst
    bundle.shell("/bin/share_test kernel 4 16")
    bundle.write()
    rt.create(bundle, cid)
    rt.start(cid)

    def busy_status():
        status = usage_of(state, cid)
        gpu = status.get("gpus", {}).get(FAKE_UUID0, {})
        return status if gpu.get("sm_percent", 0) > 40 and gpu.get("used_nvml") == 16 << 20 else None
    status = wait_for(busy_status)
    assert status, usage_of(state, cid)
    gpu = status["gpus"][FAKE_UUID0]
    assert gpu["used_interposer"] == 16 << 20 and gpu["sm_percent"] <= 100, status
    assert len(gpu["processes"]) == 1 and status["container"] == cid and status["killed"] == 0, status
    assert wait_for(lambda: "of the SMs over the last 10 intervals, share 30% (reported only" in text(log)), text(log)
    assert "killed" not in text(log)
    rt.delete(cid, force=True)


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
@pytest.mark.parametrize("action", ["kill", "freeze", "log"])
def test_a_tenant_that_zeroes_its_counters_is_caught_through_nvml(sharing_runtime, test_tmp, spec_template,
                                                                  bypass_rootfs, driver_accounting, cid, action):
    """Two processes that both took the region: the first holds 200 MiB and
    zeroes every usage counter, so the interposer grants a second process
    200 MiB more (400 MiB against 256). No bypass: only the driver's
    accounting shows it, and the monitor acts per monitor.action."""
    rt, state, log = monitored(sharing_runtime, test_tmp, action)
    ocitest.copy_with_libs(built("GPUSLICE_HOSTILE"), bypass_rootfs, "/bin/hostile_test")
    bundle, init = start(rt, test_tmp, spec_template, bypass_rootfs, cid,
                         "/bin/hostile_test zero-counters 20; echo tenant-exit $?; sleep 30")
    over = "GPU GPU-facea2a3-a4a5-a6a7-a8a9-aaabacadae00 used 419430400 bytes, limit 268435456"
    if action == "kill":
        line = wait_for(lambda: [l for l in text(log).splitlines() if "killed pid" in l])
        assert line and over in line[0] and "(209715200 bytes; monitor.action = kill)" in line[0], text(log)
        assert status_when(state, cid, "killed")["killed"] == 1
        out = bundle.path / f"{cid}.out"
        assert wait_for(lambda: "tenant-exit" in text(out)), text(out)
        assert "child: signal 9" in text(out) and "tenant-exit 0" in text(out), text(out)  # the one that grew last
    elif action == "freeze":
        assert wait_for(lambda: over + ": froze the container" in text(log)), text(log)
        assert status_when(state, cid, "frozen")["frozen"] == 1
    else:
        assert wait_for(lambda: over + ": over the limit (monitor.action = log)" in text(log)), text(log)
        assert status_when(state, cid, "breaches")["breaches"] == 1
    assert "a bypass" not in text(log), text(log)  # both took the region
    if action == "freeze":
        thaw(init)
    rt.delete(cid, force=True)


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
def test_a_sigkilled_process_usage_is_reclaimed(sharing_runtime, test_tmp, spec_template, bypass_rootfs,
                                                driver_accounting, cid):
    """A process holding 200 MiB of a 256 MiB limit is SIGKILLed from the
    host: its monitor reclaims its slot, and a new process of the container
    then sees the whole limit free and gets 200 MiB (probe checks free ==
    limit before it allocates)."""
    rt, state, log = monitored(sharing_runtime, test_tmp, "log")
    ocitest.copy_with_libs(built("GPUSLICE_SHARE_TEST"), bypass_rootfs, "/bin/share_test")
    go = DRIVER_DIR / "go"  # the accounting dir is mounted in the container: a signal to it
    bundle, init = start(rt, test_tmp, spec_template, bypass_rootfs, cid,
                         "/bin/share_test kernel 60 200 & holder=$!; wait $holder; echo holder-exit $?; "
                         f"while [ ! -e {go} ]; do sleep 0.05; done; "
                         "/bin/probe dlsym alloc 200Mi ok 256Mi; echo probe-exit $?")

    def gpu_view():
        return usage_of(state, cid).get("gpus", {}).get(FAKE_UUID0, {})
    held = wait_for(lambda: gpu_view().get("used_interposer") == 200 << 20 and gpu_view().get("processes"))
    assert held, usage_of(state, cid)
    os.kill(held[0], signal.SIGKILL)
    assert wait_for(lambda: gpu_view().get("used_interposer") == 0), usage_of(state, cid)
    go.touch()
    assert ocitest.wait_pid(init, 30) == 0
    out = (bundle.path / f"{cid}.out").read_text()
    assert "holder-exit 137" in out and "probe-exit 0" in out, out + (bundle.path / f"{cid}.err").read_text()
    rt.delete(cid)


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
def test_the_monitor_in_place_hands_its_processes_over_to_gpuslice_shim(sharing_runtime, test_tmp, spec_template,
                                                                         bypass_rootfs, driver_accounting, cid):
    """A process that took the region from the monitor while it was still
    the create's init recorder (an interval of 4 s: the process has its
    200 MiB well before) is passed to the gpuslice-shim exec'd in its place
    at the first interval: that one checks at once, sees the 200 MiB
    through NVML, and does not take the process for a bypass."""
    rt, state, log = monitored(sharing_runtime, test_tmp, "log")
    conf = test_tmp / "gpuslice.toml"
    conf.write_text(conf.read_text().replace('interval = "100ms"', 'interval = "4s"'))
    ocitest.copy_with_libs(built("GPUSLICE_SHARE_TEST"), bypass_rootfs, "/bin/share_test")
    bundle, init = start(rt, test_tmp, spec_template, bypass_rootfs, cid, "/bin/share_test kernel 60 200")
    monitor = wait_for(lambda: monitor_of(state, cid))
    # the holder's usage in the driver's accounting: it took the region first
    assert wait_for(lambda: any(driver_accounting.iterdir()))
    cgroup = text(Path(f"/proc/{init}/cgroup"))
    holder = next(int(p.name) for p in Path("/proc").iterdir()
                  if p.name.isdigit() and text(p / "comm") == "share_test\n" and text(p / "cgroup") == cgroup)
    assert os.path.basename(os.readlink(f"/proc/{monitor}/exe")) == "gpuslice-runtime", "exec'd too early"
    assert monitor not in ocitest.monitors()
    assert wait_for(lambda: monitor in ocitest.monitors()), "not exec'd at the first interval"
    argv = ocitest.monitors()[monitor]
    assert str(holder) in argv[argv.index("--connected") + 1].split(","), argv

    def checked():
        status = usage_of(state, cid)
        return status if status.get("gpus", {}).get(FAKE_UUID0, {}).get("used_nvml") == 200 << 20 else None
    status = wait_for(checked)
    assert status and status["nvml"] and status["bypasses"] == 0, usage_of(state, cid)
    assert "bypass" not in text(log), text(log)
    rt.delete(cid, force=True)


def monitor_of(state: Path, cid: str) -> int | None:
    """The pid of the container's monitor, as its record names it."""
    monitor = ocitest.state_record(state / "containers" / cid).get("monitor")
    return monitor["pid"] if monitor else None


def kill_monitor(state: Path, cid: str) -> int:
    pid = monitor_of(state, cid)
    os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: not Path(f"/proc/{pid}").exists() or
                    "Z" in Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0:1])
    return pid


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
def test_a_killed_monitor_is_started_again_on_the_same_region(sharing_runtime, test_tmp, spec_template, bypass_rootfs,
                                                              driver_accounting, cid):
    """The monitor is SIGKILLed while a process holds 200 MiB of 256. The
    next runtime call (state) starts another and logs it; the new one took
    the region back from the holder: a new process of the container
    connects to the new socket, sees the 200 MiB charged and is refused
    100 MiB more. When the container ends, the new monitor removes its
    state."""
    rt, state, log = monitored(sharing_runtime, test_tmp, "log")
    ocitest.copy_with_libs(built("GPUSLICE_SHARE_TEST"), bypass_rootfs, "/bin/share_test")
    ocitest.copy_with_libs(built("GPUSLICE_HOSTILE"), bypass_rootfs, "/bin/hostile_test")
    go = DRIVER_DIR / "go"
    bundle, init = start(rt, test_tmp, spec_template, bypass_rootfs, cid,
                         "/bin/share_test kernel 60 200 & holder=$!; "
                         f"while [ ! -e {go} ]; do sleep 0.05; done; "
                         "/bin/hostile_test alloc 100; echo refused-exit $?; kill $holder")

    def used():
        return usage_of(state, cid).get("gpus", {}).get(FAKE_UUID0, {}).get("used_interposer")
    assert wait_for(lambda: used() == 200 << 20), usage_of(state, cid)
    old = kill_monitor(state, cid)
    drop_usage(state, cid)  # what the new one writes, below
    rt.run("state", cid)
    new = monitor_of(state, cid)
    assert new != old and Path(f"/proc/{new}").exists()
    runtime_log = text(test_tmp / "log" / "gpuslice-runtime.log")
    assert (f"gpuslice-shim of container {cid} was gone (pid {old}): started another (pid {new}) "
            "on the same usage region") in runtime_log, runtime_log
    assert wait_for(lambda: used() == 200 << 20), usage_of(state, cid)
    # the holder took the region from the old one: not a bypass
    status = usage_of(state, cid)
    assert status["nvml"] and status["bypasses"] == 0 and "bypass" not in text(log), str(status) + text(log)
    rt.run("state", cid)  # alive: nothing more
    assert monitor_of(state, cid) == new and runtime_log.count("was gone") == 1
    go.touch()
    assert ocitest.wait_pid(init, 30) == 0
    out = (bundle.path / f"{cid}.out").read_text()
    assert "refused-exit 1" in out, out + (bundle.path / f"{cid}.err").read_text()  # 1: out of memory
    assert wait_for(lambda: not (state / "containers" / cid).exists())
    rt.delete(cid)


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
def test_a_killed_monitor_of_an_idle_container_gets_a_new_region(sharing_runtime, test_tmp, spec_template,
                                                                 bypass_rootfs, driver_accounting, cid):
    """No process took the region: the monitor started again makes a new
    one, says so, and the container's next process allocates within its
    limit through it."""
    rt, state, log = monitored(sharing_runtime, test_tmp, "log")
    bundle, init = start(rt, test_tmp, spec_template, bypass_rootfs, cid,
                         f"while [ ! -e {DRIVER_DIR}/go ]; do sleep 0.05; done; "
                         "/bin/probe dlsym alloc 200Mi ok 256Mi; echo probe-exit $?")
    old = kill_monitor(state, cid)
    rt.run("exec", cid, "/bin/sh", "-c", f"touch {DRIVER_DIR}/go")  # exec, as kubelet's probes do
    runtime_log = text(test_tmp / "log" / "gpuslice-runtime.log")
    assert f"was gone (pid {old}): started another" in runtime_log and "on a new usage region (no process of the " \
        "container held the old one)" in runtime_log, runtime_log
    assert ocitest.wait_pid(init, 30) == 0
    out = (bundle.path / f"{cid}.out").read_text()
    assert "probe-exit 0" in out, out + (bundle.path / f"{cid}.err").read_text()
    rt.delete(cid)


# --------------------------------------------------------------------------
# gpuslice inspect (issue 12, part 4)


def inspect(rt, *args: str) -> str:
    p = subprocess.run([built("GPUSLICE_CLI"), "inspect", *args], env=rt.env, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
def test_inspect_shows_the_gpu_and_its_containers(sharing_runtime, test_tmp, spec_template, bypass_rootfs,
                                                 driver_accounting):
    """Two containers on the fake GPU: a burst slice (256 MiB, 30%) running
    kernels with 16 MiB held, and a 100 MiB slice whose process bypasses the
    interposer with 50 MiB. inspect in its three formats against them; the
    Prometheus text passes promtool."""
    rt, state, log = monitored(sharing_runtime, test_tmp, "log")
    ocitest.copy_with_libs(built("GPUSLICE_SHARE_TEST"), bypass_rootfs, "/bin/share_test")
    trainer = ocitest.Bundle(test_tmp / "trainer", spec_template, bypass_rootfs)
    trainer.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=burst")
    trainer.spec["annotations"].update({"io.kubernetes.cri.sandbox-namespace": "team-a",
                                        "io.kubernetes.cri.sandbox-name": "trainer-0"})
    trainer.shell("/bin/share_test kernel 30 16")
    trainer.write()
    static = ocitest.Bundle(test_tmp / "static", spec_template, bypass_rootfs)
    static.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=slice1")  # 100 MiB on GPU 0 by UUID
    static.shell("/bin/bypass_static 50 30")
    static.write()
    for bundle, cid in ((trainer, "trainer"), (static, "static")):
        rt.create(bundle, cid)
        rt.start(cid)
    status_when(state, "static", "bypasses")
    assert wait_for(lambda: usage_of(state, "trainer")
                    .get("gpus", {}).get(FAKE_UUID0, {}).get("sm_percent"))

    report = json.loads(inspect(rt, "--output", "json"))
    gpu = report["gpus"][0]
    assert gpu["index"] == 0 and gpu["uuid"] == FAKE_UUID0 and gpu["model"] == "Fake GPU (gpuslice tests)", gpu
    assert gpu["memory"] == {"total": 16 << 30, "used": 66 << 20, "allotted": 356 << 20}, gpu
    assert gpu["containers"] == 2 and report["nvml_error"] is None, report
    by_id = {c["id"]: c for c in report["containers"]}
    t, s = by_id["trainer"], by_id["static"]
    assert t["pod"] == {"namespace": "team-a", "name": "trainer-0"} and t["monitor"] == "running", t
    [tg] = t["gpus"]
    assert tg["gpu"] == FAKE_UUID0 and tg["memory_limit"] == 256 << 20 and tg["compute_share"] == 30, tg
    assert tg["compute_policy"] == "burst" and tg["used"] == {"interposer": 16 << 20, "nvml": 16 << 20}, tg
    assert 0 < tg["sm_percent"] <= 100 and len(tg["processes"]) == 1, tg
    [sg] = s["gpus"]
    assert sg["used"] == {"interposer": None, "nvml": 50 << 20} and s["pod"] is None, s  # never took the region
    assert s["enforcement"] == {"breaches": 0, "killed": 0, "frozen": 0, "bypasses": 1} and s["action"] == "log", s
    assert report["node"] == {"containers": 2, "memory": {"total": 16 << 30, "used": 66 << 20,
                                                          "allotted": 356 << 20}}, report["node"]

    table = inspect(rt)
    lines = table.splitlines()
    assert lines[0].split() == ["GPU", "UUID", "MODEL", "CONTAINERS", "ALLOTTED/TOTAL", "USED/TOTAL"], table
    assert lines[1].split() == ["0", FAKE_UUID0, "Fake", "GPU", "(gpuslice", "tests)", "2", "356", "MiB/16", "GiB",
                                "66", "MiB/16", "GiB"], table
    assert "Allotted/total GPU memory in node: 356 MiB/16 GiB (2%); used 66 MiB; 2 containers with limits" in table
    assert "trainer" not in table  # only with -d
    details = inspect(rt, "-d")
    rows = {l.split()[0]: l for l in details.splitlines() if l.startswith(("trainer", "static"))}
    for cell in ("team-a/trainer-0", f"  {FAKE_UUID0}  ", "  256 MiB  ", "  16 MiB/16 MiB  ", "  30% burst  ",
                 f"  {tg['processes'][0]}  ", "  running  "):
        assert cell in rows["trainer"], details
    assert "bypasses 1" in rows["static"] and "50 MiB" in rows["static"], details

    metrics = test_tmp / "gpuslice.prom"
    inspect(rt, "--output", "prometheus", "--output-file", str(metrics))
    prom = metrics.read_text()
    check = subprocess.run(["promtool", "check", "metrics"], input=prom, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr + prom
    assert (f'gpuslice_container_memory_used_bytes{{container="trainer",namespace="team-a",pod="trainer-0",'
            f'gpu="{FAKE_UUID0}",source="nvml"}} {16 << 20}') in prom, prom
    assert f'gpuslice_gpu_memory_allotted_bytes{{gpu="{FAKE_UUID0}"}} {356 << 20}' in prom, prom
    assert 'gpuslice_container_bypasses_total{container="static",namespace="",pod=""} 1' in prom, prom
    assert "# TYPE gpuslice_container_processes_killed_total counter" in prom, prom
    for cid in ("trainer", "static"):
        rt.delete(cid, force=True)
