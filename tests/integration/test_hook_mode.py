"""Hook mode: runc and crun given a config.json with gpuslice-hook in
hooks.prestart (and poststop), the way podman and CRI-O add it from the
packaged hooks.d files, and no gpuslice-runtime in front. The hook resolves
the container's cdi.k8s.io/ requests itself and injects them into the
created container: device nodes (mknod inside its root), the device cgroup,
the spec's read-only mount, the spec's createContainer hook, and, for a
device with a limit, the interposer, the limits file and the monitor.

The image is hostile: links in it that point at host directories (absolute
and "../.."), an LD_PRELOAD of its own, a preload list that is a link. Each
test shows that nothing outside the container's root is created, mounted or
loaded.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

import ocitest
from conftest import FAKE_TOTAL, KIND, built, gpuslice_hook_path, write_gpuslice_config, tool, RUNTIMES
from test_runtime import ANNOTATION, ENXIO, assert_fake_gpu_injected, hooks_d_prestart, run_probe

pytestmark = pytest.mark.gpuslice


def hook_log(test_tmp: Path) -> str:
    log = test_tmp / "gpuslice-log" / "gpuslice-hook.log"
    return log.read_text() if log.exists() else ""


def own_busybox_rootfs(test_tmp: Path, name: str = "rootfs") -> Path:
    """A rootfs of the test's own: the hook makes mount points in it."""
    root = ocitest.build_busybox_rootfs(test_tmp / name)
    (root / "probe.sh").write_text(ocitest.PROBE)
    return root


def test_hook_injects_the_fake_gpu(request, plain_runtime, bundle, fake_gpu, gpuslice_config, gpuslice_state_dir,
                                   test_tmp, cid):
    """Everything the fake GPU's spec asks for but its env, seen from inside
    the container: nodes (type, numbers, mode, owner), the device cgroup
    letting them through (ENXIO from the absent driver, not EPERM), the
    read-only mount, the spec's createContainer hook run once with the
    state on stdin and its own env only. Listed at prestart and
    createRuntime both, it injects once. The state dir lives while the
    container does and poststop removes it."""
    hook = gpuslice_hook_path(request.config)
    bundle.annotate(ANNOTATION, fake_gpu.qualified("0"))
    hooks_d_prestart(bundle, hook, gpuslice_config, stages=("prestart", "createRuntime", "poststop"))
    bundle.args = ["sh", "-c", f"test -d {gpuslice_state_dir}/containers/{cid} || echo no-state-dir; sh /probe.sh"]
    rc, out, err = plain_runtime.run_container(bundle, cid)
    assert rc == 0, out + err
    facts = ocitest.parse_probe(out)
    assert facts.get("done") == "1", out
    assert_fake_gpu_injected(facts, fake_gpu, cid, devices=("0",), env=False)
    assert (fake_gpu.markers / f"{cid}.runs").read_text() == "ran\n"
    assert not (gpuslice_state_dir / "containers" / cid).exists()
    log = hook_log(test_tmp)
    assert f"container {cid} (prestart): injected {fake_gpu.qualified('0')}" in log, log
    assert "GPUSLICE_FAKE_DRIVER=1" in log, log  # the env it could not give is logged


def test_hook_unknown_device_fails_the_container(request, plain_runtime, bundle, fake_gpu, gpuslice_config,
                                                 gpuslice_state_dir, test_tmp, cid):
    """A device that no spec describes: the container does not start, the
    error names the device (runc's stderr; crun shows only the hook's exit
    status, so the hook's log too), and nothing is left."""
    bundle.annotate(ANNOTATION, f"{KIND}=7")
    hooks_d_prestart(bundle, gpuslice_hook_path(request.config), gpuslice_config)
    bundle.write()
    p = plain_runtime.create(bundle, cid, check=False)
    assert p.returncode != 0
    assert f"{KIND}=7" in p.stderr or plain_runtime.name == "crun", p.stderr
    assert f"{KIND}=7" in hook_log(test_tmp)
    plain_runtime.run("delete", "--force", cid, check=False)
    assert cid not in plain_runtime.list_ids()
    assert not (gpuslice_state_dir / "containers" / cid).exists()
    assert not (fake_gpu.markers / f"{cid}.runs").exists()


