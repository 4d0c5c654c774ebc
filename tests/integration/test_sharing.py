"""GPU memory limits end to end: a real container started through
gpuslice-runtime + runc/crun, with the fake CUDA driver injected through CDI
the way a driver's spec injects libcuda, and GPUSLICE_MEMORY_LIMIT=256Mi in
the claimed device's CDI edits. Inside the container, an ordinary program
(tests/interposer/probe.c, dlopen("libcuda.so.1")) sees a 256 MiB GPU: a
300 MiB allocation fails with CUDA_ERROR_OUT_OF_MEMORY without reaching the
driver, 200 MiB succeeds and cuMemGetInfo says total = 256 MiB. The same
container with a device that carries no limit gets the whole (fake) 1 GiB.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import ocitest
from conftest import FAKE_TOTAL, FAKE_UUID0, KIND, RUNTIMES, built, tool


@pytest.fixture(scope="module")
def glibc_rootfs(tmp_path_factory) -> Path:
    root = ocitest.build_busybox_rootfs(tmp_path_factory.mktemp("glibc") / "rootfs")
    ocitest.copy_with_libs(built("GPUSLICE_PROBE"), root, "/bin/probe")
    return root


def run(rt, bundle, cid, device, script) -> tuple[int, str]:
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}={device}")
    bundle.shell(script)
    rc, out, err = rt.run_container(bundle, cid)
    return rc, out + err


@pytest.mark.gpuslice
def test_memory_limit_in_container(sharing_runtime, test_tmp, spec_template, glibc_rootfs, cid):
    rt, state = sharing_runtime
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, glibc_rootfs)
    script = (
        "set -e; "
        "echo preload: $(cat /etc/ld.so.preload); "
        "if echo x > /run/gpuslice/limits 2>/dev/null; then echo limits-writable; fi; "
        "/bin/probe dlsym alloc 300Mi oom 256Mi; "
        "/bin/probe dlsym alloc 200Mi ok 256Mi; "
        "/bin/probe procaddr_v2 managed 300Mi oom 256Mi; "
        "echo state-dir: $(ls /run/gpuslice | sort | tr '\\n' ' ')"
    )
    rc, out = run(rt, bundle, cid, "0", script)
    assert rc == 0, out
    assert "preload: /run/gpuslice/libgpuslice-cuda.so" in out
    assert "limits-writable" not in out
    assert "probe dlsym alloc 300Mi: as expected" in out
    assert "probe dlsym alloc 200Mi: as expected" in out
    assert "probe procaddr_v2 managed 300Mi: as expected" in out
    assert "state-dir: libgpuslice-cuda.so limits region.sock" in out
    # The container's state dir (limits, preload, region socket) is gone after
    # delete (removed by its monitor, as it sees the init end).
    assert ocitest.eventually(lambda: not (state / "containers" / cid).exists())
    # Root's alone on the host: no local user reaches a container's files.
    assert (state.stat().st_mode & 0o777) == 0o700
    assert ((state / "containers").stat().st_mode & 0o777) == 0o700


@pytest.mark.gpuslice
def test_two_slices_of_one_gpu_add_up(sharing_runtime, test_tmp, spec_template, glibc_rootfs, cid):
    rt, state = sharing_runtime
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, glibc_rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=slice1,{KIND}=slice2")
    bundle.shell("cat /run/gpuslice/limits; /bin/probe dlsym alloc 300Mi oom 256Mi; /bin/probe dlsym alloc 200Mi ok 256Mi")
    rc, out, err = rt.run_container(bundle, cid)
    assert rc == 0, out + err
    assert f"device {FAKE_UUID0} memory {256 << 20}" in out, out
    assert out.count("as expected") == 2, out


@pytest.mark.gpuslice
def test_programs_start_in_an_image_with_libc_alone(sharing_runtime, test_tmp, spec_template, cid):
    """The interposer is preloaded into every program: it may need nothing an
    image can lack. An image with libc.so.6 but no libdl.so.2 (before glibc
    2.34 the loader's functions live there) still runs its programs."""
    rt, _ = sharing_runtime
    root = ocitest.build_busybox_rootfs(test_tmp / "rootfs")
    true = Path(shutil.which("true")).resolve()
    ocitest.copy_with_libs(true, root, "/bin/dynamic-true")
    assert not list(root.rglob("libdl.so*")), "the image must lack libdl for this test"
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, root)
    rc, out = run(rt, bundle, cid, "0", "cat /etc/ld.so.preload; /bin/dynamic-true && echo dynamic-program-ran")
    assert rc == 0, out
    assert "/run/gpuslice/libgpuslice-cuda.so" in out, out
    assert "dynamic-program-ran" in out, out


@pytest.mark.gpuslice
def test_device_without_limit_gets_the_whole_gpu(sharing_runtime, test_tmp, spec_template, glibc_rootfs, cid):
    rt, _ = sharing_runtime
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, glibc_rootfs)
    rc, out = run(rt, bundle, cid, "whole", f"/bin/probe dlsym alloc 300Mi ok {FAKE_TOTAL >> 20}Mi; "
                                            "test ! -s /etc/ld.so.preload && echo no-preload")
    assert rc == 0, out
    assert "probe dlsym alloc 300Mi: as expected" in out
    assert "no-preload" in out


@pytest.mark.gpuslice
def test_container_cannot_raise_its_own_limit(sharing_runtime, test_tmp, spec_template, glibc_rootfs, cid):
    """The container's own GPUSLICE_MEMORY_LIMIT and GPUSLICE_LIMITS are not
    limits: only the CDI edits (root's) are, through a read-only file that a
    tenant's environment cannot replace."""
    rt, _ = sharing_runtime
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, glibc_rootfs)
    bundle.spec["process"]["env"] += ["GPUSLICE_MEMORY_LIMIT=64Gi"]
    rc, out = run(rt, bundle, cid, "0", "/bin/probe dlsym alloc 300Mi oom 256Mi; "
                                        "echo 'gpuslice-limits 1' > /dev/shm/l; echo 'device * memory 68719476736' >> /dev/shm/l; "
                                        "GPUSLICE_LIMITS=/dev/shm/l /bin/probe dlsym alloc 300Mi oom 256Mi; "
                                        "GPUSLICE_LIMITS=/nonexistent /bin/probe dlsym alloc 300Mi oom 256Mi")
    assert rc == 0, out
    assert out.count("probe dlsym alloc 300Mi: as expected") == 3, out


# --------------------------------------------------------------------------
# a hostile tenant (issue 7, holes 2, 3 and 5)


