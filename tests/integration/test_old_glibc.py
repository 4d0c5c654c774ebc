"""A GPU container whose image has an older glibc than the machine that
built gpuslice: Debian 11 (glibc 2.31, made with debootstrap, cached), the
image family of Ubuntu 20.04 and of many CUDA images in use. Preloaded into
every program of it, the interposer must load (a reference to GLIBC_2.34
made even /bin/sh die) and the memory limit must hold there.

The probe and the fake libcuda run in the image too, so they are built with
the same floor (cmake/GlibcFloor.cmake); nothing else of the host's enters.
"""
from __future__ import annotations

import shutil
import struct

import pytest

import ocitest
from conftest import KIND, built

SUITE = "bullseye"  # Debian 11: glibc 2.31


@pytest.fixture(scope="module")
def debian11_rootfs(tmp_path_factory):
    view = ocitest.OverlayRoot(ocitest.debian_root(SUITE), tmp_path_factory.mktemp("debian11"))
    try:
        shutil.copy2(built("GPUSLICE_PROBE"), view.path / "usr" / "local" / "bin" / "probe")
        yield view.path
    finally:
        view.close()


@pytest.mark.gpuslice
def test_limit_holds_in_a_debian_11_image(sharing_runtime, test_tmp, spec_template, debian11_rootfs, cid):
    rt, state = sharing_runtime
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, debian11_rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=0")
    bundle.shell(
        "set -e; "
        "echo preload: $(cat /etc/ld.so.preload); "
        "ldd --version | head -n 1; "  # bash and the image's own glibc, preloaded
        "probe dlsym alloc 300Mi oom 256Mi; "
        "probe dlsym alloc 200Mi ok 256Mi; "
        "probe procaddr_v2 managed 300Mi oom 256Mi; "
        "ls /usr/local/bin >/dev/null && echo coreutils-ran"
    )
    rc, out, err = rt.run_container(bundle, cid)
    out += err
    assert rc == 0, out
    assert "GLIBC 2.31" in out, out  # it is the old glibc that ran
    assert "preload: /run/gpuslice/libgpuslice-cuda.so" in out, out
    assert "version `GLIBC_" not in out, out
    assert "probe dlsym alloc 300Mi: as expected" in out, out
    assert "probe dlsym alloc 200Mi: as expected" in out, out
    assert "probe procaddr_v2 managed 300Mi: as expected" in out, out
    assert "coreutils-ran" in out, out
    assert ocitest.eventually(lambda: not (state / "containers" / cid).exists())  # the monitor removes it


def elf_defining(versions: list[str]) -> bytes:
    """A minimal ELF64 whose version definitions name `versions`: how a
    libc.so.6 declares which glibc it is (what gpuslice-runtime reads)."""
    strtab = b"\0"
    offsets = []
    for v in versions:
        offsets.append(len(strtab))
        strtab += v.encode() + b"\0"
    strtab_at = 64
    verdef_at = (strtab_at + len(strtab) + 7) & ~7
    entry = 20 + 8  # Elf64_Verdef + Elf64_Verdaux
    verdef = b""
    for i, off in enumerate(offsets):
        nxt = entry if i + 1 < len(versions) else 0
        verdef += struct.pack("<HHHHIII", 1, 0, i + 2, 1, 0, 20, nxt) + struct.pack("<II", off, 0)
    shoff = (verdef_at + len(verdef) + 7) & ~7
    shdr = lambda typ, off, size, link=0, info=0: struct.pack("<IIQQQQIIQQ", 0, typ, 0, 0, off, size, link, info, 0, 0)
    sections = shdr(0, 0, 0) + shdr(3, strtab_at, len(strtab)) + shdr(0x6FFFFFFD, verdef_at, len(verdef), 1, len(versions))
    ehdr = (b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
            + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, 3, 0))
    out = bytearray(shoff + len(sections))
    out[0:64] = ehdr
    out[strtab_at:strtab_at + len(strtab)] = strtab
    out[verdef_at:verdef_at + len(verdef)] = verdef
    out[shoff:] = sections
    return bytes(out)


@pytest.mark.gpuslice
def test_image_older_than_the_floor_fails_at_create(sharing_runtime, test_tmp, spec_template, cid):
    """glibc 2.12 (CentOS 6) lacks GLIBC_2.17: instead of a container whose
    every program dies, create fails with one line naming the image's glibc
    and the floor, and nothing is left."""
    rt, state = sharing_runtime
    root = ocitest.build_busybox_rootfs(test_tmp / "rootfs")
    (root / "lib64").mkdir()
    (root / "lib64" / "libc-2.12.so").write_bytes(elf_defining(["GLIBC_2.2.5", "GLIBC_2.3", "GLIBC_2.12"]))
    (root / "lib64" / "libc.so.6").symlink_to("libc-2.12.so")
    bundle = ocitest.Bundle(test_tmp / "bundle", spec_template, root)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=0")
    written = bundle.write()
    p = rt.create(bundle, cid, check=False)
    assert p.returncode != 0
    assert ("the image's glibc (/lib64/libc.so.6, newest symbol version GLIBC_2.12) is older than glibc 2.17"
            in p.stderr), p.stderr
    assert bundle.config_path.read_bytes() == written
    assert not (state / "containers" / cid).exists()
    assert cid not in rt.list_ids()
    # the same image with a device that carries no limit starts: no interposer
    bundle.spec["annotations"]["cdi.k8s.io/fake-dra_claim"] = f"{KIND}=whole"
    bundle.shell("echo started")
    rc, out, err = rt.run_container(bundle, cid)
    assert rc == 0 and "started" in out, out + err
