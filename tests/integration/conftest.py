"""Fixtures of the root integration tests: busybox rootfs, OCI bundles, runc and
crun (optionally behind a runc-compatible wrapper such as gpuslice-runtime),
the fake GPU's CDI spec, and a private containerd 1.6.

Options (or the environment variables of the same name):
  --gpuslice-runtime PATH   GPUSLICE_RUNTIME: the wrapper under test
  --gpuslice-hook PATH      GPUSLICE_HOOK: gpuslice-hook, written into the
                            wrapper's config as runtime.hook-path
Tests marked `gpuslice` need the wrapper and FAIL (never skip) without it.
"""
from __future__ import annotations

import itertools
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ocitest  # noqa: E402

RUNTIMES = {"runc": "runc", "crun": "crun"}


def pytest_addoption(parser):
    g = parser.getgroup("gpuslice")
    g.addoption("--gpuslice-runtime", default=os.environ.get("GPUSLICE_RUNTIME", ""),
                help="runc-compatible wrapper under test (env GPUSLICE_RUNTIME)")
    g.addoption("--gpuslice-hook", default=os.environ.get("GPUSLICE_HOOK", ""),
                help="gpuslice-hook binary (env GPUSLICE_HOOK)")
    g.addoption("--keep-tmp", action="store_true", help="keep the session's temp dir")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpuslice: needs gpuslice-runtime (GPUSLICE_RUNTIME); fails without it")
    config.addinivalue_line("markers", "containerd: starts a private containerd 1.6")


def pytest_sessionstart(session):
    if os.geteuid() != 0:
        pytest.exit("the integration tests need root (they run runc, crun and containerd)", returncode=1)
    ocitest.become_subreaper()


def tool(name: str) -> str:
    """Absolute path of a required tool; a missing one fails the test."""
    path = shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
    if not path:
        pytest.fail(f"{name} not found: CI installs runc crun containerd busybox-static; install it", pytrace=False)
    return path


# --------------------------------------------------------------------------
# session-wide


@pytest.fixture(scope="session")
def session_tmp(request):
    d = Path(tempfile.mkdtemp(prefix="gpuslice-it-"))
    yield d
    if not request.config.getoption("--keep-tmp"):
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def busybox_rootfs(session_tmp) -> Path:
    root = ocitest.build_busybox_rootfs(session_tmp / "rootfs")
    (root / "probe.sh").write_text(ocitest.PROBE)
    # mount points of the fake GPU's bind mount (the rootfs is read-only)
    (root / ocitest.FakeGpu.MOUNT_DEST.lstrip("/")).mkdir(parents=True, exist_ok=True)
    return root


@pytest.fixture(scope="session")
def spec_template(session_tmp) -> dict:
    return ocitest.runc_spec_template(session_tmp / "spec-template", tool("runc"))


@pytest.fixture(scope="session")
def host_cgroups():
    """Makes the host's cgroups acceptable to crun (see prepare_cgroups_for_crun)."""
    return ocitest.prepare_cgroups_for_crun()


_ids = itertools.count()


@pytest.fixture
def cid(request) -> str:
    """A container id unique in this session."""
    return f"it{os.getpid()}-{next(_ids)}"


@pytest.fixture
def test_tmp(session_tmp, request) -> Path:
    name = "".join(c if c.isalnum() else "_" for c in request.node.name)[:80]
    d = Path(tempfile.mkdtemp(prefix=name + "-", dir=session_tmp))
    return d


@pytest.fixture
def bundle(test_tmp, spec_template, busybox_rootfs) -> ocitest.Bundle:
    """A fresh bundle; set .args (or .shell(script)), then .write()."""
    return ocitest.Bundle(test_tmp / "bundle", spec_template, busybox_rootfs)


@pytest.fixture
def make_bundle(test_tmp, spec_template, busybox_rootfs):
    def make(name: str) -> ocitest.Bundle:
        return ocitest.Bundle(test_tmp / name, spec_template, busybox_rootfs)
    return make


# --------------------------------------------------------------------------
# runtimes


@pytest.fixture(params=sorted(RUNTIMES))
def runtime_name(request, host_cgroups) -> str:
    return request.param


@pytest.fixture
def plain_runtime(runtime_name, test_tmp):
    """runc or crun itself, with a private --root; containers left over are
    force-deleted at teardown, whatever the test's outcome."""
    rt = ocitest.Runtime(runtime_name, [tool(RUNTIMES[runtime_name])], test_tmp / "state")
    yield rt
    rt.cleanup()


@pytest.fixture
def fake_gpu(test_tmp) -> ocitest.FakeGpu:
    return ocitest.FakeGpu(test_tmp / "fake-gpu")


def gpuslice_path(config) -> str:
    path = config.getoption("--gpuslice-runtime")
    if not path:
        pytest.fail("GPUSLICE_RUNTIME is not set: pass --gpuslice-runtime PATH or set GPUSLICE_RUNTIME "
                    "(ctest sets it to build/shim/gpuslice-runtime)", pytrace=False)
    path = os.path.abspath(path)
    if not os.access(path, os.X_OK):
        pytest.fail(f"GPUSLICE_RUNTIME {path!r} is not an executable", pytrace=False)
    return path


def gpuslice_hook_path(config) -> str:
    path = config.getoption("--gpuslice-hook")
    if not path:
        pytest.fail("GPUSLICE_HOOK is not set: gpuslice-runtime adds gpuslice-hook to every GPU container; pass "
                    "--gpuslice-hook PATH or set GPUSLICE_HOOK (ctest sets it to build/hook/gpuslice-hook)",
                    pytrace=False)
    path = os.path.abspath(path)
    if not os.access(path, os.X_OK):
        pytest.fail(f"GPUSLICE_HOOK {path!r} is not an executable", pytrace=False)
    return path


