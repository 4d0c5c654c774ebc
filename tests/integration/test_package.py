"""The Debian package, built by `packaging/build.sh deb` and installed the
way a node gets it: lintian finds no error, the packaged ELF files keep the
glibc floors, and in a clean Debian 12 root (debootstrap, cached) `dpkg -i`
gives a working install (`gpuslice version` finds every path, `cdi list`
sees a spec), registers in containerd only when asked
(GPUSLICE_CONFIGURE_CONTAINERD=1), removing unregisters, purging leaves
nothing of gpuslice. On a node made of that root, a container with a GPU
limit runs through the installed runtime while N-1 is upgraded to N under it.

GPUSLICE_PACKAGE_CC / GPUSLICE_PACKAGE_CXX pick the package's compiler (CI:
gcc-11 / g++-11, the compiler of Ubuntu 22.04 and RHEL 9); GPUSLICE_DEB
names a .deb built before instead (to iterate on these tests).
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest

import ocitest
from conftest import (KIND, REPO, ROOT_ENV, add_containerd_and_a_cdi_spec, built, check_packaged_floors,
                      built_package, fake_driver_cdi_spec, in_root, kubelet_plugin_package)


@pytest.fixture(scope="module")
def deb(tmp_path_factory) -> Path:
    return built_package("deb", tmp_path_factory)


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
    check_packaged_floors(unpacked, "usr/lib/*/gpuslice")


def test_conffile_and_control(deb):
    conffiles = subprocess.run(["dpkg-deb", "-I", str(deb), "conffiles"], capture_output=True, text=True).stdout
    assert conffiles.split() == ["/etc/gpuslice/config.toml"]
    depends = subprocess.run(["dpkg-deb", "-f", str(deb), "Depends"], capture_output=True, text=True).stdout
    assert "libc6 (>= 2.34)" in depends and "libyaml-0-2" in depends, depends


def test_the_kubelet_plugin_is_a_package_of_its_own(deb, tmp_path):
    """gRPC and libcurl stay out of the node's package; the plugin's package
    needs this very gpuslice, and its unit is shipped, not enabled."""
    plugin = kubelet_plugin_package(deb)
    field = lambda f, name: subprocess.run(["dpkg-deb", "-f", str(f), name], capture_output=True,  # noqa: E731
                                           text=True).stdout.strip()
    node_depends = field(deb, "Depends")
    assert not any(lib in node_depends for lib in ("grpc", "protobuf", "curl")), node_depends
    version = field(deb, "Version")
    depends = field(plugin, "Depends")
    assert f"gpuslice (= {version})" in depends and "libgrpc++" in depends and "libcurl" in depends, depends
    files = subprocess.run(["dpkg-deb", "-c", str(plugin)], capture_output=True, text=True).stdout
    ours = {line.split()[-1].lstrip(".") for line in files.splitlines() if not line.endswith("/")}
    assert {f for f in ours if not f.startswith("/usr/share/doc/")} == {
        "/usr/bin/gpuslice-kubelet-plugin", "/lib/systemd/system/gpuslice-kubelet-plugin.service",
        "/usr/share/man/man8/gpuslice-kubelet-plugin.8.gz"}, ours
    assert "/usr/share/doc/gpuslice-kubelet-plugin/kubernetes.md.gz" in ours, ours
    p = subprocess.run(["lintian", "--fail-on", "error", str(plugin)], capture_output=True, text=True)
    assert p.returncode == 0 and "\nE: " not in "\n" + p.stdout, p.stdout + p.stderr
    subprocess.run(["dpkg-deb", "-x", str(plugin), str(tmp_path)], check=True)
    p = subprocess.run([str(tmp_path / "usr/bin/gpuslice-kubelet-plugin"), "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "--host-root" in p.stdout, p.stdout + p.stderr
    unit = (tmp_path / "lib/systemd/system/gpuslice-kubelet-plugin.service").read_text()
    assert "ExecStart=/usr/bin/gpuslice-kubelet-plugin --kubeconfig /etc/gpuslice/kubelet-plugin.kubeconfig" in unit
    script = lambda name: subprocess.run(["dpkg-deb", "-I", str(plugin), name], capture_output=True,  # noqa: E731
                                         text=True).stdout
    postinst, prerm = script("postinst"), script("prerm")
    # enabled again only where the admin had enabled it; (re)started through
    # deb-systemd-invoke, which starts no disabled unit: an upgrade restarts
    # an enabled plugin, an install starts nothing
    assert postinst.count("deb-systemd-helper enable") == postinst.count("was-enabled") == 1, postinst
    assert "_dh_action=restart" in postinst and "deb-systemd-invoke $_dh_action" in postinst, postinst
    assert "systemctl enable" not in postinst and "systemctl start" not in postinst, postinst
    assert "deb-systemd-invoke stop 'gpuslice-kubelet-plugin.service'" in prerm, prerm  # removal stops it


def test_install_register_remove_purge_in_a_clean_debian_12(deb, debian12):
    root = debian12
    (root / "tmp" / deb.name).write_bytes(deb.read_bytes())
    add_containerd_and_a_cdi_spec(root)

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
                                                          "usr/share/containers/oci/hooks.d/gpuslice*.json",
                                                          "lib/systemd/system/gpuslice*", "lib/udev/rules.d/*gpuslice*",
                                                          "usr/share/man/man*/gpuslice*", "run/gpuslice")
                 for q in root.glob(pattern)]
    assert leftovers == [], leftovers


# --------------------------------------------------------------------------
# A node: the package's runtime, hook and interposer running a container,
# and an upgrade under it.

OLD_VERSION = "0.0.1~test"  # sorts before any real version


@pytest.fixture
def old_deb(deb, tmp_path) -> Path:
    """Version N-1: this package with its version lowered (same files; the
    programs report N). What an upgrade does to running containers is the
    package manager's replacing of files under them and the maintainer
    scripts; the state format across versions is the unit tests' (test_state)."""
    tree = tmp_path / "old"
    subprocess.run(["dpkg-deb", "-R", str(deb), str(tree)], check=True)
    control = tree / "DEBIAN" / "control"
    control.write_text("".join(f"Version: {OLD_VERSION}\n" if line.startswith("Version:") else line
                               for line in control.read_text().splitlines(keepends=True)))
    out = tmp_path / f"gpuslice_{OLD_VERSION}_amd64.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "-b", str(tree), str(out)], check=True, capture_output=True)
    return out