@pytest.fixture
def own_rootfs(glibc_rootfs, test_tmp) -> Path:
    """A copy of the glibc rootfs this test alone uses (writable, or changed)."""
    root = test_tmp / "rootfs"
    shutil.copytree(glibc_rootfs, root, symlinks=True)
    return root


@pytest.mark.gpuslice
def test_tenant_cannot_rename_the_preload_away(sharing_runtime, test_tmp, spec_template, own_rootfs, cid):
    """A root process in a writable rootfs that renames /etc, /run or
    /run/gpuslice and makes a new empty one would start processes with no
    preload and no limits: each is a mount point, so rename fails (EBUSY)."""
    rt, _ = sharing_runtime
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, own_rootfs)
    bundle.spec["root"]["readonly"] = False
    # kubelet's token mount, through the image's /var/run -> ../run link: the
    # pin must not hide it
    (own_rootfs / "var").mkdir(exist_ok=True)
    (own_rootfs / "var" / "run").symlink_to("../run")
    bundle.spec["mounts"].append({"destination": "/var/run/secrets/token", "type": "tmpfs", "source": "tmpfs",
                                  "options": ["size=4k"]})
    script = ("grep -q ' /run/secrets/token ' /proc/self/mountinfo && echo token-visible; "
              "for d in /etc /run /run/gpuslice /etc/ld.so.preload; do "
              "  if mv $d $d.gone 2>/dev/null; then echo moved $d; mkdir -p $d; fi; done; "
              "if rm -f /etc/ld.so.preload 2>/dev/null && test ! -e /etc/ld.so.preload; then echo removed-preload; fi; "
              "touch /etc/still-writable && echo etc-writable; "
              "/bin/probe dlsym alloc 300Mi oom 256Mi")
    rc, out = run(rt, bundle, cid, "0", script)
    assert "moved" not in out, out
    assert "removed-preload" not in out, out
    assert "etc-writable" in out, out  # the pin changes nothing else
    assert "token-visible" in out, out
    assert "probe dlsym alloc 300Mi: as expected" in out, out
    assert rc == 0, out


@pytest.mark.gpuslice
def test_pins_keep_a_read_only_root_read_only(sharing_runtime, test_tmp, spec_template, glibc_rootfs, cid):
    rt, _ = sharing_runtime
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, glibc_rootfs)
    rc, out = run(rt, bundle, cid, "0", "touch /etc/x 2>/dev/null && echo etc-writable; "
                                        "touch /run/x 2>/dev/null && echo run-writable; echo done")
    assert rc == 0 and "done" in out, out
    assert "etc-writable" not in out and "run-writable" not in out, out


@pytest.mark.gpuslice
@pytest.mark.parametrize("link", ["nonexistent/../x", "/tmp/elsewhere"])
def test_symlinked_preload_is_refused(sharing_runtime, test_tmp, spec_template, own_rootfs, cid, link):
    """runc resolves `nonexistent/../x` lexically (mounts at /x), the kernel
    does not (ENOENT): the container would run without the preload while the
    runtime thought it had one. Refused, with nothing left behind."""
    rt, state = sharing_runtime
    preload = own_rootfs / "etc" / "ld.so.preload"
    preload.unlink(missing_ok=True)
    preload.symlink_to(link)
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, own_rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=0")
    written = bundle.write()
    p = rt.create(bundle, cid, check=False)
    assert p.returncode != 0
    assert '"/etc/ld.so.preload" is (or goes through) a symbolic link' in p.stderr, p.stderr
    assert bundle.config_path.read_bytes() == written
    assert not (state / "containers" / cid).exists()
    assert cid not in rt.list_ids()


# Roots as users build them: a program and its libraries copied into an
# empty root, without /etc or /run (issue 60).
@pytest.mark.gpuslice
@pytest.mark.parametrize("readonly", [False, True], ids=["writable-root", "read-only-root"])
@pytest.mark.parametrize("missing", ["/etc", "/run", "/etc /run"])
def test_a_root_without_etc_or_run_runs_with_its_limit(sharing_runtime, test_tmp, spec_template, own_rootfs, cid,
                                                      missing, readonly):
    """gpuslice mounts into /etc and /run, and pins them (bound onto
    themselves) in a writable root: a directory the image lacks is made in
    the root first, so the pin has a source and nothing can rename it away;
    a read-only root needs no pin, the runtime makes its mount points."""
    rt, state = sharing_runtime
    for d in missing.split():
        shutil.rmtree(own_rootfs / d.lstrip("/"))
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, own_rootfs)
    bundle.spec["root"]["readonly"] = readonly
    script = ("cat /etc/ld.so.preload; /bin/probe dlsym alloc 300Mi oom 256Mi; "
              "for d in /etc /run /run/gpuslice; do if mv $d $d.gone 2>/dev/null; then echo moved $d; fi; done")
    rc, out = run(rt, bundle, cid, "0", script)
    assert rc == 0, out
    assert "/run/gpuslice/libgpuslice-cuda.so" in out, out
    assert "probe dlsym alloc 300Mi: as expected" in out, out
    assert "moved" not in out, out
    assert not (state / "containers" / cid).exists()


@pytest.mark.gpuslice
@pytest.mark.parametrize("dir_, target", [("etc", "usr/etc"), ("run", "/run"), ("run", "HOST")],
                         ids=["etc-to-usr-etc", "run-to-absolute-run", "run-to-a-host-looking-path"])
def test_a_root_whose_etc_or_run_is_a_link_is_refused_and_nothing_outside_changes(sharing_runtime, test_tmp,
                                                                                  spec_template, own_rootfs, cid,
                                                                                  dir_, target):
    """The image's links are never followed out of its root: a pinned dir
    that is a link is refused before anything is made, on the host or in
    the root, with a reason."""
    rt, state = sharing_runtime
    host = test_tmp / "host-looking"  # what the link would reach if followed from the host
    target = str(host) if target == "HOST" else target
    shutil.rmtree(own_rootfs / dir_)
    (own_rootfs / "usr" / "etc").mkdir(parents=True, exist_ok=True)
    (own_rootfs / dir_).symlink_to(target)
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, own_rootfs)
    bundle.spec["root"]["readonly"] = False
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=0")
    written = bundle.write()
    p = rt.create(bundle, cid, check=False)
    assert p.returncode != 0
    assert f'"/{dir_}" is (or goes through) a symbolic link' in p.stderr, p.stderr
    assert bundle.config_path.read_bytes() == written
    assert not host.exists()
    assert (own_rootfs / dir_).is_symlink() and sorted(p.name for p in (own_rootfs / "usr" / "etc").iterdir()) == []
    assert not (state / "containers" / cid).exists()
    assert cid not in rt.list_ids()


