"""Helpers shared by the integration tests and bench/start: a busybox rootfs,
OCI bundles, a runc-compatible command line driver, the fake GPU's CDI spec and
the host's cgroup preparation. Standard library only; root required.
"""
from __future__ import annotations

import copy
import ctypes
import json
import os
import selectors
import select
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

BUSYBOX = "/bin/busybox"

# Applets the tests and benchmarks rely on; every other applet busybox knows
# is linked too, these are only checked for.
REQUIRED_APPLETS = ("sh", "ls", "cat", "stat", "test", "mount", "touch", "env", "echo", "grep", "sleep", "true")


# --------------------------------------------------------------------------
# rootfs and bundles


def build_busybox_rootfs(dest: Path) -> Path:
    """A rootfs with Debian's static busybox and a symlink per applet."""
    if not os.access(BUSYBOX, os.X_OK):
        raise RuntimeError(f"{BUSYBOX} missing: apt-get install busybox-static")
    for d in ("bin", "sbin", "usr/bin", "usr/sbin", "usr/local", "dev", "proc", "sys", "tmp", "etc", "root", "run"):
        (dest / d).mkdir(parents=True, exist_ok=True)
    os.chmod(dest / "tmp", 0o1777)
    shutil.copy2(BUSYBOX, dest / "bin" / "busybox")
    applets = subprocess.run([BUSYBOX, "--list"], check=True, capture_output=True, text=True).stdout.split()
    for name in applets:
        if name == "busybox":
            continue
        link = dest / "bin" / name
        if not link.exists():
            link.symlink_to("busybox")
    missing = [a for a in REQUIRED_APPLETS if not (dest / "bin" / a).exists()]
    if missing:
        raise RuntimeError(f"busybox lacks applets {missing}")
    (dest / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    (dest / "etc" / "group").write_text("root:x:0:\n")
    return dest


DEBIAN_MIRRORS = ("http://deb.debian.org/debian", "http://archive.debian.org/debian")


def debian_root(suite: str, cache_dir: Path | None = None, include: tuple[str, ...] = ()) -> Path:
    """A minimal Debian root (debootstrap --variant=minbase SUITE), made once
    and kept in `cache_dir` (GPUSLICE_TEST_CACHE, default
    /var/cache/gpuslice-tests): a real distribution image with its own glibc.
    Never written to afterwards: mount it with `overlay_root`."""
    cache_dir = Path(cache_dir or os.environ.get("GPUSLICE_TEST_CACHE", "/var/cache/gpuslice-tests"))
    root = cache_dir / ("-".join((f"debian-{suite}-minbase",) + include))
    if (root / "etc" / "debian_version").exists():
        return root
    if not shutil.which("debootstrap"):
        raise RuntimeError("debootstrap missing: apt-get install debootstrap")
    cache_dir.mkdir(parents=True, exist_ok=True)
    errors = []
    for mirror in (os.environ.get("GPUSLICE_DEBIAN_MIRROR"),) + DEBIAN_MIRRORS:
        if not mirror:
            continue
        tmp = Path(tempfile.mkdtemp(prefix=f".{suite}-", dir=cache_dir))
        extra = [f"--include={','.join(include)}"] if include else []
        p = subprocess.run(["debootstrap", "--variant=minbase", *extra, suite, str(tmp), mirror],
                           capture_output=True, text=True, timeout=500)
        if p.returncode == 0:
            try:
                tmp.rename(root)  # whole or not at all
            except OSError:
                shutil.rmtree(tmp, ignore_errors=True)  # made by someone else meanwhile
            return root
        shutil.rmtree(tmp, ignore_errors=True)
        errors.append(f"{mirror}: {(p.stdout + p.stderr).strip().splitlines()[-1:]}")
    raise RuntimeError(f"debootstrap {suite} failed: " + "; ".join(errors))


def copy_with_libs(binary: Path, root: Path, dest: str) -> None:
    """Copies a dynamic program and the glibc it needs into the rootfs, at the
    paths the dynamic loader will look for them."""
    target = root / dest.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(binary, target)
    out = subprocess.run(["ldd", str(binary)], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        path = parts[2] if "=>" in parts and len(parts) > 2 else parts[0]
        if path.startswith("/"):
            lib = root / path.lstrip("/")
            lib.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(os.path.realpath(path), lib)



class OverlayRoot:
    """A writable view of a read-only root: overlayfs with the changes in a
    tmpfs (an upper dir on the host's own overlay or tmp would not always be
    accepted). Unmount with close()."""

    def __init__(self, lower: Path, where: Path):
        self.where = where
        self.changes = where / "changes"
        self.path = where / "merged"
        self.changes.mkdir(parents=True)
        self.path.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "gpuslice-test", str(self.changes)], check=True)
        (self.changes / "upper").mkdir()
        (self.changes / "work").mkdir()
        opts = f"lowerdir={lower},upperdir={self.changes}/upper,workdir={self.changes}/work"
        try:
            subprocess.run(["mount", "-t", "overlay", "overlay", "-o", opts, str(self.path)], check=True)
        except subprocess.CalledProcessError:
            subprocess.run(["umount", str(self.changes)], check=False)
            raise

    def close(self) -> None:
        for m in (self.path, self.changes):
            subprocess.run(["umount", "-l", str(m)], check=False)


