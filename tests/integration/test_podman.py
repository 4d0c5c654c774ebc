"""podman 4.3 (Debian 12's) with the packaged hooks.d files, as a podman user
installs gpuslice: no gpuslice-runtime, only `--hooks-dir` naming the two
files the build renders (packaging/common/oci-hooks.d/), with the built
gpuslice-hook in them and GPUSLICE_CONFIG added to their env. Images are
imported from a local rootfs tarball (`podman import`): no registry.

- `--annotation cdi.k8s.io/...` gets the device (nodes, cgroup, mount, the
  spec's hook), and with a limited device the limit and the interposer;
- a bad request fails the container and the hook's line names the device;
- podman's own CDI (`--device`) next to the annotation: nothing twice;
- `--device` of a limited device without the annotation: refused, never
  started without its limit.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

import ocitest
from conftest import FAKE_TOTAL, KIND, built, gpuslice_hook_path, write_gpuslice_config
from test_runtime import assert_fake_gpu_injected

pytestmark = pytest.mark.gpuslice

ANNOTATION = "cdi.k8s.io/gpuslice-test"
# podman reads CDI specs from these two dirs only (4.3 has no setting)
PODMAN_CDI_DIR = Path("/var/run/cdi")


class Podman:
    def __init__(self, base: Path, hooks_dir: Path, config: Path):
        self.argv = ["podman", "--root", str(base / "root"), "--runroot", str(base / "runroot"),
                     "--cgroup-manager", "cgroupfs", "--events-backend", "file", "--hooks-dir", str(hooks_dir)]
        self.env = dict(os.environ, GPUSLICE_CONFIG=str(config))
        self.base = base

    def __call__(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        p = subprocess.run([*self.argv, *args], env=self.env, capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        if check and p.returncode != 0:
            raise AssertionError(f"podman {' '.join(args)}: {p.returncode}\n{p.stdout}{p.stderr}")
        return p

    def run(self, image: str, script: str, *options: str, runtime: str = "crun") -> tuple[subprocess.CompletedProcess, str]:
        """podman run --rm; returns the result and the container's full id."""
        cidfile = self.base / f"cid-{uuid.uuid4().hex}"
        # this machine's hard limits are below podman's defaults
        p = self(f"--runtime={shutil.which(runtime)}", "run", "--rm", "--network", "none", "--cidfile", str(cidfile),
                 "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096", *options, image, "sh", "-c", script,
                 check=False)
        cid = cidfile.read_text().strip() if cidfile.exists() else ""
        return p, cid


def render_hooks_dir(dest: Path, hook: str, config: Path) -> Path:
    """The build's hooks.d files with the built hook and GPUSLICE_CONFIG."""
    rendered = Path(hook).resolve().parent.parent / "packaging" / "oci-hooks.d"
    dest.mkdir(parents=True, exist_ok=True)
    names = sorted(p.name for p in rendered.glob("*.json"))
    assert names == ["gpuslice-poststop.json", "gpuslice.json"], names
    for name in names:
        doc = json.loads((rendered / name).read_text())
        doc["hook"]["path"] = hook
        doc["hook"]["env"].append(f"GPUSLICE_CONFIG={config}")
        (dest / name).write_text(json.dumps(doc, indent=2))
    return dest


@pytest.fixture(scope="module")
def podman_images(tmp_path_factory) -> tuple[Path, str, str]:
    """A podman storage with two images: busybox with the probe script, and
    busybox plus a glibc program (the interposer's probe)."""
    if not shutil.which("podman"):
        pytest.fail("podman missing: apt-get install podman (scripts/install-deps.sh)", pytrace=False)
    base = tmp_path_factory.mktemp("podman")
    images = []
    for name, with_probe in (("busybox", False), ("glibc", True)):
        root = ocitest.build_busybox_rootfs(base / f"{name}-rootfs")
        (root / "probe.sh").write_text(ocitest.PROBE)
        if with_probe:
            ocitest.copy_with_libs(built("GPUSLICE_PROBE"), root, "/bin/probe")
        tar = base / f"{name}.tar"
        subprocess.run(["tar", "-C", str(root), "-cf", str(tar), "."], check=True)
        image = f"localhost/gpuslice-{name}:test"
        Podman(base, base, base)("import", "-q", str(tar), image)
        images.append(image)
    yield base, images[0], images[1]
    subprocess.run(["podman", "--root", str(base / "root"), "--runroot", str(base / "runroot"), "system", "reset",
                    "--force"], capture_output=True)


@pytest.fixture
def podman(request, podman_images, test_tmp, fake_gpu, gpuslice_state_dir) -> Podman:
    base, _, _ = podman_images
    config = write_gpuslice_config(test_tmp / "gpuslice.toml", [fake_gpu.spec_dir], "crun",
                                   gpuslice_hook_path(request.config), gpuslice_state_dir, test_tmp / "gpuslice-log")
    hooks = render_hooks_dir(test_tmp / "hooks.d", gpuslice_hook_path(request.config), config)
    return Podman(base, hooks, config)