@pytest.mark.gpuslice
def test_a_create_killed_after_its_state_dir_is_retried(sharing_runtime, test_tmp, spec_template, glibc_rootfs, cid):
    """kill -9 of gpuslice-runtime just after its state dir is in place and
    before config.json is written (strace delivers SIGKILL at the pid
    file's unlink, the first thing the create does then): the retry of the
    same bundle and id collects that dir (its creator is gone) and runs."""
    rt, state = sharing_runtime
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, glibc_rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=whole")
    bundle.shell("echo ran")
    written = bundle.write()
    killed = subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=unlink",
                             "-e", "inject=unlink:signal=KILL:when=1", *rt.cmd("create", "--bundle", str(bundle.path),
                                                                               "--pid-file", str(test_tmp / "init.pid"),
                                                                               cid)],
                            env=rt.env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert killed.returncode != 0, killed.stderr
    assert (state / "containers" / cid / "state.json").exists()  # killed after the state dir
    assert bundle.config_path.read_bytes() == written  # and before config.json
    rc, out, err = rt.run_container(bundle, cid)
    assert rc == 0 and "ran" in out, out + err
    assert not (state / "containers" / cid).exists()


def killing_runtime_once(rt: ocitest.Runtime, runtime_name: str, test_tmp: Path, before_kill: str) -> Path:
    """`rt`'s low-level runtime replaced by a script that, the first time it
    is run for a create, runs the shell words `before_kill` ($real is the
    runtime) and SIGKILLs itself, then is the runtime. The marker it makes
    the first time is returned."""
    real = tool(RUNTIMES[runtime_name])
    marker, stub = test_tmp / "killed-once", test_tmp / "kill-once-runtime"
    stub.write_text(f"#!/bin/sh\nreal={real}\n"
                    f'case " $* " in *" create "*) [ -e {marker} ] || {{ touch {marker}; {before_kill} kill -9 $$; }};; esac\n'
                    'exec "$real" "$@"\n')
    stub.chmod(0o755)
    conf = Path(rt.env["GPUSLICE_CONFIG"])
    conf.write_text(conf.read_text().replace(f'runtimes = ["{real}"]', f'runtimes = ["{stub}"]'))
    return marker


@pytest.mark.gpuslice
@pytest.mark.parametrize("device", ["0", "whole"], ids=["limited", "unlimited"])
def test_a_create_killed_after_it_wrote_config_json_is_retried_with_one_copy_of_each_edit(
        sharing_runtime, runtime_name, test_tmp, spec_template, glibc_rootfs, cid, device):
    """gpuslice-runtime execs the low-level runtime in its own process: a
    runtime that dies of SIGKILL at once is a create killed just after it
    wrote config.json (kill -9, the OOM killer, a reboot). The next create
    of the same bundle and id (containerd's retry) succeeds, with one copy
    of every edit, and the container runs with its limit."""
    rt, state = sharing_runtime
    marker = killing_runtime_once(rt, runtime_name, test_tmp, "")
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, glibc_rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}={device}")
    limited = device == "0"
    bundle.shell("cat /etc/ld.so.preload; /bin/probe dlsym alloc 300Mi oom 256Mi" if limited else "echo ran")
    bundle.write()

    killed = rt.create(bundle, cid, check=False)
    assert killed.returncode == -9 and marker.exists(), killed.stderr
    assert "/dev/nvidia0" in bundle.config_path.read_text()  # config.json was written

    rt.create(bundle, cid)
    config = json.loads(bundle.config_path.read_text())
    destinations = [m["destination"] for m in config["mounts"]]
    assert len(destinations) == len(set(destinations)), destinations
    assert [d["path"] for d in config["linux"]["devices"]].count("/dev/nvidia0") == 1
    assert len(config["process"]["env"]) == len(set(config["process"]["env"])), config["process"]["env"]
    assert ("/run/gpuslice" in destinations) == limited, destinations
    pid = int((bundle.path / f"{cid}.pid").read_text())
    rt.start(cid)
    rc = ocitest.wait_pid(pid, 30)
    out = (bundle.path / f"{cid}.out").read_text()
    rt.delete(cid)
    assert rc == 0, out
    if limited:
        assert "/run/gpuslice/libgpuslice-cuda.so" in out and "probe dlsym alloc 300Mi: as expected" in out, out
    else:
        assert "ran" in out, out
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (state / "containers" / cid).exists():
        time.sleep(0.05)
    assert not (state / "containers" / cid).exists()


@pytest.mark.gpuslice
@pytest.mark.parametrize("device", ["0", "whole"], ids=["limited", "unlimited"])
def test_a_create_killed_while_the_runtime_creates_is_retried_or_refused_saying_what_to_do(
        sharing_runtime, runtime_name, test_tmp, spec_template, glibc_rootfs, cid, device):
    """The same kill while the low-level runtime's create runs: the runtime
    may have made the container by then. The retry either runs it (one copy
    of each edit) or fails naming the container the runtime already has;
    after a forced delete nothing of gpuslice's is left."""
    rt, state = sharing_runtime
    left_running = test_tmp / "left-running.pid"
    killing_runtime_once(rt, runtime_name, test_tmp, f'"$real" "$@" & echo $! > {left_running}; sleep 0.05;')
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, glibc_rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}={device}")
    bundle.shell("echo ran")
    bundle.write()
    killed = rt.create(bundle, cid, check=False)
    assert killed.returncode == -9, killed.stderr
    # containerd retries once the shim saw the create fail; by then the
    # runtime's own create, left running, may have ended or not: the retry
    # comes after it ends (a retry racing it is another test's question)
    try:
        ocitest.wait_pid(int(left_running.read_text()), 30)
    except ProcessLookupError:
        pass  # ended already
    retry = rt.create(bundle, cid, check=False)
    if retry.returncode != 0:
        assert f"delete --force {cid}" in retry.stderr, retry.stderr
    rt.run("delete", "--force", cid, check=False)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (state / "containers" / cid).exists():
        time.sleep(0.05)
    assert not (state / "containers" / cid).exists()
    assert cid not in rt.list_ids()


