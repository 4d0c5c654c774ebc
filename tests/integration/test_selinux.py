"""SELinux labels of gpuslice's per-container files, through real containers
(docs/selinux.md). This kernel has no SELinux, so nothing enforces the
labels here: what is shown is that gpuslice-runtime writes the right
security.selinux attribute on each file it makes for a container (with
selinux.label = "on"; "auto" would see no SELinux and label nothing), and
that the container still runs. Whether a confined container may then use
them is for an enforcing RHEL node: tests/selinux/rhel-check.sh.

On a kernel without SELinux, runc refuses a config.json with a mountLabel
(it mounts /dev with context=, which tmpfs then rejects) and both runc and
crun refuse a process.selinuxLabel; crun ignores a mountLabel. So the
containers here run on crun with a mountLabel only, and runc is shown to
behave behind gpuslice exactly as it does alone.
"""
from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

import ocitest
from conftest import KIND, built

LABEL_A = "system_u:object_r:container_file_t:s0:c1,c2"
LABEL_B = "system_u:object_r:container_file_t:s0:c3,c4"
SHARED = "system_u:object_r:container_ro_file_t:s0"
PRIVATE_FILES = ("", "run", "run/region.sock")  # "" is the state dir itself; run/ its /run/gpuslice
READ_ONLY_FILES = ("limits", "ld.so.preload", "run/limits")  # container_ro_file_t at the container's categories
ALL_FILES = PRIVATE_FILES + READ_ONLY_FILES


def read_only(label: str) -> str:
    return label.replace(":container_file_t:", ":container_ro_file_t:")


def label_of(path: Path | str, follow: bool = False) -> str | None:
    """Its security.selinux; a link's own unless `follow` (a /proc fd link)."""
    try:
        value = os.getxattr(path, "security.selinux", follow_symlinks=follow)
    except OSError as e:
        if e.errno == errno.ENODATA:
            return None
        raise
    return value.rstrip(b"\0").decode()


def monitor_region_labels() -> list[str | None]:
    """The label of the usage region (a memfd) each running monitor holds
    (gpuslice-shim, or the init recorder before its first interval)."""
    labels = []
    for pid in ocitest.monitors(in_place=True):
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                if os.readlink(fd).startswith("/memfd:gpuslice-region"):
                    labels.append(label_of(str(fd), follow=True))
        except (FileNotFoundError, ProcessLookupError):
            continue
    return labels


@pytest.fixture(scope="module")
def glibc_rootfs(tmp_path_factory) -> Path:
    root = ocitest.build_busybox_rootfs(tmp_path_factory.mktemp("glibc") / "rootfs")
    ocitest.copy_with_libs(built("GPUSLICE_PROBE"), root, "/bin/probe")
    return root


def set_label_mode(test_tmp: Path, mode: str) -> None:
    conf = test_tmp / "gpuslice.toml"  # sharing_runtime's config, read at every call
    conf.write_text(conf.read_text() + f'\n[selinux]\nlabel = "{mode}"\n')


def labelled_bundle(test_tmp, spec_template, rootfs, name: str, mount_label: str | None, device: str = "burst"):
    bundle = ocitest.Bundle(test_tmp / name, spec_template, rootfs)
    bundle.annotate("cdi.k8s.io/fake-dra_claim", f"{KIND}={device}")
    if mount_label is not None:
        bundle.spec.setdefault("linux", {})["mountLabel"] = mount_label
    bundle.shell("/bin/probe dlsym alloc 300Mi oom 256Mi; /bin/probe dlsym alloc 200Mi ok 256Mi")
    bundle.write()
    return bundle