def test_hook_leaves_a_container_without_requests_alone(request, plain_runtime, bundle, gpuslice_config,
                                                       gpuslice_state_dir, cid):
    hooks_d_prestart(bundle, gpuslice_hook_path(request.config), gpuslice_config)
    bundle.shell("test -e /dev/nvidia0 && echo has-gpu; echo ran")
    rc, out, err = plain_runtime.run_container(bundle, cid)
    assert (rc, out) == (0, "ran\n"), err
    assert not (gpuslice_state_dir / "containers").exists() or not any((gpuslice_state_dir / "containers").iterdir())


@pytest.mark.parametrize("mode", ["hook", "runtime"])
@pytest.mark.parametrize("link", ["absolute", "relative", "target"])
def test_image_links_to_host_dirs_stay_inside_the_root(request, plain_runtime, gpuslice_runtime, spec_template,
                                                       fake_gpu, gpuslice_config, test_tmp, cid, link, mode):
    """The image's /usr/local, under which the spec mounts the driver's
    directory, is a link to a host directory, absolute or climbing with
    "../"; or the mount point itself is one. The link resolves inside the
    root, so the mount point is made and mounted there, and the host
    directory stays empty: by gpuslice-hook in hook mode, by runc or crun
    through gpuslice-runtime."""
    root = own_busybox_rootfs(test_tmp)
    host_dir = test_tmp / "host-target"
    host_dir.mkdir()
    shutil.rmtree(root / "usr" / "local")
    target = str(host_dir) if link != "relative" else "../" * 12 + str(host_dir).lstrip("/")
    if link == "target":
        (root / "usr" / "local").mkdir()
        (root / "usr" / "local" / "gpuslice-fake").symlink_to(target)
    else:
        (root / "usr" / "local").symlink_to(target)
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, root)
    bundle.spec["root"]["readonly"] = False
    bundle.annotate(ANNOTATION, fake_gpu.qualified("0"))
    if mode == "hook":
        hooks_d_prestart(bundle, gpuslice_hook_path(request.config), gpuslice_config)
    try:
        facts = run_probe(plain_runtime if mode == "hook" else gpuslice_runtime, bundle, cid)
    except ocitest.CommandFailed as e:
        assert list(host_dir.iterdir()) == []
        # crun refuses a mount point behind a dangling link (openat2
        # ENOENT): safe, and its choice; the hook and runc make it inside
        if mode == "runtime" and plain_runtime.name == "crun" and "No such file or directory" in str(e):
            return
        raise AssertionError(f"{e}\n{hook_log(test_tmp)}")
    assert facts["mount:content"] == fake_gpu.MOUNT_CONTENT, facts
    assert list(host_dir.iterdir()) == []
    # the link resolved as the container resolves it: inside the root
    inside = root / str(host_dir).lstrip("/")
    assert inside.is_dir()
    if link != "target":
        assert (inside / "gpuslice-fake").is_dir()
    with open("/proc/self/mountinfo") as m:
        assert str(host_dir) not in m.read()


@pytest.fixture
def hook_sharing(request, runtime_name, test_tmp, fake_driver_spec) -> Path:
    """The config of hook mode with the fake driver's spec, the interposer and
    the monitor (installed beside gpuslice-hook; in the build, beside
    gpuslice-runtime)."""
    shim = Path(os.environ["GPUSLICE_RUNTIME"]).parent / "gpuslice-shim"
    conf = write_gpuslice_config(test_tmp / "gpuslice.toml", [fake_driver_spec], tool(RUNTIMES[runtime_name]),
                                 gpuslice_hook_path(request.config), test_tmp / "state", test_tmp / "gpuslice-log")
    conf.write_text(conf.read_text().replace(
        "[runtime]\n", f'[runtime]\ninterposer-path = "{built("GPUSLICE_INTERPOSER")}"\nshim-path = "{shim}"\n', 1))
    return conf


@pytest.fixture
def glibc_rootfs(test_tmp) -> Path:
    root = own_busybox_rootfs(test_tmp, "glibc-rootfs")
    ocitest.copy_with_libs(built("GPUSLICE_PROBE"), root, "/bin/probe")
    return root


