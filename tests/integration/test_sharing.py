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
from pathlib import Path

import pytest

import ocitest
from conftest import gpuslice_hook_path, gpuslice_path, tool, write_gpuslice_config, RUNTIMES

KIND = "nvidia.com/gpu"
FAKE_TOTAL = 1 << 30


def built(var: str) -> Path:
    path = os.environ.get(var, "")
    if not path or not os.path.exists(path):
        pytest.fail(f"{var} is not set to a built file (ctest sets it); got {path!r}", pytrace=False)
    return Path(path).resolve()


def copy_with_libs(binary: Path, root: Path, dest: str) -> None:
    """Copies a dynamic program and the glibc it needs into the rootfs, at the
    paths the dynamic loader will look for them."""
    target = root / dest.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(binary, target)
    out = subprocess.run(["ldd", str(binary)], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        path = parts[2] if "=>" in parts and len(parts) > 2 else parts[0]
        if path.startswith("/"):
            lib = root / path.lstrip("/")
            lib.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(os.path.realpath(path), lib)


@pytest.fixture(scope="module")
def glibc_rootfs(tmp_path_factory) -> Path:
    root = ocitest.build_busybox_rootfs(tmp_path_factory.mktemp("glibc") / "rootfs")
    copy_with_libs(built("GPUSLICE_PROBE"), root, "/bin/probe")
    return root


@pytest.fixture
def fake_driver_spec(test_tmp) -> Path:
    """A CDI spec as a GPU driver would ship it, for the fake driver: device
    nodes, libcuda.so.1 mounted read-only, the library path; device 0 carries
    a 256 MiB memory limit, device `whole` none."""
    dev = test_tmp / "dev"
    dev.mkdir()
    for name, minor in (("nvidia0", 0), ("nvidiactl", 255)):
        os.mknod(dev / name, 0o666 | 0o020000, os.makedev(195, minor))
    libcuda = built("GPUSLICE_FAKE_CUDA")
    spec = {
        "cdiVersion": "0.6.0",
        "kind": KIND,
        "containerEdits": {
            "env": ["LD_LIBRARY_PATH=/usr/local/nvidia/lib64", f"FAKE_CUDA_MEMORY={FAKE_TOTAL}"],
            "deviceNodes": [{"path": "/dev/nvidiactl", "hostPath": str(dev / "nvidiactl")}],
            "mounts": [{"hostPath": str(libcuda), "containerPath": "/usr/local/nvidia/lib64/libcuda.so.1",
                        "options": ["ro", "nosuid", "nodev", "bind"]}],
        },
        "devices": [
            {"name": "0", "containerEdits": {
                "env": ["GPUSLICE_MEMORY_LIMIT=256Mi"],
                "deviceNodes": [{"path": "/dev/nvidia0", "hostPath": str(dev / "nvidia0")}]}},
            {"name": "whole", "containerEdits": {
                "deviceNodes": [{"path": "/dev/nvidia0", "hostPath": str(dev / "nvidia0")}]}},
        ],
    }
    spec_dir = test_tmp / "cdi"
    spec_dir.mkdir()
    (spec_dir / "fake-driver.json").write_text(json.dumps(spec, indent=2))
    return spec_dir


@pytest.fixture
def sharing_runtime(request, plain_runtime, runtime_name, test_tmp, fake_driver_spec):
    conf = write_gpuslice_config(test_tmp / "gpuslice.toml", [fake_driver_spec], tool(RUNTIMES[runtime_name]),
                                 gpuslice_hook_path(request.config), test_tmp / "state", test_tmp / "log")
    conf.write_text(conf.read_text().replace(
        "[runtime]\n", f'[runtime]\ninterposer-path = "{built("GPUSLICE_INTERPOSER")}"\n', 1))
    env = dict(os.environ, GPUSLICE_CONFIG=str(conf))
    rt = ocitest.Runtime(f"gpuslice+{plain_runtime.name}", [gpuslice_path(request.config)], plain_runtime.root,
                         env=env, lowlevel=plain_runtime)
    yield rt, test_tmp / "state"
    rt.cleanup()


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
    assert "preload: /usr/lib/gpuslice/libgpuslice-cuda.so" in out
    assert "limits-writable" not in out
    assert "probe dlsym alloc 300Mi: as expected" in out
    assert "probe dlsym alloc 200Mi: as expected" in out
    assert "probe procaddr_v2 managed 300Mi: as expected" in out
    assert "state-dir: limits region" in out
    # The container's state dir (limits, region, preload) is gone after delete.
    assert not (state / "containers" / cid).exists()


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
