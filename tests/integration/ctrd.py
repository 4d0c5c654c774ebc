"""A private containerd for tests and a busybox image written locally as an
OCI image layout (no network). Everything lives under one directory: root,
state, sockets, config, runc's state, the FIFOs of ctr's stdio.

Three releases: Debian 12's containerd 1.6 (installed), and the binaries of
Debian 13's 1.7 and Debian unstable's 2.x, downloaded once from Debian's
archive with a private apt state (the system's apt is not touched) and
cached beside the debootstrap roots (`release_bin_dir`).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import tempfile
import tarfile
import tempfile
import time
from pathlib import Path

NAMESPACE = "gpuslice-test"
IMAGE = "localhost/gpuslice-test/busybox:latest"
# Where `Containerd.run` binds the directory the container writes its output to.
CTR_OUT = "/gpuslice-test-out"

# Plugins that cannot run here or are not needed: the CRI plugin (the tests
# drive containerd through ctr; `cri_config` turns it on), snapshotters other
# than overlayfs/native, the /opt plugin (it would create /opt/containerd),
# tracing. containerd 2 split the CRI plugin in three.
CRI_PLUGINS = {2: ["io.containerd.grpc.v1.cri"],
               3: ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime", "io.containerd.cri.v1.images",
                   "io.containerd.podsandbox.controller.v1.podsandbox"]}
DISABLED_PLUGINS = [
    "io.containerd.snapshotter.v1.aufs",
    "io.containerd.snapshotter.v1.btrfs",
    "io.containerd.snapshotter.v1.zfs",
    "io.containerd.snapshotter.v1.devmapper",
    "io.containerd.snapshotter.v1.erofs",
    "io.containerd.internal.v1.opt",
    "io.containerd.tracing.processor.v1.otlp",
    "io.containerd.internal.v1.tracing",
]


def _goarch() -> str:
    m = platform.machine()
    return {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x"}.get(m, m)


# --------------------------------------------------------------------------
# containerd releases

# label -> Debian suite whose containerd package it is (None: the system's)
RELEASES = {"1.6": None, "1.7": "trixie", "2": "sid"}


def release_bin_dir(label: str, cache_dir: Path | None = None) -> Path:
    """The directory of containerd, ctr and containerd-shim-runc-v2 of
    release `label` (RELEASES). The system's for 1.6; otherwise the Debian
    package of the suite, fetched once into `cache_dir` (GPUSLICE_TEST_CACHE,
    default /var/cache/gpuslice-tests) and unpacked there."""
    suite = RELEASES[label]
    if suite is None:
        found = shutil.which("containerd", path=os.environ.get("PATH", "") + ":/usr/bin:/usr/sbin")
        if not found:
            raise RuntimeError("containerd missing: apt-get install containerd")
        return Path(found).parent
    cache_dir = Path(cache_dir or os.environ.get("GPUSLICE_TEST_CACHE", "/var/cache/gpuslice-tests"))
    dest = cache_dir / f"containerd-{suite}"
    if (dest / "usr" / "bin" / "containerd").exists():
        return dest / "usr" / "bin"
    cache_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".containerd-{suite}-", dir=cache_dir))
    try:
        (work / "lists" / "partial").mkdir(parents=True)
        (work / "archives" / "partial").mkdir(parents=True)
        mirror = os.environ.get("GPUSLICE_DEBIAN_MIRROR") or "http://deb.debian.org/debian"
        (work / "sources.list").write_text(f"deb {mirror} {suite} main\n")
        apt = ["-o", f"Dir::Etc::SourceList={work / 'sources.list'}", "-o", "Dir::Etc::SourceParts=/dev/null",
               "-o", f"Dir::State::Lists={work / 'lists'}", "-o", f"Dir::Cache::Archives={work / 'archives'}",
               "-o", "Debug::NoLocking=1", "-o", "APT::Sandbox::User=root"]
        for argv in (["apt-get", "-q", *apt, "update"], ["apt-get", "-q", *apt, "download", "containerd"]):
            p = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=300)
            if p.returncode != 0:
                raise RuntimeError(f"{' '.join(argv[:2])} ... {argv[-1]} for {suite} failed: {p.stdout}{p.stderr}")
        debs = list(work.glob("containerd_*.deb"))
        if len(debs) != 1:
            raise RuntimeError(f"apt-get download containerd ({suite}) gave {debs}")
        subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(work / "root")], check=True)
        (work / "root" / "VERSION").write_text(debs[0].name + "\n")
        try:
            (work / "root").rename(dest)  # whole or not at all
        except OSError:
            pass  # made by someone else meanwhile
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return dest / "usr" / "bin"


def release_version(bin_dir: Path) -> tuple[int, int]:
    out = subprocess.run([str(bin_dir / "containerd"), "--version"], capture_output=True, text=True,
                         check=True).stdout
    # "containerd github.com/containerd/containerd/v2 2.1.9~ds1 ..." or "containerd containerd.io 1.6.20 ..."
    for word in out.split():
        parts = word.lstrip("v").split(".")
        if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
            return int(parts[0]), int(parts[1])
    raise RuntimeError(f"no version in {out!r}")


# --------------------------------------------------------------------------
# OCI image layout


def _blob(blobs: dict[str, bytes], data: bytes, media_type: str) -> dict:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return {"mediaType": media_type, "digest": digest, "size": len(data)}


def _layer_tar(rootfs: Path) -> bytes:
    """An uncompressed layer of `rootfs`, sorted, owned by root, mtime 0."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for dirpath, dirnames, filenames in os.walk(rootfs):
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, rootfs)
            for name in sorted(dirnames + filenames):
                full = os.path.join(dirpath, name)
                arc = os.path.normpath(os.path.join(rel_dir, name))
                ti = tar.gettarinfo(full, arcname=arc)
                ti.uid = ti.gid = 0
                ti.uname = ti.gname = "root"
                ti.mtime = 0
                if ti.isfile():
                    with open(full, "rb") as f:
                        tar.addfile(ti, f)
                else:
                    tar.addfile(ti)
    return buf.getvalue()