@pytest.mark.gpuslice
def test_activity_table_is_read_only_in_burst_containers(sharing_runtime, test_tmp, spec_template, glibc_rootfs, cid):
    """One tenant emptied or grew the node-wide activity file every burst
    container mapped: a neighbour's CUDA process died of SIGBUS, the state
    tmpfs filled up. Now only the host writes it; containers read it."""
    rt, state = sharing_runtime
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, glibc_rootfs)
    # (a subshell: a failed redirection of `:`, a special built-in, ends the shell)
    script = ("if (: > /run/gpuslice/activity) 2>/dev/null; then echo truncated; fi; "
              "if dd if=/dev/zero of=/run/gpuslice/activity bs=1024 count=64 seek=8 conv=notrunc 2>/dev/null; "
              "then echo grew; fi; "
              "stat -c 'size %s' /run/gpuslice/activity; grep gpuslice /proc/self/mountinfo; "
              "/bin/probe dlsym alloc 300Mi oom 256Mi")
    rc, out = run(rt, bundle, cid, "burst", script)
    assert rc == 0, out
    assert "truncated" not in out and "grew" not in out, out
    assert "size 8192" in out, out
    assert "probe dlsym alloc 300Mi: as expected" in out, out
    table = state / "activity"
    assert table.stat().st_size == 8192 and (table.stat().st_mode & 0o777) == 0o644


@pytest.mark.gpuslice
def test_live_id_is_not_taken_over(sharing_runtime, plain_runtime, test_tmp, spec_template, glibc_rootfs, cid):
    """A second create with a running container's id (another runtime root)
    used to reset that container's usage region in place, and its delete
    removed the first one's state. Now it is refused and the first keeps its
    state."""
    rt, state = sharing_runtime
    first = ocitest.Bundle(test_tmp / "first", spec_template, glibc_rootfs)
    first.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=0")
    first.shell("sleep 30")
    first.write()
    rt.create(first, cid)
    limits = (state / "containers" / cid / "limits").read_bytes()
    other = ocitest.Runtime(rt.name + "-other", rt.argv, test_tmp / "other-root", env=rt.env,
                            lowlevel=ocitest.Runtime("other", plain_runtime.argv, test_tmp / "other-root"))
    try:
        second = ocitest.Bundle(test_tmp / "second", spec_template, glibc_rootfs)
        second.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=0")
        second.write()
        p = other.create(second, cid, check=False)
        assert p.returncode != 0
        assert f'container id "{cid}" is already in use' in p.stderr, p.stderr
        other.run("delete", "--force", cid, check=False)
        assert (state / "containers" / cid / "limits").read_bytes() == limits
        assert (state / "containers" / cid / "run" / "region.sock").is_socket()
    finally:
        other.cleanup()
        rt.run("delete", "--force", cid, check=False)
    # the state goes when the killed container's monitor has seen it end, as in the tests above
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (state / "containers" / cid).exists():
        time.sleep(0.05)
    assert not (state / "containers" / cid).exists()


@pytest.mark.gpuslice
def test_create_that_runc_rejects_leaves_nothing(sharing_runtime, test_tmp, spec_template, glibc_rootfs, cid):
    """gpuslice prepared the state, then runc failed: no poststop will ever
    run. The container's monitor sees runc end without a container and
    removes the state."""
    rt, state = sharing_runtime
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, glibc_rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=0")
    bundle.spec["mounts"].append({"destination": "/mnt/x", "type": "bind", "source": str(test_tmp / "missing"),
                                  "options": ["rbind"]})
    bundle.write()
    p = rt.create(bundle, cid, check=False)
    assert p.returncode != 0
    assert ocitest.eventually(lambda: not (state / "containers" / cid).exists()), list((state / "containers").iterdir())


@pytest.mark.gpuslice
def test_leftovers_of_a_killed_create_are_collected(sharing_runtime, test_tmp, spec_template, glibc_rootfs, cid):
    """`kill -9` of the runtime mid-create left a state dir and a temporary
    config.json: the next create collects both (their writer is gone)."""
    rt, state = sharing_runtime
    dead = subprocess.Popen(["true"])
    dead.wait()
    # what a create killed after making its state dir leaves
    stale = state / "containers" / "killed-create"
    stale.mkdir(parents=True)
    ocitest.write_state_record(stale, {"format": 3, "status": "created", "creator": {"pid": dead.pid, "start_time": 1}})
    (stale / "limits").write_text("x")
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, glibc_rootfs)
    leftover = bundle.path / f"config.json.gpuslice-tmp.{dead.pid}.12345"
    leftover.write_text("{}")
    rc, out = run(rt, bundle, cid, "0", "/bin/probe dlsym alloc 300Mi oom 256Mi")
    assert rc == 0, out
    assert not stale.exists()
    assert ocitest.eventually(lambda: not leftover.exists())  # by the create's init recorder


# --------------------------------------------------------------------------
# the per-GPU admission cap (issue 12)


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
def test_admission_cap_under_concurrent_creates(sharing_runtime, test_tmp, spec_template, glibc_rootfs):
    """21 creates at once on one GPU with a cap of 20: exactly 20 are
    created, the 21st fails naming the GPU and the setting and leaves
    nothing; once one of the 20 is deleted, the 21st is created."""
    rt, state = sharing_runtime
    conf = test_tmp / "gpuslice.toml"  # sharing_runtime's config, read at every call
    conf.write_text(conf.read_text() + "\n[admission]\nmax-containers-per-gpu = 20\n")
    bundles = []
    for i in range(21):
        bundle = ocitest.Bundle(test_tmp / f"cap{i}", spec_template, glibc_rootfs)
        bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=slice1")  # GPU 0, by its UUID
        bundle.shell("sleep 60")
        bundle.write()
        bundles.append(bundle)
    with ThreadPoolExecutor(max_workers=21) as pool:
        results = list(pool.map(lambda i: rt.create(bundles[i], f"cap-{i}", check=False), range(21)))
    created = [i for i, p in enumerate(results) if p.returncode == 0]
    refused = [i for i, p in enumerate(results) if p.returncode != 0]
    assert len(created) == 20 and len(refused) == 1, [p.stderr for p in results if p.returncode != 0]
    loser = refused[0]
    assert (f"GPU {FAKE_UUID0} already hosts 20 containers with GPU limits "
            "(admission.max-containers-per-gpu = 20)") in results[loser].stderr, results[loser].stderr
    assert not (state / "containers" / f"cap-{loser}").exists()
    assert f"cap-{loser}" not in rt.list_ids()

    rt.delete(f"cap-{created[0]}", force=True)
    # Its state goes with it: at once, or when its monitor sees the init
    # gone (a killed init stays a zombie until the test reaps it).
    gone = state / "containers" / f"cap-{created[0]}"
    deadline = time.monotonic() + 30
    while gone.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not gone.exists()
    rt.create(bundles[loser], f"cap-{loser}")
    assert (state / "containers" / f"cap-{loser}" / "limits").exists()


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
def test_memory_limits_may_not_add_up_past_the_gpu(sharing_runtime, test_tmp, spec_template, glibc_rootfs):
    """The GPU's memory from (the fake) NVML through gpuslice-shim: 16 GiB.
    Two 6 GiB slices fit, the third is refused naming the GPU, its memory
    and the sum; with allow-memory-overcommit it is created."""
    rt, state = sharing_runtime
    conf = test_tmp / "gpuslice.toml"
    base = conf.read_text() + f'\n[monitor]\nnvml-path = "{built("GPUSLICE_FAKE_NVML")}"\n'
    conf.write_text(base)
    spec_file = test_tmp / "cdi" / "fake-driver.json"
    spec = json.loads(spec_file.read_text())
    spec["devices"].append({"name": "big", "containerEdits": {
        "env": [f"GPUSLICE_GPU_UUID={FAKE_UUID0}", "GPUSLICE_MEMORY_LIMIT=6Gi"],
        "deviceNodes": spec["devices"][0]["containerEdits"]["deviceNodes"]}})
    spec_file.write_text(json.dumps(spec))
    bundles = []
    for i in range(3):
        bundle = ocitest.Bundle(test_tmp / f"big{i}", spec_template, glibc_rootfs)
        bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=big")
        bundle.shell("sleep 60")
        bundle.write()
        bundles.append(bundle)
    rt.create(bundles[0], "big-0")
    rt.create(bundles[1], "big-1")
    assert (state / "gpu-memory").read_text() == f"{FAKE_UUID0} 17179869184\n"
    p = rt.create(bundles[2], "big-2", check=False)
    assert p.returncode != 0
    assert (f"GPU {FAKE_UUID0} has 16 GiB of memory, and with this container's 6 GiB the memory limits of its "
            "containers would add up to 18 GiB (admission.allow-memory-overcommit = false)") in p.stderr, p.stderr
    assert not (state / "containers" / "big-2").exists()
    conf.write_text(base + "\n[admission]\nallow-memory-overcommit = true\n")
    rt.create(bundles[2], "big-2")
    for i in range(3):
        rt.delete(f"big-{i}", force=True)


