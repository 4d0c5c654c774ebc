"""The RPM, built by `packaging/build.sh rpm` (rpmbuild -bb on
packaging/rpm/gpuslice.spec, Debian's rpm) and checked the way a RHEL 9.4
node would take it: files in the RHEL places (/usr/lib64/gpuslice), the
config file %config(noreplace), every Requires provided by a RHEL 9.4 base
package (no glibc newer than 2.34), the scriptlets, rpmlint without errors,
the ELF floors; then `rpm --root --nodeps` installs it into a clean root
(Debian 12's userland standing in for RHEL's), where the scriptlets run,
registering in containerd only when asked, and erasing unregisters.

No RHEL machine is reachable here: what stands in for one is the Requires
check against RHEL 9.4's package contents (REQUIRES_ON_RHEL9) and the
install into a foreign root.

GPUSLICE_PACKAGE_CC / GPUSLICE_PACKAGE_CXX pick the compiler (CI: g++ 11,
RHEL 9's); GPUSLICE_RPM names an .rpm built before (to iterate on these
tests).
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import (REPO, ROOT_ENV, add_containerd_and_a_cdi_spec, built_package, check_packaged_floors, in_root,
                      kubelet_plugin_package)

# What a RHEL 9.4 node provides for each thing the package may require, and
# from where: sonames -> (package, repository). Nothing from EPEL or CRB.
REQUIRES_ON_RHEL9 = {
    "libc.so.6": ("glibc", "BaseOS"),
    "libm.so.6": ("glibc", "BaseOS"),
    "libstdc++.so.6": ("libstdc++", "BaseOS"),
    "libgcc_s.so.1": ("libgcc", "BaseOS"),
    "libyaml-0.so.2": ("libyaml", "AppStream"),
    "ld-linux-x86-64.so.2": ("glibc", "BaseOS"),  # gpuslice-shim's static libstdc++ (__tls_get_addr)
    "/bin/sh": ("bash", "BaseOS"),
}
# RHEL 9.4: glibc 2.34, gcc 11's libstdc++ (GLIBCXX_3.4.29, CXXABI_1.3.13),
# rpm 4.16.
RHEL9_SYMBOL_FLOORS = {"GLIBC": (2, 34), "GLIBCXX": (3, 4, 29), "CXXABI": (1, 3, 13), "GCC": (7, 0)}
RHEL9_RPMLIB = (4, 16, 1)

EXPECTED_FILES = {
    "/usr/bin/gpuslice", "/usr/bin/gpuslice-runtime", "/usr/bin/gpuslice-hook", "/usr/bin/gpuslice-shim",
    "/usr/lib64/gpuslice", "/usr/lib64/gpuslice/libgpuslice-cuda.so",
    "/etc/gpuslice", "/etc/gpuslice/config.toml",
    "/usr/share/containers", "/usr/share/containers/oci", "/usr/share/containers/oci/hooks.d",
    "/usr/share/containers/oci/hooks.d/gpuslice.json", "/usr/share/containers/oci/hooks.d/gpuslice-poststop.json",
    "/usr/share/man/man1/gpuslice.1.gz", "/usr/share/man/man8/gpuslice-runtime.8.gz",
    "/usr/share/man/man8/gpuslice-hook.8.gz", "/usr/share/man/man8/gpuslice-shim.8.gz",
    "/usr/share/selinux/packages/gpuslice.pp",
    "/usr/lib/systemd/system/gpuslice-cdi-generate.service", "/usr/lib/udev/rules.d/71-gpuslice-cdi.rules",
}


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text))


@pytest.fixture(scope="module")
def rpm(tmp_path_factory) -> Path:
    return built_package("rpm", tmp_path_factory)


def query(rpm: Path, *args: str) -> str:
    p = subprocess.run(["rpm", "-qp", *args, str(rpm)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_files_are_in_the_rhel_places(rpm):
    files = set(query(rpm, "-l").split())
    ours = {f for f in files if not f.startswith(("/usr/lib/.build-id", "/usr/share/doc/"))}
    assert ours == EXPECTED_FILES
    assert any(f.endswith("/README.md") for f in files), files
    # noreplace: an admin's edit stays and the new default lands beside it
    flags = query(rpm, "--qf", "[%{FILENAMES} %{FILEFLAGS:fflags}\n]")
    assert "/etc/gpuslice/config.toml cn" in flags, flags
    assert query(rpm, "--configfiles").split() == ["/etc/gpuslice/config.toml"]


def test_every_requirement_is_in_rhel_9_base(rpm):
    problems = []
    for line in query(rpm, "-R").splitlines():
        req = line.strip()
        if m := re.fullmatch(r"rpmlib\((\w+)\) <= ([\d.]+)-\d+", req):
            if version_tuple(m.group(2)) > RHEL9_RPMLIB:
                problems.append(f"{req}: RHEL 9.4 has rpm 4.16")
        elif m := re.fullmatch(r"([^()\s]+)\(\)\(64bit\)", req):
            if m.group(1) not in REQUIRES_ON_RHEL9:
                problems.append(f"{req}: no RHEL 9.4 base package provides it")
        elif m := re.fullmatch(r"([^()\s]+)\(([A-Z]+)_([\d.]+)\)\(64bit\)", req):
            soname, family, ver = m.groups()
            if soname not in REQUIRES_ON_RHEL9:
                problems.append(f"{req}: no RHEL 9.4 base package provides {soname}")
            elif family not in RHEL9_SYMBOL_FLOORS or version_tuple(ver) > RHEL9_SYMBOL_FLOORS[family]:
                problems.append(f"{req}: newer than RHEL 9.4's")
        elif req.startswith(("config(gpuslice)", "rtld(GNU_HASH)")) or req in REQUIRES_ON_RHEL9:
            pass
        else:
            problems.append(f"{req}: unexpected requirement")
    assert problems == [], problems
    assert "libc.so.6(GLIBC_2.34)(64bit)" in query(rpm, "-R")  # the check sees versions at all


def test_the_kubelet_plugin_is_a_subpackage(rpm):
    """gRPC (EPEL on RHEL 9) and libcurl stay out of the node's package."""
    plugin = kubelet_plugin_package(rpm)
    files = {f for f in query(plugin, "-l").split() if not f.startswith(("/usr/lib/.build-id", "/usr/share/doc/"))}
    assert files == {"/usr/bin/gpuslice-kubelet-plugin", "/usr/share/man/man8/gpuslice-kubelet-plugin.8.gz",
                     "/usr/lib/systemd/system/gpuslice-kubelet-plugin.service"}, files
    requires = query(plugin, "-R")
    version = query(rpm, "--qf", "%{VERSION}-%{RELEASE}")
    assert f"gpuslice(x86-64) = {version}" in requires and "libgrpc++" in requires, requires
    assert not any(lib in query(rpm, "-R") for lib in ("grpc", "protobuf", "curl"))
    # never enabled by the package; erase stops and disables it, an upgrade restarts it if it runs
    scripts = query(plugin, "--scripts")
    assert "postinstall scriptlet" not in scripts, scripts
    preun = scripts.split("preuninstall scriptlet")[1].split("postuninstall scriptlet")[0]
    assert '"$1" -eq 0' in preun and "disable --now gpuslice-kubelet-plugin.service" in preun, scripts
    postun = scripts.split("postuninstall scriptlet")[1]
    assert '"$1" -ge 1' in postun and "try-restart gpuslice-kubelet-plugin.service" in postun, scripts