def runc_spec_template(workdir: Path, runc: str = "runc") -> dict:
    """What `runc spec` writes (root, not rootless), as a dict."""
    workdir.mkdir(parents=True, exist_ok=True)
    cfg = workdir / "config.json"
    if cfg.exists():
        cfg.unlink()
    subprocess.run([runc, "spec", "--bundle", str(workdir)], check=True, capture_output=True)
    spec = json.loads(cfg.read_text())
    cfg.unlink()
    return spec


class Bundle:
    """An OCI bundle directory: config.json over a shared read-only rootfs."""

    def __init__(self, path: Path, template: dict, rootfs: Path):
        self.path = path
        self.config_path = path / "config.json"
        path.mkdir(parents=True, exist_ok=True)
        self.spec = copy.deepcopy(template)
        self.spec["root"] = {"path": str(rootfs), "readonly": True}
        self.spec["process"]["terminal"] = False
        self.spec["process"]["args"] = ["true"]
        self.spec["hostname"] = "gpuslice-test"

    @property
    def args(self) -> list[str]:
        return self.spec["process"]["args"]

    @args.setter
    def args(self, value: list[str]) -> None:
        self.spec["process"]["args"] = list(value)

    def shell(self, script: str) -> None:
        self.args = ["sh", "-c", script]

    def annotate(self, key: str, value: str) -> None:
        self.spec.setdefault("annotations", {})[key] = value

    def write(self) -> bytes:
        data = (json.dumps(self.spec, indent=2) + "\n").encode()
        self.config_path.write_bytes(data)
        return data

    def read(self) -> dict:
        return json.loads(self.config_path.read_text())