# --------------------------------------------------------------------------
# the container's monitor: gpuslice-shim (issue 12, part 1)


def shim_of(cid: str, in_place: bool = False) -> int | None:
    """The pid of the gpuslice-shim whose --id is `cid` (with `in_place`, or
    of the init recorder that is its monitor until the first interval)."""
    return next((pid for pid, argv in ocitest.monitors(in_place).items() if cid in argv), None)


def process_fds(pid: int) -> dict[int, str]:
    return {int(fd.name): os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()}


def wait_in_poll(pid: int) -> None:
    """Until `pid` waits in poll or ppoll (its loop), bounded."""
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}/syscall").read_text().split()[0] not in ("7", "271") and time.monotonic() < deadline:
        time.sleep(0.01)


def set_monitor_interval(test_tmp: Path, interval: str) -> None:
    conf = test_tmp / "gpuslice.toml"  # sharing_runtime's config, read at every call
    conf.write_text(conf.read_text() + f'\n[monitor]\ninterval = "{interval}"\n')


@pytest.mark.gpuslice
def test_the_monitor_is_gpuslice_shim_detached_and_gone_with_the_container(sharing_runtime, test_tmp, spec_template,
                                                                         glibc_rootfs, cid):
    rt, state = sharing_runtime
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, glibc_rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=burst")
    bundle.shell("/bin/probe dlsym alloc 200Mi ok 256Mi")
    bundle.write()
    rt.create(bundle, cid)
    # exec'd by the create's init recorder, the monitor until then, at its
    # first interval (1 s)
    assert ocitest.eventually(lambda: shim_of(cid)), "no gpuslice-shim for the container"
    shim = shim_of(cid)
    proc = Path(f"/proc/{shim}")
    # let it reach its loop before its descriptors are counted
    wait_in_poll(shim)
    # its own program, beside gpuslice-runtime, in its own session
    assert os.readlink(proc / "exe") == os.path.join(os.path.dirname(rt.argv[0]), "gpuslice-shim")
    stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
    assert int(stat[3]) == shim, "not a session leader"  # field 6: session
    # started at nice 19 (its loading gives way to the container's start),
    # at the default priority in its loop
    assert int(stat[16]) == 0, "nice %s" % stat[16]  # field 19: nice
    # nothing inherited: an environment of PATH alone, stdio on /dev/null,
    # the listener, region, watched process and activity table at 3..6 (by
    # now the watched runtime is gone: the init's pidfd replaced it)
    assert (proc / "environ").read_bytes().split(b"\0")[:-1] == [b"PATH=/usr/sbin:/usr/bin:/sbin:/bin"]
    fds = process_fds(shim)
    assert fds[0] == fds[1] == fds[2] == "/dev/null"
    assert fds[3].startswith("socket:") and fds[4].startswith("/memfd:gpuslice-region"), fds
    assert fds[6] == str(state / "activity"), fds
    # and only its own since: the pidfd it watches, its timers (publishing,
    # checking), its log
    others = [t for fd, t in fds.items() if fd > 6 or fd == 5]
    assert others.count("anon_inode:[pidfd]") == 1, fds
    assert all(t in ("anon_inode:[pidfd]", "anon_inode:[timerfd]") or t.endswith("/gpuslice-shim.log")
               for t in others), fds
    # not in the container's cgroup: neither frozen nor OOM-killed with it
    init = int((bundle.path / f"{cid}.pid").read_text())
    assert (proc / "cgroup").read_text() != Path(f"/proc/{init}/cgroup").read_text()
    # started once runc had made the init, watching it from the first moment;
    # recorded where restarts and `inspect` look for it
    argv = ocitest.monitors()[shim]
    assert argv[argv.index("--init") + 1] == str(init) and "--pid-file" not in argv, argv
    assert ocitest.watched_pids(shim) == [init]
    record = lambda: ocitest.state_record(state / "containers" / cid)  # noqa: E731
    assert ocitest.eventually(lambda: "monitor" in record()) and record()["monitor"]["pid"] == shim
    # the dir it removes at the end is its creator's: the init recorder's,
    # to which the create handed it over before it exec'd runc
    creator = ocitest.process_text(record(), "creator").split()
    assert argv[argv.index("--creator") + 1].split() == creator, argv
    # no signal blocked, none ignored but SIGPIPE (bit 13), none caught
    status = dict(line.split(":\t", 1) for line in (proc / "status").read_text().splitlines() if ":\t" in line)
    assert int(status["SigBlk"], 16) == 0 and int(status["SigIgn"], 16) == 1 << 12, status

    rt.start(cid)
    assert ocitest.wait_pid(init, 30) == 0
    rt.delete(cid)
    deadline = time.monotonic() + 10
    while shim_of(cid, in_place=True) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert shim_of(cid, in_place=True) is None, "the monitor outlived its container"
    assert not (state / "containers" / cid).exists()


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
def test_create_fails_when_the_monitor_cannot_start(sharing_runtime, test_tmp, spec_template, glibc_rootfs, cid):
    """No container with limits runs without its monitor: a missing
    gpuslice-shim fails the create, naming it, and leaves nothing."""
    rt, state = sharing_runtime
    conf = test_tmp / "gpuslice.toml"
    conf.write_text(conf.read_text().replace("[runtime]\n", '[runtime]\nshim-path = "/nonexistent/gpuslice-shim"\n', 1))
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, glibc_rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=0")
    bundle.write()
    p = rt.create(bundle, cid, check=False)
    assert p.returncode != 0
    assert 'cannot start the container\'s monitor "/nonexistent/gpuslice-shim"' in p.stderr, p.stderr
    assert not (state / "containers" / cid).exists()
    assert cid not in rt.list_ids()