def write_oci_archive(rootfs: Path, dest: Path, name: str = IMAGE, cmd: list[str] | None = None) -> Path:
    """An OCI image layout (oci-layout, index.json, blobs/sha256/...) of a
    one-layer image of `rootfs`, as a tar stream `ctr images import` reads;
    `cmd` is the image's default command (`sh`)."""
    blobs: dict[str, bytes] = {}
    layer = _layer_tar(rootfs)
    layer_desc = _blob(blobs, layer, "application/vnd.oci.image.layer.v1.tar")
    config = {
        "architecture": _goarch(),
        "os": "linux",
        "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                   "Cmd": cmd or ["sh"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [layer_desc["digest"]]},
        "history": [{"created_by": "gpuslice tests: busybox-static rootfs"}],
    }
    config_desc = _blob(blobs, json.dumps(config, sort_keys=True).encode(), "application/vnd.oci.image.config.v1+json")
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": config_desc, "layers": [layer_desc]}
    manifest_desc = _blob(blobs, json.dumps(manifest, sort_keys=True).encode(), "application/vnd.oci.image.manifest.v1+json")
    manifest_desc["platform"] = {"architecture": _goarch(), "os": "linux"}
    manifest_desc["annotations"] = {"io.containerd.image.name": name,
                                    "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1]}
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [manifest_desc]}

    def add(tar: tarfile.TarFile, arc: str, data: bytes) -> None:
        ti = tarfile.TarInfo(arc)
        ti.size, ti.mode, ti.mtime = len(data), 0o644, 0
        tar.addfile(ti, io.BytesIO(data))

    with tarfile.open(dest, "w") as tar:
        add(tar, "oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode())
        add(tar, "index.json", json.dumps(index).encode())
        for digest, data in blobs.items():
            add(tar, "blobs/sha256/" + digest.split(":", 1)[1], data)
    return dest


# --------------------------------------------------------------------------
# containerd


class Containerd:
    """A private containerd: `containerd` and `ctr` of one release (its
    shim is taken from the same directory). With `cri_config` (TOML for the
    CRI plugin's tables, appended; its layout is the config version's, see
    `config_version`), the CRI plugin is on and the image namespace is
    kubelet's (k8s.io)."""

    def __init__(self, base: Path, containerd: str, ctr: str, env: dict | None = None, cri_config: str = ""):
        self.base = base
        self.bin = containerd
        self.ctr_bin = ctr
        self.version = release_version(Path(containerd).parent)
        self.socket = base / "containerd.sock"
        self.config = base / "config.toml"
        self.runc_root = base / "runc"
        self.fifo_dir = base / "fifo"
        self.log = base / "containerd.log"
        self.env = dict(os.environ if env is None else env)
        # containerd finds its shim on PATH: this release's first
        self.env["PATH"] = f"{Path(containerd).parent}:{self.env.get('PATH', '/usr/bin:/bin')}"
        self.cri_config = cri_config
        self.proc: subprocess.Popen | None = None

    @property
    def namespace(self) -> str:
        return "k8s.io" if self.cri_config else NAMESPACE

    @property
    def config_version(self) -> int:
        """2 for containerd 1.x, 3 for 2.x (the CRI plugin split in three)."""
        return 3 if self.version >= (2, 0) else 2

    def write_config(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True)
        q = json.dumps  # a TOML basic string is a JSON string for these paths
        disabled = DISABLED_PLUGINS + ([] if self.cri_config else CRI_PLUGINS[self.config_version])
        self.config.write_text("\n".join([
            f"version = {self.config_version}",
            f"root = {q(str(self.base / 'root'))}",
            f"state = {q(str(self.base / 'state'))}",
            f"disabled_plugins = {json.dumps(disabled)}",
            "",
            "[grpc]",
            f"  address = {q(str(self.socket))}",
            "[ttrpc]",
            f"  address = {q(str(self.socket) + '.ttrpc')}",
            "[debug]",
            f"  address = {q(str(self.base / 'debug.sock'))}",
            '  level = "info"',
            "[metrics]",
            '  address = ""',
            "",
            self.cri_config,
        ]))

    def start(self, timeout: float = 30, write: bool = True) -> None:
        """Starts containerd (writing its config first unless `write` is
        False: the caller wrote it and changed it)."""
        if write:
            self.write_config()
        for d in (self.runc_root, self.fifo_dir):
            d.mkdir(parents=True, exist_ok=True)
        logf = open(self.log, "ab")
        self.proc = subprocess.Popen([self.bin, "--config", str(self.config)], stdin=subprocess.DEVNULL,
                                     stdout=logf, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        logf.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"containerd exited {self.proc.returncode}: {self.log_tail()}")
            if self.socket.exists():
                try:
                    with socket.socket(socket.AF_UNIX) as s:
                        s.connect(str(self.socket))
                    if self.ctr("version", check=False).returncode == 0:
                        return
                except OSError:
                    pass
            time.sleep(0.05)
        raise RuntimeError(f"containerd socket {self.socket} not ready after {timeout}s: {self.log_tail()}")

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def ctr(self, *args: str, check: bool = True, timeout: float = 60, env: dict | None = None) -> subprocess.CompletedProcess:
        argv = [self.ctr_bin, "--address", str(self.socket), "--namespace", self.namespace, *args]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                           env=env or self.env)
        if check and p.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {p.returncode}: {p.stderr.strip()}\n"
                               f"containerd log:\n{self.log_tail(2000)}")
        return p

    def import_busybox(self, rootfs: Path, name: str = IMAGE, cmd: list[str] | None = None) -> str:
        archive = write_oci_archive(rootfs, self.base / (name.replace("/", "_") + ".tar"), name, cmd)
        self.ctr("images", "import", str(archive))
        names = self.ctr("images", "list", "--quiet").stdout.split()
        if name not in names:
            raise RuntimeError(f"{name} not imported; images: {names}")
        return name

    def run(self, cid: str, args: list[str], runc_binary: str | None = None, annotations: dict | None = None,
            extra: list[str] = (), check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        """`ctr run --rm` of the busybox image with the runc v2 shim, runc's
        state in our dir; `runc_binary` replaces runc (a runc-compatible
        wrapper such as gpuslice-runtime). The container's stdout and stderr
        are those of the call: written to files in a directory bound into
        the container, not read through ctr, which loses the output of a
        task that exits at once now and then (seen with containerd 2)."""
        out = Path(tempfile.mkdtemp(dir=self.base, prefix="ctr-out-"))
        opts = ["run", "--rm", "--runtime", "io.containerd.runc.v2", "--runc-root", str(self.runc_root),
                "--fifo-dir", str(self.fifo_dir), "--mount", f"type=bind,src={out},dst={CTR_OUT},options=rbind:rw"]
        if runc_binary:
            opts += ["--runc-binary", runc_binary]
        for k, v in (annotations or {}).items():
            opts += ["--annotation", f"{k}={v}"]
        wrapped = ["sh", "-c", f'"$@" >{CTR_OUT}/stdout 2>{CTR_OUT}/stderr', "sh", *args]
        try:
            p = self.ctr(*opts, *extra, IMAGE, cid, *wrapped, check=check, timeout=timeout)
            p.stdout = (out / "stdout").read_text() if (out / "stdout").exists() else ""
            p.stderr = p.stderr + ((out / "stderr").read_text() if (out / "stderr").exists() else "")
            return p
        finally:
            shutil.rmtree(out, ignore_errors=True)

    def cleanup_containers(self) -> None:
        for line in self.ctr("tasks", "list", "--quiet", check=False).stdout.split():
            self.ctr("tasks", "kill", "--signal", "SIGKILL", line, check=False)
            for _ in range(100):
                if self.ctr("tasks", "delete", line, check=False).returncode == 0:
                    break
                time.sleep(0.05)
        for line in self.ctr("containers", "list", "--quiet", check=False).stdout.split():
            self.ctr("containers", "delete", line, check=False)

    def stop(self) -> None:
        if not self.proc:
            return
        if self.proc.poll() is None:
            try:
                self.cleanup_containers()
            finally:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        # overlay snapshots are unmounted with their tasks; anything still
        # mounted under our dir is ours
        mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()
                  if line.split()[1].startswith(str(self.base) + "/")]
        for m in sorted(mounts, key=len, reverse=True):
            subprocess.run(["umount", "-l", m], capture_output=True)
        self.proc = None
