"""`gpuslice cdi generate` over a fake driver tree the test builds: device
nodes made with mknod under a temporary dev root, /proc/driver/nvidia files
as the kernel module writes them, driver libraries with versioned names and
sonames (the fake libcuda and NVML), a decoy library of another version, a
tool, firmware and the persistenced socket. The spec it writes passes
`gpuslice cdi validate`, matches the golden files in tests/data/cdi-generate
(the temporary root shown as @ROOT@), and injects into a real runc/crun
container through gpuslice-runtime: the GPU's node, the libraries, and an
ld cache that knows libcuda.so.1 (gpuslice-hook update-ldcache).
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
from pathlib import Path

import pytest

import ocitest
from conftest import RUNTIMES, built, gpuslice_hook_path, gpuslice_path, tool, write_gpuslice_config
from test_runtime import ENXIO

pytestmark = pytest.mark.gpuslice

VERSION = "550.54.15"
GOLDEN = Path(__file__).resolve().parent.parent / "data" / "cdi-generate"
GPUS = (("0000:3b:00.0", 0, "GPU-3b3b3b3b-0000-4000-8000-000000000000"),
        ("0000:86:00.0", 1, "GPU-86868686-0000-4000-8000-000000000001"))


def cli() -> str:
    path = os.environ.get("GPUSLICE_CLI", "")
    if not path:
        pytest.fail("GPUSLICE_CLI is not set (ctest sets it)", pytrace=False)
    return path


def fake_driver_tree(root: Path) -> Path:
    dev = root / "dev"
    (dev / "nvidia-caps").mkdir(parents=True)
    for name, major, minor in (("nvidiactl", 195, 255), ("nvidia0", 195, 0), ("nvidia1", 195, 1),
                               ("nvidia-uvm", 510, 0), ("nvidia-uvm-tools", 510, 1), ("nvidia-caps/nvidia-cap1", 511, 1)):
        os.mknod(dev / name, stat.S_IFCHR | 0o666, os.makedev(major, minor))
    proc = root / "proc" / "driver" / "nvidia"
    proc.mkdir(parents=True)
    (proc / "version").write_text(f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {VERSION}  Tue Mar  5 2024\n"
                                  "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n")
    for bus, minor, uuid in GPUS:
        (proc / "gpus" / bus).mkdir(parents=True)
        (proc / "gpus" / bus / "information").write_text(
            f"Model: \t\t NVIDIA H200\nIRQ:   \t\t 35\nGPU UUID: \t {uuid}\nVideo BIOS: \t 96.00.74.00.01\n"
            f"Bus Type: \t PCIe\nDMA Size: \t 52 bits\nBus Location: \t {bus}\nDevice Minor: \t {minor}\n")
    lib = root / "usr" / "lib" / "x86_64-linux-gnu"
    lib.mkdir(parents=True)
    shutil.copy2(built("GPUSLICE_FAKE_CUDA"), lib / f"libcuda.so.{VERSION}")           # soname libcuda.so.1
    shutil.copy2(built("GPUSLICE_FAKE_NVML"), lib / f"libnvidia-ml.so.{VERSION}")      # soname libnvidia-ml.so.1
    (lib / "libnvidia-ml.so.1").symlink_to(f"libnvidia-ml.so.{VERSION}")              # a link: not mounted twice
    shutil.copy2(built("GPUSLICE_FAKE_CUDA"), lib / "libcudart.so.12.4.127")            # a toolkit's: not the driver's
    shutil.copy2(built("GPUSLICE_FAKE_CUDA"), lib / "libnvidia-ml.so.535.104.05")       # another driver's: not this one
    (root / "usr" / "bin").mkdir(parents=True)
    (root / "usr" / "bin" / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H200 (fake)'\n")
    (root / "usr" / "bin" / "nvidia-smi").chmod(0o755)
    (root / "lib" / "firmware" / "nvidia" / VERSION).mkdir(parents=True)
    (root / "lib" / "firmware" / "nvidia" / VERSION / "gsp_ga10x.bin").write_bytes(b"\0" * 16)
    (root / "run" / "nvidia-persistenced").mkdir(parents=True)
    s = socket.socket(socket.AF_UNIX)
    cwd = os.getcwd()
    os.chdir(root / "run" / "nvidia-persistenced")  # by a short name: the full path is over AF_UNIX's 108 bytes
    try:
        s.bind("socket")
    finally:
        os.chdir(cwd)
        s.close()
    return root


def generate(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([cli(), "cdi", "generate", "--dev-root", str(root), "--driver-root", str(root), *args],
                       capture_output=True, text=True, timeout=60)
    if check:
        assert p.returncode == 0, p.stdout + p.stderr
    return p


@pytest.mark.parametrize("golden,args", [
    ("nvidia.yaml", []),
    ("nvidia-slices.json", ["--device-name-strategy", "both", "--slices", "2", "--memory-limit", "70Gi"]),
])
def test_generated_spec_matches_golden(test_tmp, golden, args):
    root = fake_driver_tree(test_tmp / "driver")
    out = test_tmp / "out" / golden
    out.parent.mkdir()
    p = generate(root, "--hook-path", "/usr/bin/gpuslice-hook", "--output", str(out), *args)
    assert "2 GPUs, driver 550.54.15, 2 libraries" in p.stderr, p.stderr
    v = subprocess.run([cli(), "cdi", "validate", str(out)], capture_output=True, text=True)
    assert v.returncode == 0, v.stdout + v.stderr
    text = out.read_text().replace(str(root), "@ROOT@")
    if os.environ.get("GPUSLICE_UPDATE_GOLDEN"):
        (GOLDEN / golden).write_text(text)
    assert text == (GOLDEN / golden).read_text()
    assert sorted(p.name for p in out.parent.iterdir()) == [golden]  # written atomically, nothing else left


def test_host_root_reads_under_it_and_names_the_hosts_paths(test_tmp):
    """Run in a container with the host's / mounted at ROOT (a DaemonSet),
    `--host-root ROOT` finds what `--dev-root ROOT --driver-root ROOT`
    finds, and names it as the host's runtime sees it: without ROOT."""
    import yaml
    root = fake_driver_tree(test_tmp / "driver")
    out = test_tmp / "host-root.yaml"
    p = subprocess.run([cli(), "cdi", "generate", "--host-root", str(root), "--hook-path", "/usr/bin/gpuslice-hook",
                        "--output", str(out)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    assert str(root) not in text, text
    expected = yaml.safe_load((GOLDEN / "nvidia.yaml").read_text().replace("@ROOT@", ""))

    def drop_same_host_path(spec):
        for edits in [spec["containerEdits"], *(d["containerEdits"] for d in spec["devices"])]:
            for n in edits.get("deviceNodes", []):
                if n.get("hostPath") == n["path"]:
                    del n["hostPath"]
        return spec
    assert drop_same_host_path(yaml.safe_load(text)) == drop_same_host_path(expected)


def test_generate_fails_clearly(test_tmp):
    empty = test_tmp / "no-driver"
    empty.mkdir()
    p = generate(empty, "--output", str(test_tmp / "nvidia.yaml"), check=False)
    assert p.returncode != 0
    assert "/proc/driver/nvidia/version" in p.stderr, p.stderr
    assert not (test_tmp / "nvidia.yaml").exists()
    root = fake_driver_tree(test_tmp / "driver")
    p = generate(root, "--output", str(test_tmp / "nvidia.txt"), check=False)
    assert p.returncode != 0 and ".yaml, .yml or .json" in p.stderr, p.stderr
    p = generate(root, "--memory-limit", "lots", check=False)
    assert p.returncode != 0 and "--memory-limit" in p.stderr, p.stderr
    p = generate(root, "--cdi-version", "0.3.0", check=False)
    assert p.returncode != 0 and "needs 0.5.0" in p.stderr, p.stderr


def test_generated_spec_injects_into_a_container(request, runtime_name, plain_runtime, spec_template, test_tmp, cid):
    root = fake_driver_tree(test_tmp / "driver")
    spec_dir = test_tmp / "cdi"
    spec_dir.mkdir()
    generate(root, "--hook-path", gpuslice_hook_path(request.config), "--output", str(spec_dir / "nvidia.yaml"))
    conf = write_gpuslice_config(test_tmp / "gpuslice.toml", [spec_dir], tool(RUNTIMES[runtime_name]),
                                 gpuslice_hook_path(request.config), test_tmp / "state", test_tmp / "log")
    rt = ocitest.Runtime(f"gpuslice+{runtime_name}", [gpuslice_path(request.config)], plain_runtime.root,
                         env=dict(os.environ, GPUSLICE_CONFIG=str(conf)), lowlevel=plain_runtime)
    rootfs = ocitest.build_busybox_rootfs(test_tmp / "rootfs")
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, rootfs)
    bundle.spec["root"]["readonly"] = False
    bundle.annotate("cdi.k8s.io/gpu", "nvidia.com/gpu=1")
    bundle.shell("for d in nvidiactl nvidia0 nvidia1 nvidia-uvm; do "
                 "  if [ -e /dev/$d ]; then echo $d=$( (: < /dev/$d) 2>&1 ); else echo $d=absent; fi; done; "
                 f"ls /usr/lib/x86_64-linux-gnu/libcuda.so.{VERSION} /lib/firmware/nvidia/{VERSION}/gsp_ga10x.bin; "
                 "nvidia-smi; "
                 "grep -q libcuda.so.1 /etc/ld.so.cache && echo cache-knows-libcuda; "
                 "ls -l /usr/lib/x86_64-linux-gnu/libcuda.so.1")
    try:
        rc, out, err = rt.run_container(bundle, cid)
    finally:
        rt.cleanup()
    assert rc == 0, out + err
    assert "nvidia0=absent" in out, out  # device 1 only
    for node in ("nvidiactl", "nvidia1", "nvidia-uvm"):
        assert f"{node}=" in out and ENXIO in out.split(f"{node}=")[1].splitlines()[0], out
    assert "GPU 0: NVIDIA H200 (fake)" in out, out
    assert "cache-knows-libcuda" in out, out
    assert f"libcuda.so.1 -> libcuda.so.{VERSION}" in out, out  # ldconfig made the soname link