def use_lowlevel_script(test_tmp: Path, body: str, interpreter: str = "/bin/sh") -> None:
    """Makes the script `body` (sh, or `interpreter`'s) the low-level runtime
    of the test's gpuslice.toml (a stand-in that wraps the real one)."""
    script = test_tmp / "lowlevel.sh"
    script.write_text(f"#!{interpreter}\n" + body)
    script.chmod(0o755)
    conf = test_tmp / "gpuslice.toml"
    text = conf.read_text()
    at = text.index("runtimes = ")
    conf.write_text(text[:at] + f'runtimes = ["{script}"]' + text[text.index("\n", at):])


@pytest.mark.gpuslice
def test_create_with_limits_execs_the_runtime(sharing_runtime, runtime_name, test_tmp, spec_template, glibc_rootfs,
                                              cid):
    """The create of a container with limits is the low-level runtime's own
    process (gpuslice-runtime execs it: the caller waits for runc alone),
    and the monitor still watches the init from its first moment, started
    by the create's init recorder."""
    rt, state = sharing_runtime
    parent = test_tmp / "runtime.parent"
    use_lowlevel_script(test_tmp, f'case " $* " in *" create "*) echo $PPID > {parent};; esac\n'
                                  f'exec {tool(RUNTIMES[runtime_name])} "$@"\n')
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, glibc_rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=0")
    bundle.shell("/bin/probe dlsym alloc 300Mi oom 256Mi")
    bundle.write()
    rt.create(bundle, cid)
    assert int(parent.read_text()) == os.getpid(), "the runtime ran as a child of gpuslice-runtime"
    init = int((bundle.path / f"{cid}.pid").read_text())
    assert ocitest.eventually(lambda: "monitor" in ocitest.state_record(state / "containers" / cid))
    assert ocitest.eventually(lambda: shim_of(cid)), "no gpuslice-shim after the first interval"
    argv = ocitest.monitors()[shim_of(cid)]
    assert argv[argv.index("--init") + 1] == str(init), argv
    assert ocitest.watched_pids(shim_of(cid)) == [init]
    rt.start(cid)
    assert ocitest.wait_pid(init, 30) == 0
    out = (bundle.path / f"{cid}.out").read_text()
    assert "probe dlsym alloc 300Mi: as expected" in out, out  # the limit held
    rt.delete(cid)
    assert ocitest.eventually(lambda: not (state / "containers" / cid).exists())


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
def test_until_its_first_interval_the_monitor_is_the_init_recorder(sharing_runtime, test_tmp, spec_template,
                                                                   glibc_rootfs, cid):
    """Until its first interval (an hour here) a container's monitor is the
    create's init recorder, detached as gpuslice-shim is: it hands the
    container its region (the limit holds), and when the container ends it
    removes the state and exits, without gpuslice-shim ever exec'd."""
    rt, state = sharing_runtime
    set_monitor_interval(test_tmp, "3600s")
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, glibc_rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=burst")
    bundle.shell("/bin/probe dlsym alloc 300Mi oom 256Mi")
    bundle.write()
    rt.create(bundle, cid)
    dir_ = state / "containers" / cid
    init = int((bundle.path / f"{cid}.pid").read_text())
    assert ocitest.eventually(lambda: "monitor" in ocitest.state_record(dir_))
    monitor = ocitest.state_record(dir_)["monitor"]["pid"]
    proc = Path(f"/proc/{monitor}")
    # gpuslice-runtime's process and command line, named gpuslice-shim
    assert os.path.basename(os.readlink(proc / "exe")) == "gpuslice-runtime"
    assert (proc / "comm").read_text() == "gpuslice-shim\n"
    assert shim_of(cid, in_place=True) == monitor and shim_of(cid) is None
    # the recorder: the dir's creator, which it removes at the end
    assert ocitest.state_record(dir_)["creator"]["pid"] == monitor
    wait_in_poll(monitor)
    stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
    assert int(stat[3]) == monitor, "not a session leader"  # field 6: session
    assert int(stat[16]) == 0, "nice %s" % stat[16]  # field 19: nice
    # stdio on /dev/null, its own descriptors at gpuslice-shim's numbers
    # (listener, region, the init's pidfd, activity table), else only timers
    fds = process_fds(monitor)
    assert fds[0] == fds[1] == fds[2] == "/dev/null", fds
    assert fds[3].startswith("socket:") and fds[4].startswith("/memfd:gpuslice-region"), fds
    assert fds[5] == "anon_inode:[pidfd]" and fds[6] == str(state / "activity"), fds
    assert all(t == "anon_inode:[timerfd]" for fd, t in fds.items() if fd > 6), fds
    assert ocitest.watched_pids(monitor) == [init]
    status = dict(line.split(":\t", 1) for line in (proc / "status").read_text().splitlines() if ":\t" in line)
    assert int(status["SigBlk"], 16) == 0 and int(status["SigIgn"], 16) == 1 << 12, status
    assert (proc / "cgroup").read_text() != Path(f"/proc/{init}/cgroup").read_text()

    rt.start(cid)
    assert ocitest.wait_pid(init, 30) == 0
    out = (bundle.path / f"{cid}.out").read_text()
    assert "probe dlsym alloc 300Mi: as expected" in out, out  # the limit held
    assert ocitest.eventually(lambda: not dir_.exists()), "the monitor did not remove the state"
    assert ocitest.eventually(lambda: shim_of(cid, in_place=True) is None), "the monitor outlived its container"
    rt.delete(cid)


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
def test_a_gpuslice_shim_that_cannot_be_executed_leaves_the_monitor_in_place(sharing_runtime, test_tmp,
                                                                             spec_template, glibc_rootfs, cid):
    """A gpuslice-shim that is there but is no program: the exec at the
    first interval fails, which is one line in gpuslice-shim's log, and the
    monitor goes on in place without the driver's accounting, as
    gpuslice-shim does without NVML: the limit holds, the state goes with
    the container."""
    rt, state = sharing_runtime
    broken = test_tmp / "broken-shim"
    broken.write_bytes(b"not a program\n")
    broken.chmod(0o755)
    conf = test_tmp / "gpuslice.toml"
    conf.write_text(conf.read_text().replace("[runtime]\n", f'[runtime]\nshim-path = "{broken}"\n', 1))
    set_monitor_interval(test_tmp, "100ms")
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, glibc_rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=0")
    bundle.shell("/bin/probe dlsym alloc 300Mi oom 256Mi")
    bundle.write()
    rt.create(bundle, cid)
    log = test_tmp / "log" / "gpuslice-shim.log"
    said = (f'gpuslice-shim container {cid}: cannot execute "{broken}": Exec format error: '
            "GPU memory is enforced by the interposer alone")
    assert ocitest.eventually(lambda: log.exists() and said in log.read_text()), log.exists() and log.read_text()
    dir_ = state / "containers" / cid
    monitor = ocitest.state_record(dir_)["monitor"]["pid"]
    assert shim_of(cid, in_place=True) == monitor
    rt.start(cid)
    init = int((bundle.path / f"{cid}.pid").read_text())
    assert ocitest.wait_pid(init, 30) == 0
    out = (bundle.path / f"{cid}.out").read_text()
    assert "probe dlsym alloc 300Mi: as expected" in out, out
    assert ocitest.eventually(lambda: not dir_.exists()), "the monitor did not remove the state"
    assert log.read_text().count("cannot execute") == 1, log.read_text()
    rt.delete(cid)


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
def test_a_recorder_that_fails_after_the_create_fails_the_start(sharing_runtime, test_tmp, spec_template,
                                                                 glibc_rootfs, cid):
    """What the init recorder cannot do once runc has made the container,
    after the create returned (record the init, stood in for by a record
    that turns out to be of a newer format): the container is deleted
    again, no monitor runs, and the start that follows fails with the
    reason rather than letting the container run unmonitored."""
    rt, state = sharing_runtime
    dir_ = state / "containers" / cid
    use_lowlevel_script(test_tmp, f'{tool(RUNTIMES["runc"])} "$@" || exit\n'
                                  f'case " $* " in *" create "*) sed -i \'s/"format":3/"format":999/\' '
                                  f'{dir_}/state.json;; esac\n')
    reason = f'"{dir_}/state.json": format 999, written by a newer gpuslice'
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, glibc_rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=0")
    bundle.write()
    rt.create(bundle, cid)
    p = rt.run("start", cid, check=False)
    assert p.returncode != 0
    assert (f'cannot start container "{cid}": cannot record the init of container "{cid}" or start its monitor '
            f'(deleted again): {reason}') in p.stderr, p.stderr
    assert cid not in rt.list_ids()
    assert shim_of(cid, in_place=True) is None
    runtime_log = (test_tmp / "log" / "gpuslice-runtime.log").read_text()
    assert "(deleted again)" in runtime_log, runtime_log
    rt.run("delete", cid, check=False)  # what containerd does next: the state goes with it
    assert not dir_.exists()


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
@pytest.mark.parametrize("verb", ["create", "run"])
def test_a_pid_file_an_earlier_container_left_names_no_init(sharing_runtime, test_tmp, spec_template, glibc_rootfs,
                                                            cid, verb):
    """A --pid-file that an earlier container left, whose pid now names a
    process started just before (in the same 10 ms tick, often: start times
    cannot tell it from an init), and a runtime that fails before writing
    its own: gpuslice removes the earlier file before it runs the runtime,
    so that process is never taken for the container's init (recorded,
    watched by a monitor, its GPU memory checked); the state goes, the
    process is left alone."""
    rt, state = sharing_runtime
    use_lowlevel_script(test_tmp, f'case " $* " in *" {verb} "*) exit 1;; esac\n'
                                  f'exec {tool(RUNTIMES["runc"])} "$@"\n')
    older = subprocess.Popen(["sleep", "60"])
    try:
        pid_file = test_tmp / "earlier.pid"
        pid_file.write_text(f"{older.pid}\n")
        bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, glibc_rootfs)
        bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=0")
        bundle.write()
        p = rt.run(verb, "--bundle", str(bundle.path), "--pid-file", str(pid_file), cid, check=False)
        assert p.returncode != 0
        assert not pid_file.exists()
        assert ocitest.eventually(lambda: not (state / "containers" / cid).exists())
        # a run's monitor removes the dir, then exits
        assert ocitest.eventually(lambda: shim_of(cid, in_place=True) is None), "a monitor stayed"
        assert older.poll() is None
    finally:
        older.kill()
        older.wait()


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
def test_a_pid_file_that_cannot_be_removed_fails_the_create(sharing_runtime, test_tmp, spec_template, glibc_rootfs,
                                                            cid):
    """A --pid-file path that is a directory cannot be made fresh: the create
    fails before runc runs, naming it, and leaves no state."""
    rt, state = sharing_runtime
    pid_file = test_tmp / "a-dir.pid"
    pid_file.mkdir()
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, glibc_rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=0")
    bundle.write()
    p = rt.run("create", "--bundle", str(bundle.path), "--pid-file", str(pid_file), cid, check=False)
    assert p.returncode != 0
    assert f'cannot create container "{cid}": cannot remove the pid file "{pid_file}"' in p.stderr, p.stderr
    assert not (state / "containers" / cid).exists()
    assert cid not in rt.list_ids()


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
def test_start_refuses_a_container_with_limits_whose_init_was_never_recorded(sharing_runtime, test_tmp,
                                                                             spec_template, glibc_rootfs, cid):
    """What a create killed between runc's exit and the init's record
    leaves (stood in for: the record removed, the monitor killed): a
    container with limits and no monitor that nothing could start again.
    `start` refuses it, where `state` only logs."""
    rt, state = sharing_runtime
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, glibc_rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=0")
    bundle.write()
    rt.create(bundle, cid)
    dir_ = state / "containers" / cid
    assert ocitest.eventually(lambda: "monitor" in ocitest.state_record(dir_))
    monitor = ocitest.state_record(dir_)["monitor"]["pid"]
    record = ocitest.state_record(dir_)
    del record["init"]
    record["status"] = "created"
    ocitest.write_state_record(dir_, record)
    os.kill(monitor, 9)
    assert ocitest.eventually(lambda: shim_of(cid, in_place=True) is None)
    assert rt.run("state", cid, check=False).returncode == 0
    p = rt.run("start", cid, check=False)
    assert p.returncode != 0
    assert f'cannot start container "{cid}": its create did not finish (no init is recorded' in p.stderr, p.stderr
    assert rt.state(cid)["status"] == "created"
    rt.delete(cid, force=True)
    assert not dir_.exists()