def eventually(cond, timeout: float = 10.0) -> bool:
    """Whether cond() becomes true within `timeout` seconds (polled)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


# --------------------------------------------------------------------------
# waiting for a container's init without a `wait` verb

PR_SET_CHILD_SUBREAPER = 36
_subreaper = False


def state_record(container_dir: Path) -> dict:
    """A container's record in its state dir (state/record.hpp), {} when it
    has none (yet, or any more)."""
    try:
        return json.loads((container_dir / "state.json").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def process_text(record: dict, key: str) -> str | None:
    """A process of the record as "PID STARTTIME", None when absent."""
    p = record.get(key)
    return f"{p['pid']} {p['start_time']}" if p else None


def write_state_record(container_dir: Path, record: dict) -> None:
    """Replaces the record as the state library does (a rename)."""
    tmp = container_dir / ".state.json.test"
    tmp.write_text(json.dumps(record))
    os.replace(tmp, container_dir / "state.json")


def become_subreaper() -> None:
    """Make this process the reaper of orphans: a container's init, forked by
    `runtime create` which then exits, becomes our child and we can waitpid()
    it for its exit status."""
    global _subreaper
    if _subreaper:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    _subreaper = True


def monitors(in_place: bool = False) -> dict[int, list[str]]:
    """The running gpuslice-shim processes (the containers' monitors): pid ->
    argv. Found by executable, not by name: anyone can call a process that.
    With `in_place`, also the monitors that are still a create's init
    recorder (gpuslice-runtime, named gpuslice-shim, with the create's
    command line), before their first interval."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            program = os.path.basename(os.readlink(proc / "exe"))
            if program == "gpuslice-shim" or (in_place and program == "gpuslice-runtime" and
                                              (proc / "comm").read_text() == "gpuslice-shim\n"):
                found[int(proc.name)] = [a.decode() for a in (proc / "cmdline").read_bytes().split(b"\0") if a]
        except OSError:
            continue  # gone meanwhile, or a kernel thread
    return found


def watched_pids(pid: int) -> list[int]:
    """The processes `pid` holds a pidfd on (its fdinfo's Pid: lines)."""
    found = []
    for fd in (Path(f"/proc/{pid}") / "fd").iterdir():
        try:
            if os.readlink(fd) != "anon_inode:[pidfd]":
                continue
            for line in (Path(f"/proc/{pid}/fdinfo") / fd.name).read_text().splitlines():
                if line.startswith("Pid:"):
                    found.append(int(line.split()[1]))
        except OSError:
            continue  # closed meanwhile
    return found


def run_process(argv: list[str], timeout: float, *, env: dict | None = None, stdout=None, stderr=None,
                capture_output: bool = False, text: bool = False) -> subprocess.CompletedProcess:
    """subprocess.run, stdin from /dev/null, that learns of the exit from a
    pidfd. subprocess.run with a timeout polls for the exit in sleeps that
    double up to 50 ms: a runc create done in 64 ms was seen at 63.5 ms or
    at 113.5, which made runc look bimodal and turned a 4 ms overhead into
    50 in bench/start."""
    if capture_output:
        stdout = stderr = subprocess.PIPE
    deadline = time.monotonic() + timeout
    with subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr) as p:
        pidfd = os.pidfd_open(p.pid)
        try:
            output = {f: bytearray() for f in (p.stdout, p.stderr) if f is not None}
            with selectors.DefaultSelector() as sel:
                for f in output:
                    sel.register(f, selectors.EVENT_READ)
                sel.register(pidfd, selectors.EVENT_READ)
                # Like subprocess.run: done when the process has exited and
                # every pipe is at its end (a descendant may hold one on).
                while len(sel.get_map()) > 0:
                    left = deadline - time.monotonic()
                    events = sel.select(left) if left > 0 else []
                    if not events:
                        p.kill()
                        p.wait()
                        raise subprocess.TimeoutExpired(argv, timeout)
                    for key, _ in events:
                        if key.fileobj == pidfd:
                            sel.unregister(pidfd)
                            continue
                        chunk = os.read(key.fd, 65536)
                        if chunk:
                            output[key.fileobj] += chunk
                        else:
                            sel.unregister(key.fileobj)
        finally:
            os.close(pidfd)
        p.wait()  # it has exited: no polling
    out, err = (bytes(output[f]) if f is not None else None for f in (p.stdout, p.stderr))
    if text:
        out, err = (x.decode(errors="replace") if x is not None else None for x in (out, err))
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def wait_pid(pid: int, timeout: float) -> int:
    """Exit status (as a shell would print it) of `pid`, a child of ours."""
    fd = os.pidfd_open(pid)
    try:
        p = select.poll()
        p.register(fd, select.POLLIN)
        if not p.poll(timeout * 1000):
            raise TimeoutError(f"process {pid} still running after {timeout}s")
    finally:
        os.close(fd)
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return -1  # not our child (not a subreaper): exit status unknown
    return os.waitstatus_to_exitcode(status) if not os.WIFSIGNALED(status) else 128 + os.WTERMSIG(status)


# --------------------------------------------------------------------------
# a runc-compatible command line


class CommandFailed(Exception):
    def __init__(self, argv, rc, stderr):
        super().__init__(f"{' '.join(map(str, argv))} exited {rc}: {stderr.strip()}")
        self.argv, self.rc, self.stderr = argv, rc, stderr