def write_gpuslice_config(path: Path, spec_dirs: list[Path], lowlevel: str, hook: str, state_dir: Path, log_dir: Path):
    def arr(items):
        return "[" + ", ".join('"' + str(i).replace("\\", "\\\\").replace('"', '\\"') + '"' for i in items) + "]"
    lines = ["[cdi]", f"spec-dirs = {arr(spec_dirs)}", "",
             "[runtime]", f"runtimes = {arr([lowlevel])}", f'state-dir = "{state_dir}"']
    if hook:
        lines.append(f'hook-path = "{os.path.abspath(hook)}"')
    lines += ["", "[log]", 'level = "debug"', 'target = "file"', f'directory = "{log_dir}"', ""]
    path.write_text("\n".join(lines))
    return path


@pytest.fixture
def gpuslice_state_dir(test_tmp) -> Path:
    """runtime.state-dir of the wrapper's config (default /run/gpuslice)."""
    return test_tmp / "gpuslice-state"


@pytest.fixture
def gpuslice_config(request, test_tmp, fake_gpu, runtime_name, gpuslice_state_dir) -> Path:
    """GPUSLICE_CONFIG for the wrapper: the fake GPU's spec dir, the low-level
    runtime by absolute path, state and logs in the test's temp dir."""
    return write_gpuslice_config(test_tmp / "gpuslice.toml", [fake_gpu.spec_dir], tool(RUNTIMES[runtime_name]),
                                 request.config.getoption("--gpuslice-hook"), gpuslice_state_dir,
                                 test_tmp / "gpuslice-log")


@pytest.fixture
def gpuslice_runtime(request, plain_runtime, gpuslice_config):
    """The wrapper in front of runc/crun, called exactly like runc, sharing
    the plain runtime's --root (so `list` and cleanup see its containers)."""
    path = gpuslice_path(request.config)
    gpuslice_hook_path(request.config)
    env = dict(os.environ, GPUSLICE_CONFIG=str(gpuslice_config))
    rt = ocitest.Runtime(f"gpuslice+{plain_runtime.name}", [path], plain_runtime.root, env=env,
                         lowlevel=plain_runtime)
    yield rt
    rt.cleanup()


# --------------------------------------------------------------------------
# the fake CUDA driver, with limits (test_sharing.py, test_old_glibc.py)

KIND = "nvidia.com/gpu"
FAKE_TOTAL = 1 << 30
FAKE_UUID0 = "GPU-facea2a3-a4a5-a6a7-a8a9-aaabacadae00"  # the fake driver's device 0


def built(var: str) -> Path:
    path = os.environ.get(var, "")
    if not path or not os.path.exists(path):
        pytest.fail(f"{var} is not set to a built file (ctest sets it); got {path!r}", pytrace=False)
    return Path(path).resolve()


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
            # two slices of GPU 0 (the fake's UUID), 100 + 156 MiB: the
            # container gets their sum on that GPU
            {"name": "slice1", "containerEdits": {
                "env": [f"GPUSLICE_GPU_UUID={FAKE_UUID0}", "GPUSLICE_MEMORY_LIMIT=100Mi"],
                "deviceNodes": [{"path": "/dev/nvidia0", "hostPath": str(dev / "nvidia0")}]}},
            {"name": "slice2", "containerEdits": {
                "env": [f"GPUSLICE_GPU_UUID={FAKE_UUID0}", "GPUSLICE_MEMORY_LIMIT=156Mi"],
                "deviceNodes": [{"path": "/dev/nvidia0", "hostPath": str(dev / "nvidia0")}]}},
            {"name": "burst", "containerEdits": {
                "env": ["GPUSLICE_MEMORY_LIMIT=256Mi", "GPUSLICE_COMPUTE_LIMIT=30", "GPUSLICE_COMPUTE_POLICY=burst"],
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


# --------------------------------------------------------------------------
# containerd


@pytest.fixture(scope="session")
def containerd(session_tmp, busybox_rootfs, host_cgroups):
    """A private containerd 1.6 (root, state, socket, config under a temp dir)
    with the busybox image imported. Its environment carries GPUSLICE_CONFIG
    (containerd -> containerd-shim-runc-v2 -> the runc binary inherit it),
    pointing at `ctrd.gpuslice_config`, written by `containerd_fake_gpu`."""
    import ctrd
    base = session_tmp / "containerd"
    env = dict(os.environ, GPUSLICE_CONFIG=str(base / "gpuslice.toml"))
    d = ctrd.Containerd(base, tool("containerd"), tool("ctr"), env=env)
    d.gpuslice_config = base / "gpuslice.toml"
    try:
        d.start()
        d.import_busybox(busybox_rootfs)
        yield d
    finally:
        d.stop()


@pytest.fixture(scope="session")
def containerd_fake_gpu(request, containerd, session_tmp) -> ocitest.FakeGpu:
    """The fake GPU for containers run through containerd, and the wrapper's
    config (runc as the low-level runtime)."""
    gpu = ocitest.FakeGpu(session_tmp / "containerd-fake-gpu")
    write_gpuslice_config(containerd.gpuslice_config, [gpu.spec_dir], tool("runc"),
                          gpuslice_hook_path(request.config), session_tmp / "containerd-gpuslice-state",
                          session_tmp / "containerd-gpuslice-log")
    return gpu