def test_scriptlets_register_only_when_asked_and_unregister_on_erase(rpm):
    scripts = query(rpm, "--scripts")
    post = scripts.split("postinstall scriptlet")[1].split("preuninstall scriptlet")[0]
    assert 'GPUSLICE_CONFIGURE_CONTAINERD:-}" = "1"' in post and "configure containerd" in post, scripts
    assert "systemctl restart" not in post.replace("(systemctl restart containerd)", ""), post
    preun = scripts.split("preuninstall scriptlet")[1]
    assert '"$1" -eq 0' in preun and "configure containerd --remove" in preun, scripts
    # SELinux: the module loaded (and the file contexts applied) on install
    # and upgrade, unloaded on erase only, nothing where SELinux tools are
    # missing (the foreign-root test below runs these without them).
    assert "semodule -X 200 -i /usr/share/selinux/packages/gpuslice.pp" in post, post
    assert "restorecon -RF /usr/lib64/gpuslice" in post and "restorecon -F /usr/bin/gpuslice-runtime" in post, post
    postun = scripts.split("postuninstall scriptlet")[1]
    assert '"$1" -eq 0' in postun and "semodule -X 200 -r gpuslice" in postun, postun
    # container-selinux installed after gpuslice: its types arrive then
    triggers = query(rpm, "--triggers")
    assert "triggerin scriptlet" in triggers and "container-selinux" in triggers, triggers
    assert "semodule -X 200 -i /usr/share/selinux/packages/gpuslice.pp" in triggers, triggers
    assert "container-selinux" in query(rpm, "--qf", "[%{ORDERNAME}\n]")