# --------------------------------------------------------------------------
# The create's init recorder: a container with limits has a process of the
# create's own wait for runc, record the init and become its monitor (one
# without limits has none: test_runtime).


def limited_bundle(test_tmp: Path, spec_template, rootfs: Path) -> ocitest.Bundle:
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=0")
    bundle.write()
    return bundle


@pytest.mark.gpuslice
def test_init_is_recorded_when_the_pid_file_is_lost(sharing_runtime, runtime_name, test_tmp, spec_template,
                                                    glibc_rootfs, cid):
    """The low-level runtime here runs runc and then loses the pid file
    gpuslice-runtime asked for: the create is runc's success all the same,
    and the init is recorded from what `runc state` says of the container."""
    rt, state = sharing_runtime
    use_lowlevel_script(test_tmp,
                        f"{tool(RUNTIMES[runtime_name])} \"$@\"\n"
                        "rc=$?\n"
                        'prev=\n'
                        'for a in "$@"; do\n'
                        '  case "$prev" in --pid-file) rm -f "$a";; esac\n'
                        '  case "$a" in --pid-file=*) rm -f "${a#--pid-file=}";; esac\n'
                        '  prev=$a\n'
                        'done\n'
                        "exit $rc\n")
    bundle = limited_bundle(test_tmp, spec_template, glibc_rootfs)
    rt.create(bundle, cid)
    try:
        record = lambda: ocitest.state_record(state / "containers" / cid)  # noqa: E731
        assert ocitest.eventually(lambda: "init" in record())
        assert record()["init"]["pid"] == rt.state(cid)["pid"]
        assert "init_pid_file" not in record()
    finally:
        rt.delete(cid, force=True)