def in_node(root: Path, script: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`script` in the root as on a node: chroot with its own /proc and the
    host's /sys (cgroups) and /dev, in a private mount namespace."""
    q = shlex.quote
    setup = (f"mount -t proc proc {q(str(root / 'proc'))} && mount --rbind /sys {q(str(root / 'sys'))} && "
             f"mount --rbind /dev {q(str(root / 'dev'))} && "
             f"exec chroot {q(str(root))} /bin/sh -c {q(script)}")
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", setup], env=ROOT_ENV,
                          capture_output=True, text=True, timeout=timeout)


def wait_for_text(path: Path, text: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = path.read_text() if path.exists() else ""
        if text in got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never appeared in {path}: {got!r}")


@pytest.mark.gpuslice
def test_container_with_a_limit_survives_an_upgrade_under_it(deb, old_deb, debian12, spec_template):
    """With N-1 installed (no paths configured: the package's defaults), a
    container gets the fake GPU from a CDI spec in /etc/cdi and the limit
    from the installed interposer; N is installed over it while it runs;
    after the upgrade a new process in it still meets the limit, and it
    stops and is cleaned up by N's runtime and hook, leaving nothing."""
    root = debian12
    # the node's runc (Debian 12's, the host's: the same distribution)
    shutil.copy2(shutil.which("runc", path="/usr/sbin:/usr/bin"), root / "usr" / "sbin" / "runc")
    driver = root / "opt" / "fake-driver"
    (driver / "dev").mkdir(parents=True)
    shutil.copy2(built("GPUSLICE_FAKE_CUDA"), driver / "libcuda.so.1")
    spec = fake_driver_cdi_spec(driver / "dev", "/opt/fake-driver/libcuda.so.1", "/opt/fake-driver/dev")
    (root / "etc" / "cdi").mkdir(parents=True)
    (root / "etc" / "cdi" / "fake-driver.json").write_text(json.dumps(spec))

    image = ocitest.build_busybox_rootfs(root / "srv" / "image")
    ocitest.copy_with_libs(built("GPUSLICE_PROBE"), image, "/bin/probe")
    (image / "signal").mkdir()
    (root / "srv" / "signal").mkdir()
    bundle = ocitest.Bundle(root / "srv" / "bundle", spec_template, image)
    bundle.spec["root"]["path"] = "/srv/image"  # as seen in the node
    bundle.spec["mounts"].append({"destination": "/signal", "source": "/srv/signal", "type": "bind",
                                  "options": ["rbind", "ro"]})
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}=0")
    bundle.shell("echo preload: $(cat /etc/ld.so.preload); "
                 "probe dlsym alloc 300Mi oom 256Mi && echo before-upgrade-ok; "
                 "while [ ! -e /signal/go ]; do sleep 0.1; done; "
                 "probe dlsym alloc 300Mi oom 256Mi && probe dlsym alloc 200Mi ok 256Mi && echo after-upgrade-ok")
    bundle.write()

    (root / "tmp" / old_deb.name).write_bytes(old_deb.read_bytes())
    (root / "tmp" / deb.name).write_bytes(deb.read_bytes())
    p = in_root(root, f"dpkg -i /tmp/{old_deb.name}")
    assert p.returncode == 0, p.stdout + p.stderr
    interposer = next(root.glob("usr/lib/*/gpuslice/libgpuslice-cuda.so"))
    old_inode = interposer.stat().st_ino

    cid = "upgrade-1"
    output = root / "srv" / "container.out"
    try:
        p = in_node(root, f"gpuslice-runtime create --bundle /srv/bundle {cid} >/srv/container.out 2>&1 </dev/null"
                          f" && gpuslice-runtime start {cid}")
        assert p.returncode == 0, p.stdout + p.stderr + (output.read_text() if output.exists() else "")
        wait_for_text(output, "before-upgrade-ok")
        assert "preload: /run/gpuslice/libgpuslice-cuda.so" in output.read_text()
        assert (root / "run" / "gpuslice" / "containers" / cid).is_dir()

        started = time.monotonic()
        p = in_root(root, f"dpkg -i /tmp/{deb.name}")
        upgrade_s = time.monotonic() - started
        assert p.returncode == 0, p.stdout + p.stderr
        assert in_root(root, "dpkg-query -W -f '${Version}' gpuslice").stdout == deb.name.split("_")[1]
        assert interposer.stat().st_ino != old_inode, "files are replaced by rename, not rewritten in place"
        print(f"upgrade under a running container: {upgrade_s:.2f} s")

        (root / "srv" / "signal" / "go").touch()
        out = wait_for_text(output, "after-upgrade-ok")
        assert out.count(": as expected") == 3, out
        p = in_node(root, f"for i in $(seq 100); do gpuslice-runtime state {cid} | grep -q '\"stopped\"' && break; "
                          f"sleep 0.1; done; gpuslice-runtime delete {cid}")
        assert p.returncode == 0, p.stdout + p.stderr
        assert ocitest.eventually(lambda: not (root / "run" / "gpuslice" / "containers" / cid).exists())
        assert in_node(root, "runc list -q").stdout.split() == []
    finally:
        in_node(root, f"gpuslice-runtime delete --force {cid}")