def hook_log(test_tmp: Path) -> str:
    log = test_tmp / "gpuslice-log" / "gpuslice-hook.log"
    return log.read_text() if log.exists() else ""


@pytest.fixture
def podman_cdi_spec():
    """Writes a spec where podman's own CDI reads it; removed afterwards."""
    written = []

    def write(doc: dict) -> Path:
        PODMAN_CDI_DIR.mkdir(parents=True, exist_ok=True)
        path = PODMAN_CDI_DIR / f"gpuslice-test-{uuid.uuid4().hex}.json"
        path.write_text(json.dumps(doc))
        written.append(path)
        return path
    yield write
    for p in written:
        p.unlink(missing_ok=True)


def test_podman_annotation_gets_the_device(podman, podman_images, fake_gpu, gpuslice_state_dir, test_tmp):
    _, busybox, _ = podman_images
    p, cid = podman.run(busybox, "sh /probe.sh", "--annotation", f"{ANNOTATION}={fake_gpu.qualified('0')}")
    assert p.returncode == 0, p.stdout + p.stderr + hook_log(test_tmp)
    facts = ocitest.parse_probe(p.stdout)
    assert facts.get("done") == "1", p.stdout
    assert_fake_gpu_injected(facts, fake_gpu, cid, devices=("0",), env=False)
    assert (fake_gpu.markers / f"{cid}.runs").read_text() == "ran\n"
    assert not (gpuslice_state_dir / "containers" / cid).exists()  # the poststop file's hook


def test_podman_without_request_runs_untouched(podman, podman_images, gpuslice_state_dir):
    _, busybox, _ = podman_images
    p, _ = podman.run(busybox, "test -e /dev/nvidia0 && echo has-gpu; echo ran")
    assert (p.returncode, p.stdout) == (0, "ran\n"), p.stderr
    assert not (gpuslice_state_dir / "containers").exists() or not any((gpuslice_state_dir / "containers").iterdir())


@pytest.mark.parametrize("runtime", ["crun", "runc"])
def test_podman_bad_request_fails_naming_the_device(podman, podman_images, test_tmp, gpuslice_state_dir, runtime):
    _, busybox, _ = podman_images
    p, cid = podman.run(busybox, "echo started", "--annotation", f"{ANNOTATION}={KIND}=7", runtime=runtime)
    assert p.returncode != 0
    assert "started" not in p.stdout
    # runc passes the hook's line on; crun says only that the hook failed
    line = [entry for entry in hook_log(test_tmp).splitlines() if f"{KIND}=7" in entry]
    assert line, hook_log(test_tmp)
    if runtime == "runc":
        assert f"{KIND}=7" in p.stderr, p.stderr
    assert not (gpuslice_state_dir / "containers" / cid).exists()


def test_podman_own_cdi_and_the_hook_do_nothing_twice(podman, podman_images, fake_gpu, podman_cdi_spec, test_tmp):
    """podman applies the device itself (--device, from /var/run/cdi) and
    the annotation asks the hook for the same: one node, one mount, the
    spec's hook run once."""
    _, busybox, _ = podman_images
    spec = fake_gpu.cdi_spec()
    spec["cdiVersion"] = "0.5.0"  # the newest podman 4.3's CDI library reads
    podman_cdi_spec(spec)
    script = ("sh /probe.sh; echo mounts=$(grep -c ' /usr/local/gpuslice-fake ' /proc/self/mountinfo); "
              "echo nodes=$(ls /dev | grep -c '^nvidia0$')")
    p, cid = podman.run(busybox, script, "--device", fake_gpu.qualified("0"),
                        "--annotation", f"{ANNOTATION}={fake_gpu.qualified('0')}")
    assert p.returncode == 0, p.stdout + p.stderr + hook_log(test_tmp)
    facts = ocitest.parse_probe(p.stdout)
    assert_fake_gpu_injected(facts, fake_gpu, cid, devices=("0",), env=True)  # podman gave the env
    assert facts["mounts"] == "1", p.stdout
    assert facts["nodes"] == "1", p.stdout
    assert (fake_gpu.markers / f"{cid}.runs").read_text() == "ran\n"


def limited_spec(dev_dir: Path, libcuda: Path) -> dict:
    from conftest import fake_driver_cdi_spec
    return fake_driver_cdi_spec(dev_dir, str(libcuda))