def start_and_wait(rt, bundle, cid: str) -> str:
    pid = int((bundle.path / f"{cid}.pid").read_text())
    rt.start(cid)
    rc = ocitest.wait_pid(pid, 30)
    out = (bundle.path / f"{cid}.out").read_text() + (bundle.path / f"{cid}.err").read_text()
    assert rc == 0, out
    rt.delete(cid)
    return out


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["crun"])
def test_each_containers_files_carry_its_mount_label(sharing_runtime, test_tmp, spec_template, glibc_rootfs):
    rt, state = sharing_runtime
    set_label_mode(test_tmp, "on")
    a = labelled_bundle(test_tmp, spec_template, glibc_rootfs, "a", LABEL_A)
    b = labelled_bundle(test_tmp, spec_template, glibc_rootfs, "b", LABEL_B)
    rt.create(a, "sel-a")
    rt.create(b, "sel-b")
    # each monitor is its create's init recorder, as runc create ends
    assert ocitest.eventually(lambda: all("monitor" in ocitest.state_record(state / "containers" / c)
                                          for c in ("sel-a", "sel-b")))
    for cid, label in (("sel-a", LABEL_A), ("sel-b", LABEL_B)):
        for name in ALL_FILES:
            path = state / "containers" / cid / name
            want = read_only(label) if name in READ_ONLY_FILES else label
            assert label_of(path) == want, f"{path}: {label_of(path)!r}, not {want!r}"
    # Two containers, two category sets: neither's files carry the other's.
    assert label_of(state / "containers/sel-a/limits") != label_of(state / "containers/sel-b/limits")
    # The node's activity table: every container reads it, none writes it.
    assert label_of(state / "activity") == SHARED
    # Each usage region (a memfd, named by no path) carries its container's label.
    assert sorted(filter(None, monitor_region_labels())) == sorted([LABEL_A, LABEL_B])
    # The labels change nothing for the containers themselves: limits hold.
    for bundle, cid in ((a, "sel-a"), (b, "sel-b")):
        out = start_and_wait(rt, bundle, cid)
        assert out.count("as expected") == 2, out
    assert ocitest.eventually(lambda: not (state / "containers" / "sel-a").exists())  # the monitor removes it


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["crun"])
def test_nothing_is_labelled_without_a_mount_label(sharing_runtime, test_tmp, spec_template, glibc_rootfs):
    rt, state = sharing_runtime
    set_label_mode(test_tmp, "on")
    bundle = labelled_bundle(test_tmp, spec_template, glibc_rootfs, "plain", None)
    rt.create(bundle, "sel-none")
    for name in ALL_FILES:
        assert label_of(state / "containers/sel-none" / name) is None, name
    assert label_of(state / "activity") is None
    assert start_and_wait(rt, bundle, "sel-none").count("as expected") == 2


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["crun"])
def test_auto_labels_nothing_where_the_kernel_has_no_selinux(sharing_runtime, test_tmp, spec_template, glibc_rootfs):
    if Path("/sys/fs/selinux/enforce").exists():
        pytest.skip("the kernel has SELinux: auto labels there (tests/selinux/rhel-check.sh)")
    rt, state = sharing_runtime
    set_label_mode(test_tmp, "auto")
    bundle = labelled_bundle(test_tmp, spec_template, glibc_rootfs, "auto", LABEL_A)
    rt.create(bundle, "sel-auto")
    assert label_of(state / "containers/sel-auto/limits") is None
    assert start_and_wait(rt, bundle, "sel-auto").count("as expected") == 2


@pytest.mark.gpuslice
@pytest.mark.parametrize("runtime_name", ["crun"])
def test_a_malformed_mount_label_is_refused_naming_it(sharing_runtime, test_tmp, spec_template, glibc_rootfs):
    rt, state = sharing_runtime
    set_label_mode(test_tmp, "on")
    bundle = labelled_bundle(test_tmp, spec_template, glibc_rootfs, "bad", "system_u:object_r:container_file_t:s0:c1,")
    before = (bundle.path / "config.json").read_bytes()
    p = rt.create(bundle, "sel-bad", check=False)
    assert p.returncode != 0
    assert "linux.mountLabel: SELinux context" in p.stderr, p.stderr
    assert (bundle.path / "config.json").read_bytes() == before
    assert not (state / "containers" / "sel-bad").exists()
    assert "sel-bad" not in rt.list_ids()


@pytest.mark.gpuslice
def test_runc_and_crun_treat_a_mount_label_as_they_do_alone(sharing_runtime, plain_runtime, runtime_name, test_tmp,
                                                            spec_template, glibc_rootfs):
    """gpuslice passes the labels through: whatever the runtime does with a
    mountLabel on this kernel (runc: fails mounting /dev; crun: ignores it),
    it does the same behind gpuslice, and a failure leaves nothing."""
    rt, state = sharing_runtime
    set_label_mode(test_tmp, "on")
    alone = ocitest.Bundle(test_tmp / "alone", spec_template, glibc_rootfs)
    alone.spec.setdefault("linux", {})["mountLabel"] = LABEL_A
    alone.shell("true")
    alone.write()
    plain = plain_runtime.create(alone, "sel-alone", check=False)
    plain_runtime.run("delete", "--force", "sel-alone", check=False)
    bundle = labelled_bundle(test_tmp, spec_template, glibc_rootfs, "wrapped", LABEL_A)
    wrapped = rt.create(bundle, "sel-wrapped", check=False)
    assert (wrapped.returncode == 0) == (plain.returncode == 0), (plain.stderr, wrapped.stderr)
    if wrapped.returncode == 0:
        assert label_of(state / "containers/sel-wrapped/run/region.sock") == LABEL_A
        assert start_and_wait(rt, bundle, "sel-wrapped").count("as expected") == 2
    else:
        assert "context" in wrapped.stderr, wrapped.stderr  # runc's own error, passed on
        # removed by the create's init recorder, as it sees runc fail
        assert ocitest.eventually(lambda: not (state / "containers" / "sel-wrapped").exists())