class Runtime:
    """Drives a runc-compatible binary (`runc`, `crun`, or a wrapper in front of
    one) with its own --root so nothing touches the system's state."""

    def __init__(self, name: str, argv: list[str], root: Path, env: dict | None = None, lowlevel: "Runtime | None" = None):
        self.name = name
        self.argv = list(argv)
        self.root = root
        self.env = dict(os.environ if env is None else env)
        # The runtime that really holds the state (for list/cleanup): itself
        # unless this is a wrapper.
        self.lowlevel = lowlevel or self
        root.mkdir(parents=True, exist_ok=True)

    def cmd(self, *args: str) -> list[str]:
        return [*self.argv, "--root", str(self.root), *args]

    def run(self, *args: str, check: bool = True, timeout: float = 60, stdout=None, stderr=None) -> subprocess.CompletedProcess:
        argv = self.cmd(*args)
        cap = stdout is None and stderr is None
        p = run_process(argv, timeout, env=self.env, capture_output=cap, stdout=stdout, stderr=stderr, text=True)
        if check and p.returncode != 0:
            raise CommandFailed(argv, p.returncode, p.stderr or "")
        return p

    # The lifecycle. `create` leaves the container's stdio on files: with a
    # pipe, the container would hold it open and the call would not return.
    def create(self, bundle: Bundle, cid: str, out: Path | None = None, check: bool = True,
               pid_file: Path | None = None) -> subprocess.CompletedProcess:
        out = out or bundle.path / f"{cid}.out"
        err = out.with_suffix(".err")
        pid_file = pid_file or bundle.path / f"{cid}.pid"
        with open(out, "wb") as o, open(err, "w+") as e:
            argv = self.cmd("create", "--bundle", str(bundle.path), "--pid-file", str(pid_file), cid)
            p = run_process(argv, 60, env=self.env, stdout=o, stderr=e)
            e.seek(0)
            p.stderr = e.read()
        if check and p.returncode != 0:
            raise CommandFailed(argv, p.returncode, p.stderr)
        return p

    def start(self, cid: str) -> None:
        self.run("start", cid)

    def state(self, cid: str) -> dict:
        return json.loads(self.run("state", cid).stdout)

    def delete(self, cid: str, force: bool = False) -> None:
        self.run("delete", *(["--force"] if force else []), cid)

    def list_ids(self) -> list[str]:
        """Containers in this root, from the low-level runtime's point of view.
        runc lists the root's entries, then stats each: a container deleted
        in between (by gpuslice's init recorder, say, while a test waits for
        that) fails the whole list, and it is asked again."""
        for attempt in range(20):
            try:
                p = self.lowlevel.run("list", "--format", "json")
                break
            except CommandFailed as e:
                if "no such file or directory" not in e.stderr or attempt == 19:
                    raise
        data = json.loads(p.stdout or "null") or []
        return sorted(c["id"] for c in data)

    def cleanup(self) -> list[str]:
        """Force-delete whatever is left in the root; returns what was left."""
        left = []
        if not self.root.exists():
            return left
        for entry in sorted(self.root.iterdir()):
            if entry.is_dir():
                left.append(entry.name)
                self.lowlevel.run("delete", "--force", entry.name, check=False)
        return left

    def run_container(self, bundle: Bundle, cid: str, timeout: float = 30) -> tuple[int, str, str]:
        """create, start, wait, delete: (exit status, stdout, stderr)."""
        bundle.write()
        out = bundle.path / f"{cid}.out"
        self.create(bundle, cid, out=out)
        pid = int((bundle.path / f"{cid}.pid").read_text())
        try:
            self.start(cid)
            rc = wait_pid(pid, timeout)
        except BaseException:
            self.run("delete", "--force", cid, check=False)
            raise
        self.delete(cid)
        return rc, out.read_text(), out.with_suffix(".err").read_text()


# --------------------------------------------------------------------------
# cgroups


def cgroup_mode() -> str:
    t = subprocess.run(["stat", "-fc", "%T", "/sys/fs/cgroup"], capture_output=True, text=True).stdout.strip()
    if t == "cgroup2fs":
        return "unified"
    if os.path.isfile("/sys/fs/cgroup/unified/cgroup.procs"):
        return "hybrid"
    return "legacy"


def _mounted_v1_controllers() -> set[str]:
    names = set()
    for line in Path("/proc/self/mounts").read_text().splitlines():
        f = line.split()
        if f[2] == "cgroup":
            names.update(o for o in f[3].split(",") if o not in ("rw", "ro", "relatime", "nosuid", "nodev", "noexec"))
    return names