def test_podman_gets_the_limit_and_the_interposer(request, podman_images, test_tmp, gpuslice_state_dir):
    """The fake driver's device 0 (GPUSLICE_MEMORY_LIMIT=256Mi) by
    annotation: the program inside sees 256 MiB."""
    base, _, glibc = podman_images
    (test_tmp / "dev").mkdir()
    (test_tmp / "cdi").mkdir()
    (test_tmp / "cdi" / "fake-driver.json").write_text(
        json.dumps(limited_spec(test_tmp / "dev", built("GPUSLICE_FAKE_CUDA"))))
    config = write_gpuslice_config(test_tmp / "gpuslice.toml", [test_tmp / "cdi"], "crun",
                                   gpuslice_hook_path(request.config), gpuslice_state_dir, test_tmp / "gpuslice-log")
    shim = Path(os.environ["GPUSLICE_RUNTIME"]).parent / "gpuslice-shim"
    config.write_text(config.read_text().replace(
        "[runtime]\n", f'[runtime]\ninterposer-path = "{built("GPUSLICE_INTERPOSER")}"\nshim-path = "{shim}"\n', 1))
    podman = Podman(base, render_hooks_dir(test_tmp / "hooks.d", gpuslice_hook_path(request.config), config), config)
    p, cid = podman.run(glibc, "echo preload: $(cat /etc/ld.so.preload); ls /dev/nvidia0; "
                               "/bin/probe dlsym alloc 300Mi oom 256Mi; /bin/probe dlsym alloc 200Mi ok 256Mi",
                        "--annotation", f"{ANNOTATION}={KIND}=0",
                        "--env", "LD_LIBRARY_PATH=/usr/local/nvidia/lib64", "--env", f"FAKE_CUDA_MEMORY={FAKE_TOTAL}")
    assert p.returncode == 0, p.stdout + p.stderr + hook_log(test_tmp)
    assert "preload: /run/gpuslice/libgpuslice-cuda.so" in p.stdout, p.stdout
    assert "/dev/nvidia0" in p.stdout
    assert "probe dlsym alloc 300Mi: as expected" in p.stdout, p.stdout + p.stderr
    assert "probe dlsym alloc 200Mi: as expected" in p.stdout, p.stdout + p.stderr


def limited_device_spec(kind: str) -> dict:
    return {"cdiVersion": "0.5.0", "kind": kind, "devices": [
        {"name": "0", "containerEdits": {"env": ["GPUSLICE_MEMORY_LIMIT=256Mi"], "deviceNodes": [{"path": "/dev/zero"}]}}]}


def test_podman_device_with_a_limit_from_a_spec_the_hook_does_not_read_is_refused(podman, podman_images,
                                                                                 podman_cdi_spec, test_tmp):
    """podman's --device alone applies a limited device's env and node, and
    the hook's spec dirs do not hold that spec: nothing tells it the env
    came from root's spec, so started, it might run without its limit. It
    is refused."""
    _, busybox, _ = podman_images
    kind = f"gpuslice-test-{uuid.uuid4().hex[:8]}.example.com/gpu"
    podman_cdi_spec(limited_device_spec(kind))
    p, _ = podman.run(busybox, "echo started", "--device", f"{kind}=0")
    assert p.returncode != 0
    assert "started" not in p.stdout
    assert "refusing to start it unlimited" in hook_log(test_tmp), hook_log(test_tmp)


def test_podman_device_with_a_limit_runs_with_it(request, podman_images, podman_cdi_spec, test_tmp,
                                                 gpuslice_state_dir):
    """The same --device where the hook reads the spec too: podman applied
    it (env and node), the hook recognises the device by both and sets up
    its limit."""
    _, busybox, _ = podman_images
    kind = f"gpuslice-test-{uuid.uuid4().hex[:8]}.example.com/gpu"
    podman_cdi_spec(limited_device_spec(kind))
    config = write_gpuslice_config(test_tmp / "gpuslice.toml", [PODMAN_CDI_DIR], "crun",
                                   gpuslice_hook_path(request.config), gpuslice_state_dir, test_tmp / "gpuslice-log")
    shim = Path(os.environ["GPUSLICE_RUNTIME"]).parent / "gpuslice-shim"
    config.write_text(config.read_text().replace(
        "[runtime]\n", f'[runtime]\ninterposer-path = "{built("GPUSLICE_INTERPOSER")}"\nshim-path = "{shim}"\n', 1))
    podman = Podman(podman_images[0], render_hooks_dir(test_tmp / "hooks.d", gpuslice_hook_path(request.config),
                                                       config), config)
    p, _ = podman.run(busybox, "cat /etc/ld.so.preload /run/gpuslice/limits", "--device", f"{kind}=0")
    assert p.returncode == 0, p.stdout + p.stderr + hook_log(test_tmp)
    assert "/run/gpuslice/libgpuslice-cuda.so" in p.stdout and "memory 268435456" in p.stdout, p.stdout
    assert "(applied by the engine)" in hook_log(test_tmp), hook_log(test_tmp)


