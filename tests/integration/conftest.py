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
import subprocess
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
                    "(ctest sets it to build/bin/gpuslice-runtime)", pytrace=False)
    path = os.path.abspath(path)
    if not os.access(path, os.X_OK):
        pytest.fail(f"GPUSLICE_RUNTIME {path!r} is not an executable", pytrace=False)
    return path


def gpuslice_hook_path(config) -> str:
    path = config.getoption("--gpuslice-hook")
    if not path:
        pytest.fail("GPUSLICE_HOOK is not set: gpuslice-runtime adds gpuslice-hook to every GPU container; pass "
                    "--gpuslice-hook PATH or set GPUSLICE_HOOK (ctest sets it to build/bin/gpuslice-hook)",
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


def fake_driver_cdi_spec(dev_dir: Path, libcuda: str, spec_dev_dir: str = "") -> dict:
    """A CDI spec as a GPU driver would ship it, for the fake driver: device
    nodes made in `dev_dir` (named in the spec as under `spec_dev_dir`, when
    the spec is read in another root, test_package), `libcuda` mounted
    read-only as libcuda.so.1, the library path; device 0 carries a 256 MiB
    memory limit, device `whole` none."""
    for name, minor in (("nvidia0", 0), ("nvidiactl", 255)):
        os.mknod(dev_dir / name, 0o666 | 0o020000, os.makedev(195, minor))

    def node(name: str) -> dict:
        return {"path": f"/dev/{name}", "hostPath": f"{spec_dev_dir or dev_dir}/{name}"}
    return {
        "cdiVersion": "0.6.0",
        "kind": KIND,
        "containerEdits": {
            "env": ["LD_LIBRARY_PATH=/usr/local/nvidia/lib64", f"FAKE_CUDA_MEMORY={FAKE_TOTAL}"],
            "deviceNodes": [node("nvidiactl")],
            "mounts": [{"hostPath": str(libcuda), "containerPath": "/usr/local/nvidia/lib64/libcuda.so.1",
                        "options": ["ro", "nosuid", "nodev", "bind"]}],
        },
        "devices": [
            {"name": "0", "containerEdits": {
                "env": ["GPUSLICE_MEMORY_LIMIT=256Mi"],
                "deviceNodes": [node("nvidia0")]}},
            {"name": "whole", "containerEdits": {
                "deviceNodes": [node("nvidia0")]}},
            # two slices of GPU 0 (the fake's UUID), 100 + 156 MiB: the
            # container gets their sum on that GPU
            {"name": "slice1", "containerEdits": {
                "env": [f"GPUSLICE_GPU_UUID={FAKE_UUID0}", "GPUSLICE_MEMORY_LIMIT=100Mi"],
                "deviceNodes": [node("nvidia0")]}},
            {"name": "slice2", "containerEdits": {
                "env": [f"GPUSLICE_GPU_UUID={FAKE_UUID0}", "GPUSLICE_MEMORY_LIMIT=156Mi"],
                "deviceNodes": [node("nvidia0")]}},
            {"name": "burst", "containerEdits": {
                "env": ["GPUSLICE_MEMORY_LIMIT=256Mi", "GPUSLICE_COMPUTE_LIMIT=30", "GPUSLICE_COMPUTE_POLICY=burst"],
                "deviceNodes": [node("nvidia0")]}},
        ],
    }


@pytest.fixture
def fake_driver_spec(test_tmp) -> Path:
    """The fake driver's CDI spec (fake_driver_cdi_spec) in a spec dir of its own."""
    dev = test_tmp / "dev"
    dev.mkdir()
    spec = fake_driver_cdi_spec(dev, str(built("GPUSLICE_FAKE_CUDA")))
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


@pytest.fixture(scope="session", params=["1.6", "1.7", "2"], ids=lambda r: f"containerd{r}")
def containerd(request, session_tmp, busybox_rootfs, host_cgroups):
    """A private containerd (root, state, socket, config under a temp dir)
    with the busybox image imported: 1.6 (Debian 12's), 1.7 and 2.x (Debian
    13's and unstable's, fetched once: ctrd.release_bin_dir). Its
    environment carries GPUSLICE_CONFIG (containerd -> containerd-shim-runc-v2
    -> the runc binary inherit it), pointing at `ctrd.gpuslice_config`,
    written by `containerd_fake_gpu`."""
    import ctrd
    base = session_tmp / f"containerd-{request.param}"
    env = dict(os.environ, GPUSLICE_CONFIG=str(base / "gpuslice.toml"))
    bin_dir = ctrd.release_bin_dir(request.param)
    d = ctrd.Containerd(base, str(bin_dir / "containerd"), str(bin_dir / "ctr"), env=env)
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
    gpu = ocitest.FakeGpu(containerd.base / "fake-gpu")
    write_gpuslice_config(containerd.gpuslice_config, [gpu.spec_dir], tool("runc"),
                          gpuslice_hook_path(request.config), containerd.base / "gpuslice-state",
                          containerd.base / "gpuslice-log")
    return gpu


# --------------------------------------------------------------------------
# packages (test_package.py, test_rpm.py)

REPO = Path(__file__).resolve().parents[2]
CONTAINERD_CONFIG = 'version = 2\n\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n'


def add_containerd_and_a_cdi_spec(root: Path) -> None:
    """What a node has before gpuslice: containerd's config (CRI, runc the
    default) and a CDI spec in /etc/cdi (device example.com/gpu=0)."""
    (root / "etc" / "containerd").mkdir(parents=True)
    (root / "etc" / "containerd" / "config.toml").write_text(CONTAINERD_CONFIG)
    (root / "etc" / "cdi").mkdir(parents=True, exist_ok=True)
    (root / "etc" / "cdi" / "demo.yaml").write_text(
        'cdiVersion: "0.6.0"\nkind: example.com/gpu\ndevices:\n  - name: "0"\n'
        '    containerEdits:\n      env: ["DEMO=1"]\n')


def built_package(kind: str, tmp_path_factory) -> Path:
    """The package the package tests install: the one in GPUSLICE_DEB /
    GPUSLICE_RPM (a file, or the dir ctest's `packaging: build the .KIND`
    built it into, beside the tests that start containers), else built
    here by tests/packaging/build_package.sh."""
    given = os.environ.get(f"GPUSLICE_{kind.upper()}")
    dist = Path(given).resolve() if given else tmp_path_factory.mktemp("dist")
    if dist.is_file():
        return dist
    if not given:
        p = subprocess.run(["bash", str(REPO / "tests" / "packaging" / "build_package.sh"), kind, str(dist)],
                           capture_output=True, text=True, timeout=1200)
        assert p.returncode == 0, p.stdout + p.stderr
    found = [f for f in dist.glob(f"gpuslice*.{kind}") if not f.name.startswith("gpuslice-kubelet-plugin")]
    assert len(found) == 1, f"{dist}: {list(dist.iterdir()) if dist.is_dir() else 'no such dir'}"
    return found[0]


def kubelet_plugin_package(node_package: Path) -> Path:
    """gpuslice-kubelet-plugin's package, built beside the node's."""
    found = list(node_package.parent.glob(f"gpuslice-kubelet-plugin*{node_package.suffix}"))
    assert len(found) == 1, list(node_package.parent.iterdir())
    return found[0]


def check_packaged_floors(root: Path, interposer_dir: str) -> None:
    """The glibc floors of the packaged ELF files (tests/packaging/check_floors.py):
    the interposer loads with glibc 2.17 and libc alone; the programs run on
    RHEL 9.4 (glibc 2.34) and Ubuntu 22.04 (2.35, gcc 11's libstdc++)."""
    check = REPO / "tests" / "packaging" / "check_floors.py"
    interposer = list(root.glob(f"{interposer_dir}/libgpuslice-cuda.so"))
    assert len(interposer) == 1, list(root.rglob("libgpuslice-cuda.so"))
    p = subprocess.run(["python3", str(check), "--glibc", "2.17", "--needed", "libc.so.6", str(interposer[0])],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    programs = [str(root / "usr" / "bin" / n) for n in ("gpuslice", "gpuslice-runtime", "gpuslice-hook", "gpuslice-shim")]
    p = subprocess.run(["python3", str(check), "--glibc", "2.34", "--glibcxx", "3.4.29", "--needed",
                        "libc.so.6,libm.so.6,libstdc++.so.6,libgcc_s.so.1,libyaml-0.so.2,ld-linux-x86-64.so.2",
                        *programs],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


@pytest.fixture
def debian12(tmp_path):
    """A clean Debian 12 root (debootstrap minbase + libyaml, cached), with a
    private writable layer over it."""
    view = ocitest.OverlayRoot(ocitest.debian_root("bookworm", include=("libyaml-0-2",)), tmp_path / "debian12")
    yield view.path
    view.close()


# What runs in a node root gets this environment, nothing of the caller's.
ROOT_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}


def in_root(root: Path, script: str, env: dict[str, str] | None = None, timeout: float = 120
            ) -> subprocess.CompletedProcess:
    return subprocess.run(["chroot", str(root), "/bin/sh", "-c", script], env={**ROOT_ENV, **(env or {})},
                          capture_output=True, text=True, timeout=timeout)