def prepare_cgroups_for_crun() -> list[str]:
    """crun refuses a hybrid host whose cgroup2 hierarchy has controllers
    ("cgroups in hybrid mode not supported, drop all controllers from
    cgroupv2"); this machine and CI leave hugetlb there. Bind each such
    controller to a v1 hierarchy mounted at /sys/fs/cgroup/<name>, as a
    systemd hybrid host does, and mount any v1 hierarchy this process is in
    that is mounted nowhere (containerd's shim needs to find it). Left in
    place: the kernel keeps a v1 hierarchy alive after an unmount anyway.
    Returns the controllers mounted."""
    if cgroup_mode() != "hybrid":
        return []
    wanted = Path("/sys/fs/cgroup/unified/cgroup.controllers").read_text().split()
    mounted = _mounted_v1_controllers()
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, ctrls, _ = line.split(":", 2)
        for c in ctrls.split(","):
            if c and not c.startswith("name=") and c not in mounted and c not in wanted:
                wanted.append(c)
    made = []
    for name in wanted:
        target = Path("/sys/fs/cgroup") / name
        if name in _mounted_v1_controllers():  # another test run got there first
            continue
        target.mkdir(exist_ok=True)
        p = subprocess.run(["mount", "-t", "cgroup", "-o", name, "cgroup", str(target)], capture_output=True, text=True)
        if p.returncode != 0 and name not in _mounted_v1_controllers():
            raise RuntimeError(f"cannot mount cgroup v1 {name} at {target}: {p.stderr.strip()}")
        made.append(name)
    left = Path("/sys/fs/cgroup/unified/cgroup.controllers").read_text().split()
    if left:
        raise RuntimeError(f"cgroup2 still has controllers {left} after binding them to v1")
    return made


# --------------------------------------------------------------------------
# the fake GPU

NVIDIA_MAJOR = 195
HOOK_SCRIPT = """#!/bin/sh
# CDI createContainer hook of the fake GPU: records the state it was given
# and the environment it ran with, on the host.
set -eu
state=$(cat)
id=$(printf '%s' "$state" | sed -n 's/.*"id" *: *"\\([^"]*\\)".*/\\1/p')
printf '%s\\n' "$state" > "$1/$id.state.json"
env | sort > "$1/$id.env"
echo ran >> "$1/$id.runs"
"""