def limited_bundle(request, test_tmp, spec_template, root: Path, config: Path, script: str) -> ocitest.Bundle:
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, root)
    bundle.spec["root"]["readonly"] = False
    bundle.annotate(ANNOTATION, f"{KIND}=0")
    # the spec's env cannot reach a created process: the image sets what
    # its programs need, as an image built for a GPU does
    bundle.spec["process"]["env"] += ["LD_LIBRARY_PATH=/usr/local/nvidia/lib64", f"FAKE_CUDA_MEMORY={FAKE_TOTAL}"]
    hooks_d_prestart(bundle, gpuslice_hook_path(request.config), config)
    bundle.shell(script)
    return bundle


def test_hook_enforces_the_memory_limit(request, plain_runtime, test_tmp, spec_template, glibc_rootfs, hook_sharing,
                                        cid):
    """Device 0 of the fake driver carries GPUSLICE_MEMORY_LIMIT=256Mi: the
    hook wires the preload, the read-only limits file, the region and the
    monitor, and the program inside sees 256 MiB. The image's LD_PRELOAD
    names a canary library: no host process gpuslice starts (the hook, the
    monitor) loads it. The monitor removes the state when the container
    ends."""
    canary_dir = test_tmp / "canary"
    canary_dir.mkdir()
    canary = canary_dir / "libcanary.so"
    shutil.copy2(built("GPUSLICE_CANARY"), canary)
    bundle = limited_bundle(request, test_tmp, spec_template, glibc_rootfs, hook_sharing,
                            "echo preload: $(cat /etc/ld.so.preload); "
                            "if echo x > /run/gpuslice/limits 2>/dev/null; then echo limits-writable; fi; "
                            "/bin/probe dlsym alloc 300Mi oom 256Mi; /bin/probe dlsym alloc 200Mi ok 256Mi; "
                            "echo run: $(ls /run/gpuslice | sort | tr '\\n' ' ')")
    env = bundle.spec["process"]["env"]
    env[:] = [e for e in env if not e.startswith("LD_LIBRARY_PATH=")]
    env += [f"LD_PRELOAD={canary}", f"LD_LIBRARY_PATH=/usr/local/nvidia/lib64:{canary_dir}"]
    rc, out, err = plain_runtime.run_container(bundle, cid)
    assert rc == 0, out + err + hook_log(test_tmp)
    assert "preload: /run/gpuslice/libgpuslice-cuda.so" in out, out + err
    assert "limits-writable" not in out
    assert "probe dlsym alloc 300Mi: as expected" in out, out
    assert "probe dlsym alloc 200Mi: as expected" in out, out
    assert "run: libgpuslice-cuda.so limits region.sock" in out, out
    assert [p.name for p in canary_dir.iterdir()] == ["libcanary.so"]
    # the control: a host process given that env does load it
    subprocess.run(["/bin/true"], env={"LD_PRELOAD": str(canary)}, check=True)
    assert any(p.name.startswith("loaded.") for p in canary_dir.iterdir())
    assert ocitest.eventually(lambda: not (test_tmp / "state" / "containers" / cid).exists())


def test_hook_refuses_an_image_preload_that_is_a_link(request, plain_runtime, test_tmp, spec_template, glibc_rootfs,
                                                      hook_sharing, cid):
    """The image's /etc/ld.so.preload is a link to a host file: the hook
    refuses the container (fail closed: no limit-less start), names the
    path, and the host file is neither read into the container nor
    changed."""
    secret = test_tmp / "host-secret"
    secret.write_text("/host/lib.so\n")
    (glibc_rootfs / "etc" / "ld.so.preload").symlink_to(secret)
    bundle = limited_bundle(request, test_tmp, spec_template, glibc_rootfs, hook_sharing, "echo started")
    bundle.write()
    p = plain_runtime.create(bundle, cid, check=False)
    assert p.returncode != 0
    assert "/etc/ld.so.preload" in hook_log(test_tmp)
    plain_runtime.run("delete", "--force", cid, check=False)
    assert secret.read_text() == "/host/lib.so\n"
    assert not (test_tmp / "state" / "containers" / cid).exists()


LDCACHE_KIND = "gpuslice.test/ldcache"


