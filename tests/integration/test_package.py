"""The Debian package, built by `packaging/build.sh deb` and installed the
way a node gets it: lintian finds no error, the packaged ELF files keep the
glibc floors, and in a clean Debian 12 root (debootstrap, cached) `dpkg -i`
gives a working install (`gpuslice version` finds every path, `cdi list`
sees a spec), registers in containerd only when asked
(GPUSLICE_CONFIGURE_CONTAINERD=1), removing unregisters, purging leaves
nothing of gpuslice.

GPUSLICE_PACKAGE_CC / GPUSLICE_PACKAGE_CXX pick the package's compiler (CI:
gcc-11 / g++-11, the compiler of Ubuntu 22.04 and RHEL 9); GPUSLICE_DEB
names a .deb built before instead (to iterate on these tests).
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import ocitest

ROOT = Path(__file__).resolve().parents[2]
CHECK_FLOORS = ROOT / "tests" / "packaging" / "check_floors.py"
CONTAINERD_CONFIG = 'version = 2\n\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n'


@pytest.fixture(scope="module")
def deb(tmp_path_factory) -> Path:
    if os.environ.get("GPUSLICE_DEB"):  # a .deb built before (to iterate on these tests)
        return Path(os.environ["GPUSLICE_DEB"]).resolve()
    dist = tmp_path_factory.mktemp("dist")
    # no -dbgsym package: the tests do not need it, and it takes time
    env = dict(os.environ, DIST=str(dist), DEB_BUILD_OPTIONS="noddebs")
    for var in ("CC", "CXX"):
        if os.environ.get(f"GPUSLICE_PACKAGE_{var}"):
            env[var] = os.environ[f"GPUSLICE_PACKAGE_{var}"]
    p = subprocess.run(["bash", str(ROOT / "packaging" / "build.sh"), "deb"], env=env, capture_output=True,
                       text=True, timeout=1200)
    assert p.returncode == 0, p.stdout + p.stderr
    debs = [d for d in dist.glob("gpuslice_*.deb")]
    assert len(debs) == 1, list(dist.iterdir())
    return debs[0]


@pytest.fixture(scope="module")
def unpacked(deb, tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("unpacked")
    subprocess.run(["dpkg-deb", "-x", str(deb), str(d)], check=True)
    return d


def test_lintian_finds_no_error(deb):
    p = subprocess.run(["lintian", "--fail-on", "error", str(deb)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "\nE: " not in "\n" + p.stdout, p.stdout


def test_packaged_files_keep_the_glibc_floors(unpacked):
    interposer = list(unpacked.glob("usr/lib/*/gpuslice/libgpuslice-cuda.so"))
    assert len(interposer) == 1
    p = subprocess.run(["python3", str(CHECK_FLOORS), "--glibc", "2.17", "--needed", "libc.so.6", str(interposer[0])],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    programs = [str(unpacked / "usr" / "bin" / n) for n in ("gpuslice", "gpuslice-runtime", "gpuslice-hook")]
    p = subprocess.run(["python3", str(CHECK_FLOORS), "--glibc", "2.34", "--glibcxx", "3.4.29", "--needed",
                        "libc.so.6,libm.so.6,libstdc++.so.6,libgcc_s.so.1,libyaml-0.so.2", *programs],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_conffile_and_control(deb):
    conffiles = subprocess.run(["dpkg-deb", "-I", str(deb), "conffiles"], capture_output=True, text=True).stdout
    assert conffiles.split() == ["/etc/gpuslice/config.toml"]
    depends = subprocess.run(["dpkg-deb", "-f", str(deb), "Depends"], capture_output=True, text=True).stdout
    assert "libc6 (>= 2.34)" in depends and "libyaml-0-2" in depends, depends


@pytest.fixture
def debian12(tmp_path):
    view = ocitest.OverlayRoot(ocitest.debian_root("bookworm", include=("libyaml-0-2",)), tmp_path / "debian12")
    yield view.path
    view.close()


def in_root(root: Path, script: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    # chroot's own minimal environment: nothing of the caller's
    base = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
    return subprocess.run(["chroot", str(root), "/bin/sh", "-c", script], env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=120)


def test_install_register_remove_purge_in_a_clean_debian_12(deb, debian12):
    root = debian12
    (root / "tmp" / deb.name).write_bytes(deb.read_bytes())
    (root / "etc" / "containerd").mkdir(parents=True)
    (root / "etc" / "containerd" / "config.toml").write_text(CONTAINERD_CONFIG)
    (root / "etc" / "cdi").mkdir(parents=True)
    (root / "etc" / "cdi" / "demo.yaml").write_text(
        'cdiVersion: "0.6.0"\nkind: example.com/gpu\ndevices:\n  - name: "0"\n'
        '    containerEdits:\n      env: ["DEMO=1"]\n')

    p = in_root(root, f"dpkg -i /tmp/{deb.name}", {"GPUSLICE_CONFIGURE_CONTAINERD": "1"})
    assert p.returncode == 0, p.stdout + p.stderr
    assert "restart containerd" in p.stdout, p.stdout
    registered = in_root(root, "cat /etc/containerd/config.toml /etc/containerd/conf.d/*.toml 2>/dev/null").stdout
    assert "BinaryName = '/usr/bin/gpuslice-runtime'" in registered, registered

    p = in_root(root, "gpuslice version && gpuslice cdi list && man -w gpuslice 2>/dev/null; "
                      "test -f /usr/share/man/man1/gpuslice.1.gz && echo man-page")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "[not found" not in p.stdout, p.stdout
    assert "/usr/lib/x86_64-linux-gnu/gpuslice/libgpuslice-cuda.so" in p.stdout or "aarch64" in p.stdout, p.stdout
    assert "example.com/gpu=0" in p.stdout, p.stdout
    assert "man-page" in p.stdout

    # an admin's edit of the conffile survives a reinstall (upgrade path)
    config = root / "etc" / "gpuslice" / "config.toml"
    config.write_text(config.read_text() + '\n# admin was here\n')
    p = in_root(root, f"dpkg -i --force-confold /tmp/{deb.name}")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "# admin was here" in config.read_text()

    p = in_root(root, "dpkg -r gpuslice")
    assert p.returncode == 0, p.stdout + p.stderr
    left = in_root(root, "cat /etc/containerd/config.toml /etc/containerd/conf.d/*.toml 2>/dev/null").stdout
    assert "gpuslice-runtime" not in left, left

    p = in_root(root, "dpkg -P gpuslice")
    assert p.returncode == 0, p.stdout + p.stderr
    leftovers = [str(q.relative_to(root)) for pattern in ("usr/bin/gpuslice*", "usr/lib/*/gpuslice", "etc/gpuslice",
                                                          "usr/share/containers/oci/hooks.d/gpuslice.json",
                                                          "usr/share/man/man*/gpuslice*", "run/gpuslice")
                 for q in root.glob(pattern)]
    assert leftovers == [], leftovers