@pytest.mark.gpuslice
def test_container_whose_init_cannot_be_recorded_is_deleted(sharing_runtime, runtime_name, test_tmp, spec_template,
                                                            glibc_rootfs, cid):
    """An error after runc created the container, and after the devices
    were injected (and logged): the low-level runtime here records another
    live process (pid 1) as the container's init once runc is done, so the
    init cannot be recorded. The container does not live on without its
    record: it is deleted again, the reason is in gpuslice's log (it once
    died of SIGSEGV there, logging through a logger it had already shut
    down) and in the state dir, for `start` to refuse with."""
    rt, state = sharing_runtime
    plant = test_tmp / "plant.py"  # pid 1 recorded as the init, as the state library writes it
    plant.write_text("import json, os, sys\n"
                     "d = sys.argv[1]\n"
                     "r = json.load(open(d + '/state.json'))\n"
                     "r['init'] = {'pid': 1, 'start_time': int(open('/proc/1/stat').read().rsplit(')', 1)[1].split()[19])}\n"
                     "r['status'] = 'running'\n"
                     "open(d + '/.plant', 'w').write(json.dumps(r))\n"
                     "os.replace(d + '/.plant', d + '/state.json')\n")
    use_lowlevel_script(test_tmp,
                        f"{tool(RUNTIMES[runtime_name])} \"$@\"\n"
                        "rc=$?\n"
                        'case " $* " in *" create "*)\n'
                        f"  /usr/bin/python3 {plant} {state / 'containers' / cid};;\n"
                        "esac\n"
                        "exit $rc\n")
    bundle = limited_bundle(test_tmp, spec_template, glibc_rootfs)
    rt.create(bundle, cid)
    assert ocitest.eventually(lambda: rt.list_ids() == [])
    record = lambda: ocitest.state_record(state / "containers" / cid)  # noqa: E731
    assert ocitest.eventually(lambda: record().get("status") == "failed")
    log_file = test_tmp / "log" / "gpuslice-runtime.log"
    assert ocitest.eventually(lambda: "(deleted again)" in log_file.read_text())
    log = log_file.read_text()
    assert f"container {cid}: injected {KIND}=0 with GPU limits" in log, log
    reason = (f'cannot record the init of container "{cid}" or start its monitor (deleted again): container id '
              f'"{cid}" is already in use by init process 1')
    assert f"error: {reason}" in log, log
    assert reason in record()["failure"]
    p = rt.run("start", cid, check=False)
    assert p.returncode != 0 and reason in p.stderr, p.stderr


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["runc"])
def test_create_execs_the_runtime_with_open_signals_and_a_killed_one_leaves_no_state(sharing_runtime, test_tmp,
                                                                                     spec_template, glibc_rootfs, cid):
    """The create of a container with limits execs the low-level runtime in
    its own process too, with no signal blocked (its init recorder is made
    with every signal blocked, and gives the mask back before the exec). A
    create killed before the runtime wrote its pid file leaves no state once
    the recorder has seen it end."""
    rt, state = sharing_runtime
    pid_file, blocked = test_tmp / "runtime.pid", test_tmp / "runtime.sigblk"
    # Python, not sh: dash clears the signal mask it starts with.
    use_lowlevel_script(test_tmp,
                        "import os, sys, time\n"
                        "if 'create' not in sys.argv: sys.exit(1)\n"
                        "status = open('/proc/self/status').read().splitlines()\n"
                        f"open({str(blocked)!r}, 'w').write([l for l in status if l.startswith('SigBlk:')][0])\n"
                        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
                        "time.sleep(60)\n", interpreter="/usr/bin/python3")
    bundle = limited_bundle(test_tmp, spec_template, glibc_rootfs)
    wrapper = subprocess.Popen(rt.cmd("create", "--bundle", str(bundle.path), cid), env=rt.env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert ocitest.eventually(lambda: pid_file.exists() and pid_file.read_text().strip() != ""), "runtime not started"
        assert int(pid_file.read_text()) == wrapper.pid
        assert blocked.read_text().split() == ["SigBlk:", "0" * 16]
        recorder = Path(f"/proc/{wrapper.pid}/task/{wrapper.pid}/children").read_text().split()
        assert len(recorder) == 1, recorder
        assert (state / "containers" / cid).is_dir()
        wrapper.kill()
        wrapper.wait(10)
        containers = state / "containers"
        assert ocitest.eventually(lambda: not containers.exists() or list(containers.iterdir()) == [])
    finally:
        if wrapper.poll() is None:
            wrapper.kill()
            wrapper.wait(10)