@pytest.mark.parametrize("mode", ["hook", "runtime"])
def test_update_ldcache_as_a_spec_hook(request, plain_runtime, gpuslice_runtime, spec_template, fake_gpu,
                                       gpuslice_config, test_tmp, cid, mode):
    """A spec that mounts a driver library and asks, as a createContainer
    hook, for `gpuslice-hook update-ldcache --folder` (what the specs of
    `gpuslice cdi generate` hold): the container's ld cache knows the
    library. In hook mode gpuslice-hook runs the spec's hook from the host
    (entering the container's namespace); through gpuslice-runtime, runc or
    crun runs it inside the container's namespaces."""
    hook = gpuslice_hook_path(request.config)
    spec = {"cdiVersion": "0.6.0", "kind": LDCACHE_KIND, "devices": [{"name": "lib", "containerEdits": {
        "mounts": [{"hostPath": str(built("GPUSLICE_LDTEST_LIB")),
                    "containerPath": "/opt/gpu/lib/libgpuslice-ldtest.so.1", "options": ["ro", "nosuid", "nodev", "bind"]}],
        "hooks": [{"hookName": "createContainer", "path": hook,
                   "args": ["gpuslice-hook", "update-ldcache", "--folder", "/opt/gpu/lib"],
                   "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", f"GPUSLICE_CONFIG={gpuslice_config}"]}]}}]}
    (fake_gpu.spec_dir / "ldcache.json").write_text(json.dumps(spec))
    root = own_busybox_rootfs(test_tmp)
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, root)
    bundle.spec["root"]["readonly"] = False
    bundle.annotate(ANNOTATION, f"{LDCACHE_KIND}=lib")
    bundle.shell("grep -q /opt/gpu/lib/libgpuslice-ldtest.so.1 /etc/ld.so.cache && echo cached")
    if mode == "hook":
        hooks_d_prestart(bundle, hook, gpuslice_config)
    rt = plain_runtime if mode == "hook" else gpuslice_runtime
    rc, out, err = rt.run_container(bundle, cid)
    assert (rc, out) == (0, "cached\n"), out + err + hook_log(test_tmp)
    assert f"container {cid}: ld cache updated with /opt/gpu/lib" in hook_log(test_tmp)


@pytest.fixture
def userns_rootfs():
    """A rootfs the container's mapped root can reach (the session's temp
    dirs are 0700)."""
    base = Path(tempfile.mkdtemp(prefix="gpuslice-userns-"))
    base.chmod(0o755)
    yield own_busybox_rootfs(base)
    shutil.rmtree(base, ignore_errors=True)


def test_hook_binds_host_nodes_in_a_user_namespace(request, plain_runtime, spec_template, userns_rootfs, fake_gpu,
                                                   gpuslice_config, test_tmp, cid):
    """A container with a user namespace of its own: a node made inside it
    could not be opened (its /dev belongs to that namespace), so the hook
    binds the host's nodes (the spec's hostPath), and the open reaches the
    (absent) driver: ENXIO, not EPERM."""
    hook = gpuslice_hook_path(request.config)
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, userns_rootfs)
    bundle.spec["root"]["readonly"] = False
    bundle.spec["linux"]["namespaces"].append({"type": "user"})
    bundle.spec["linux"]["uidMappings"] = [{"containerID": 0, "hostID": 100000, "size": 65536}]
    bundle.spec["linux"]["gidMappings"] = [{"containerID": 0, "hostID": 100000, "size": 65536}]
    # a cgroup v1 mount cannot be made from a user namespace
    bundle.spec["mounts"] = [m for m in bundle.spec["mounts"] if m["destination"] != "/sys/fs/cgroup"]
    bundle.annotate(ANNOTATION, fake_gpu.qualified("0"))
    hooks_d_prestart(bundle, hook, gpuslice_config)
    bundle.args = ["sh", "/probe.sh"]
    rc, out, err = plain_runtime.run_container(bundle, cid)
    assert rc == 0, out + err + hook_log(test_tmp)
    facts = ocitest.parse_probe(out)
    for path in ("/dev/nvidiactl", "/dev/nvidia0"):
        assert facts[f"node:{path}"].startswith("character special file c3 "), facts
        assert ENXIO in facts[f"open:{path}"], facts
    assert facts["node:/dev/nvidia1"] == "absent", facts
    assert facts["mount:content"] == fake_gpu.MOUNT_CONTENT, facts
    with open("/proc/self/mountinfo") as m:  # bound in the container's namespace only
        assert "/dev/nvidia0 " not in m.read()