class FakeGpu:
    """Device nodes made with mknod and a CDI spec describing them.

    Spec (cdiVersion 0.6.0, kind nvidia.com/gpu):
      spec-level edits: /dev/nvidiactl (c 195:255), env GPUSLICE_FAKE_DRIVER=1,
        a read-only bind mount of a host dir at /usr/local/gpuslice-fake,
        a createContainer hook writing markers into `markers`;
      device "0": /dev/nvidia0 (c 195:0, mode 0660), env GPUSLICE_FAKE_GPU0=present;
      device "1": /dev/nvidia1 (c 195:1, mode 0660), env GPUSLICE_FAKE_GPU1=present.
    """

    KIND = "nvidia.com/gpu"
    MOUNT_DEST = "/usr/local/gpuslice-fake"
    MOUNT_FILE = "driver-version"
    MOUNT_CONTENT = "fake-driver 1.0"
    NODE_MODE = 0o660

    def __init__(self, base: Path, with_hook: bool = True):
        self.base = base
        self.with_hook = with_hook
        self.dev_dir = base / "dev"
        self.spec_dir = base / "cdi"
        self.host_dir = base / "driver"
        self.markers = base / "markers"
        self.hook = base / "hook.sh"
        for d in (self.dev_dir, self.spec_dir, self.host_dir, self.markers):
            d.mkdir(parents=True, exist_ok=True)
        self.nodes = {  # container path -> (host node, minor)
            "/dev/nvidiactl": (self.dev_dir / "nvidiactl", 255),
            "/dev/nvidia0": (self.dev_dir / "nvidia0", 0),
            "/dev/nvidia1": (self.dev_dir / "nvidia1", 1),
        }
        for host, minor in self.nodes.values():
            if not host.exists():
                os.mknod(host, stat.S_IFCHR | 0o666, os.makedev(NVIDIA_MAJOR, minor))
        (self.host_dir / self.MOUNT_FILE).write_text(self.MOUNT_CONTENT + "\n")
        self.hook.write_text(HOOK_SCRIPT)
        self.hook.chmod(0o755)
        self.spec_file = self.spec_dir / "fake-gpu.json"
        self.spec_file.write_text(json.dumps(self.cdi_spec(), indent=2) + "\n")

    def node(self, path: str) -> dict:
        host, minor = self.nodes[path]
        return {"path": path, "hostPath": str(host), "type": "c", "major": NVIDIA_MAJOR, "minor": minor,
                "fileMode": self.NODE_MODE, "permissions": "rw", "uid": 0, "gid": 0}

    def hook_entry(self) -> dict:
        return {"hookName": "createContainer", "path": str(self.hook), "args": ["fake-gpu-hook", str(self.markers)],
                "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "GPUSLICE_FAKE_HOOK=1"], "timeout": 10}

    def cdi_spec(self) -> dict:
        common = {
            "env": ["GPUSLICE_FAKE_DRIVER=1"],
            "deviceNodes": [self.node("/dev/nvidiactl")],
            "mounts": [{"hostPath": str(self.host_dir), "containerPath": self.MOUNT_DEST,
                        "type": "bind", "options": ["ro", "nosuid", "nodev", "bind"]}],
        }
        if self.with_hook:
            common["hooks"] = [self.hook_entry()]
        return {
            "cdiVersion": "0.6.0",
            "kind": self.KIND,
            "containerEdits": common,
            "devices": [
                {"name": str(i), "containerEdits": {
                    "env": [f"GPUSLICE_FAKE_GPU{i}=present"],
                    "deviceNodes": [self.node(f"/dev/nvidia{i}")]}}
                for i in (0, 1)
            ],
        }

    def qualified(self, *names: str) -> str:
        return ",".join(f"{self.KIND}={n}" for n in names)

    def apply_by_hand(self, spec: dict, devices=("0",)) -> dict:
        """What a CDI injection of `devices` must produce, written directly:
        the reference against which gpuslice-runtime is checked."""
        edits = [self.cdi_spec()["containerEdits"]]
        by_name = {d["name"]: d["containerEdits"] for d in self.cdi_spec()["devices"]}
        edits += [by_name[d] for d in devices]
        proc = spec["process"]
        linux = spec.setdefault("linux", {})
        for e in edits:
            for kv in e.get("env", []):
                key = kv.split("=", 1)[0] + "="
                proc["env"] = [x for x in proc.get("env", []) if not x.startswith(key)] + [kv]
            for n in e.get("deviceNodes", []):
                dev = {k: n[k] for k in ("path", "type", "major", "minor", "fileMode", "uid", "gid")}
                linux["devices"] = [d for d in linux.get("devices", []) if d["path"] != n["path"]] + [dev]
                linux.setdefault("resources", {}).setdefault("devices", []).append(
                    {"allow": True, "type": n["type"], "major": n["major"], "minor": n["minor"], "access": n["permissions"]})
            for m in e.get("mounts", []):
                spec["mounts"] = [x for x in spec["mounts"] if x["destination"] != m["containerPath"]]
                spec["mounts"].append({"destination": m["containerPath"], "type": m.get("type", "bind"),
                                       "source": m["hostPath"], "options": m.get("options", [])})
            for h in e.get("hooks", []):
                entry = {k: h[k] for k in ("path", "args", "env", "timeout") if k in h}
                spec.setdefault("hooks", {}).setdefault(h["hookName"], []).append(entry)
        spec["mounts"].sort(key=lambda m: os.path.normpath(m["destination"]).count("/"))
        return spec


# A probe run inside the container: one `key=value` line per fact the tests
# assert. busybox `stat -c %t/%T` print major/minor in hex.
PROBE = r"""
for d in /dev/nvidiactl /dev/nvidia0 /dev/nvidia1; do
  if [ -e "$d" ]; then
    echo "node:$d=$(stat -c '%F %t %T %a %u %g' "$d")"
    msg=$( (: < "$d") 2>&1 ) && echo "open:$d=ok" || echo "open:$d=$msg"
  else
    echo "node:$d=absent"
  fi
done
echo "env:GPUSLICE_FAKE_DRIVER=${GPUSLICE_FAKE_DRIVER-unset}"
echo "env:GPUSLICE_FAKE_GPU0=${GPUSLICE_FAKE_GPU0-unset}"
echo "env:GPUSLICE_FAKE_GPU1=${GPUSLICE_FAKE_GPU1-unset}"
echo "mount:content=$(cat /usr/local/gpuslice-fake/driver-version 2>&1)"
echo "mount:opts=$(grep ' /usr/local/gpuslice-fake ' /proc/mounts | cut -d' ' -f4)"
msg=$( (touch /usr/local/gpuslice-fake/written) 2>&1 ) && echo "mount:write=ok" || echo "mount:write=$msg"
echo "done=1"
"""


def parse_probe(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
    return out