def test_rpmlint_finds_no_error(rpm):
    p = subprocess.run(["rpmlint", "-r", str(REPO / "packaging" / "rpm" / "gpuslice.rpmlintrc"), str(rpm),
                        str(kubelet_plugin_package(rpm))],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert " E: " not in p.stdout, p.stdout


def test_packaged_files_keep_the_glibc_floors(rpm, tmp_path):
    subprocess.run(f"rpm2cpio '{rpm}' | cpio -idm --quiet", shell=True, cwd=tmp_path, check=True)
    check_packaged_floors(tmp_path, "usr/lib64/gpuslice")


def test_install_register_upgrade_erase_in_a_foreign_root(rpm, debian12):
    root = debian12
    add_containerd_and_a_cdi_spec(root)

    def rpm_in_root(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        # --nodeps: the root's libraries are Debian packages that rpm's database does not know
        return subprocess.run(["rpm", "--root", str(root), "--dbpath", "/var/lib/rpm", *args],
                              env={**ROOT_ENV, **(env or {})}, capture_output=True, text=True, timeout=120)

    assert rpm_in_root("--initdb").returncode == 0
    p = rpm_in_root("--nodeps", "-i", str(rpm), env={"GPUSLICE_CONFIGURE_CONTAINERD": "1"})
    assert p.returncode == 0, p.stdout + p.stderr
    assert "restart containerd" in p.stdout, p.stdout
    for f in EXPECTED_FILES:
        assert (root / f.lstrip("/")).exists(), f
    registered = in_root(root, "cat /etc/containerd/config.toml /etc/containerd/conf.d/*.toml 2>/dev/null").stdout
    assert "BinaryName = '/usr/bin/gpuslice-runtime'" in registered, registered

    p = in_root(root, "gpuslice version && gpuslice cdi list")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "[not found" not in p.stdout, p.stdout
    assert "/usr/lib64/gpuslice/libgpuslice-cuda.so" in p.stdout, p.stdout
    assert "example.com/gpu=0" in p.stdout, p.stdout

    # an admin's edit survives an upgrade (here: the same package again)
    config = root / "etc" / "gpuslice" / "config.toml"
    config.write_text(config.read_text() + "\n# admin was here\n")
    p = rpm_in_root("--nodeps", "-U", "--replacepkgs", str(rpm))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "# admin was here" in config.read_text()
    still = in_root(root, "cat /etc/containerd/config.toml /etc/containerd/conf.d/*.toml 2>/dev/null").stdout
    assert "gpuslice-runtime" in still, "an upgrade must not unregister"

    (root / "run" / "gpuslice" / "containers").mkdir(parents=True)
    p = rpm_in_root("--nodeps", "-e", "gpuslice")
    assert p.returncode == 0, p.stdout + p.stderr
    left = in_root(root, "cat /etc/containerd/config.toml /etc/containerd/conf.d/*.toml 2>/dev/null").stdout
    assert "gpuslice-runtime" not in left, left
    assert sorted(str(q.relative_to(root)) for q in (root / "etc" / "gpuslice").glob("*")) == \
        ["etc/gpuslice/config.toml.rpmsave"]  # rpm keeps the edited config aside
    leftovers = [str(q.relative_to(root)) for pattern in ("usr/bin/gpuslice*", "usr/lib64/gpuslice",
                                                          "usr/share/containers/oci/hooks.d/gpuslice*.json",
                                                          "usr/lib/systemd/system/gpuslice*", "usr/lib/udev/rules.d/*gpuslice*",
                                                          "usr/share/man/man*/gpuslice*", "run/gpuslice")
                 for q in root.glob(pattern)]
    assert leftovers == [], leftovers
