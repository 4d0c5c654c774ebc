"""gpuslice driven the way kubelet drives it: a private containerd with the
CRI plugin on — 1.6 (Debian 12), 1.7 (Debian 13) and 2.x (Debian unstable),
the last two with their own CDI (enable_cdi) off and on — registered with
`gpuslice configure containerd`, and CRI v1 calls over gRPC (pods, containers with DRA-style and device-plugin-style CDI
annotations, ExecSync, UpdateContainerResources, teardown). Host-network pods
need no CNI; the fake GPU is the one of ocitest.FakeGpu plus a slice with a
memory limit.

The pod-annotation attack of issue 7: a pod's own metadata annotations are
written by its author; a handler that passed them (`pod_annotations`, as
gpuslice before 0.2 wrote) handed any pod any CDI device. The handler
`configure` writes passes container annotations only; the handler `podann`,
written by hand with pod_annotations, shows the test can tell.
"""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

import ocitest
from conftest import gpuslice_hook_path, gpuslice_path, tool, write_gpuslice_config

PAUSE_IMAGE = "localhost/gpuslice-test/pause:latest"
BUSYBOX = "localhost/gpuslice-test/busybox:latest"
DRA_KEY = "cdi.k8s.io/gpu.example.com_claim-7f3c9a"        # DRA: <driver>_<claim uid>
PLUGIN_KEY = "cdi.k8s.io/nvidia-device-plugin_GPU-0f3e"  # device plugin: <plugin>_<device id>
SLICE_KIND = "gpuslice.test/slice"

pytestmark = [pytest.mark.gpuslice, pytest.mark.containerd]


def built(var: str) -> str:
    path = os.environ.get(var, "")
    if not path or not os.path.exists(path):
        pytest.fail(f"{var} is not set to a built file (ctest sets it); got {path!r}", pytrace=False)
    return os.path.abspath(path)


def cri_config(base: Path, runtime: str, config_version: int, enable_cdi: bool, spec_dirs: list[Path]) -> str:
    """The CRI plugin's tables: runc the default handler, and `podann`, the
    old, unsafe registration that passed pod annotations too. containerd 2
    (config version 3) moved them to io.containerd.cri.v1.runtime / .images."""
    q = json.dumps
    if config_version == 3:
        rt, images, server = "[plugins.'io.containerd.cri.v1.runtime'", "[plugins.'io.containerd.cri.v1.images'", \
            "[plugins.'io.containerd.grpc.v1.cri'"
        head = [f"{images}]", '  snapshotter = "overlayfs"', f"{images}.pinned_images]", f"  sandbox = {q(PAUSE_IMAGE)}",
                f"{server}]", '  stream_server_address = "127.0.0.1"', '  stream_server_port = "0"',
                f"{rt}]"]
        cni = [f"{rt}.cni]", f"  bin_dirs = [{q(str(base / 'cni-bin'))}]", f"  conf_dir = {q(str(base / 'cni-conf'))}"]
        snapshotter = []
    else:
        rt = '[plugins."io.containerd.grpc.v1.cri"'
        head = [f"{rt}]", f"  sandbox_image = {q(PAUSE_IMAGE)}",
                '  stream_server_address = "127.0.0.1"', '  stream_server_port = "0"']
        cni = [f"{rt}.cni]", f"  bin_dir = {q(str(base / 'cni-bin'))}", f"  conf_dir = {q(str(base / 'cni-conf'))}"]
        snapshotter = ['  snapshotter = "overlayfs"']
    return "\n".join([
        *head,
        "  restrict_oom_score_adj = true",  # root may lack CAP_SYS_RESOURCE here
        "  disable_apparmor = true",
        f"  enable_cdi = {'true' if enable_cdi else 'false'}",
        f"  cdi_spec_dirs = {q([str(d) for d in spec_dirs])}",
        *cni,
        f"{rt}.containerd]",
        *snapshotter,
        '  default_runtime_name = "runc"',
        f"{rt}.containerd.runtimes.runc]",
        '  runtime_type = "io.containerd.runc.v2"',
        f"{rt}.containerd.runtimes.runc.options]",
        f"  Root = {q(str(base / 'runc'))}",
        # the old, unsafe registration: pod annotations passed too
        f"{rt}.containerd.runtimes.podann]",
        '  runtime_type = "io.containerd.runc.v2"',
        '  pod_annotations = ["cdi.k8s.io/*"]',
        '  container_annotations = ["cdi.k8s.io/*"]',
        f"{rt}.containerd.runtimes.podann.options]",
        f"  Root = {q(str(base / 'runc'))}",
        f"  BinaryName = {q(runtime)}",
        "",
    ])


class Node:
    def __init__(self, base: Path, d, cri, gpu: ocitest.FakeGpu, state: Path, logs: Path, release: str,
                 enable_cdi: bool):
        self.base, self.containerd, self.cri, self.gpu, self.state, self.logs = base, d, cri, gpu, state, logs
        self.release, self.enable_cdi = release, enable_cdi
        self._ids = itertools.count()

    def name(self, prefix: str) -> str:
        return f"{prefix}-{os.getpid()}-{next(self._ids)}"

    def task_dir(self, cid: str) -> Path:
        return self.containerd.base / "state" / "io.containerd.runtime.v2.task" / "k8s.io" / cid

    def bundle_config(self, cid: str) -> dict:
        return json.loads((self.task_dir(cid) / "config.json").read_text())


# containerd release x its own CDI (enable_cdi, from 1.7): 1.6 has none, so
# gpuslice applies the edits; with it on, containerd applies them first and
# gpuslice must not apply them again.
NODES = [("1.6", False), ("1.7", False), ("1.7", True), ("2", False), ("2", True)]


@pytest.fixture(scope="module", params=NODES, ids=[f"containerd{r}-cdi-{'on' if c else 'off'}" for r, c in NODES])
def node(request, session_tmp, busybox_rootfs, host_cgroups):
    import cri_client
    import ctrd
    release, enable_cdi = request.param
    runtime = gpuslice_path(request.config)
    hook = gpuslice_hook_path(request.config)
    base = session_tmp / f"cri-{release}-{'cdi' if enable_cdi else 'nocdi'}"
    base.mkdir()
    gpu = ocitest.FakeGpu(base / "fake-gpu")
    # a slice of GPU 0 with a memory limit, as a sharing-aware DRA driver writes it
    (gpu.spec_dir / "slices.json").write_text(json.dumps({
        "cdiVersion": "0.6.0", "kind": SLICE_KIND,
        "devices": [{"name": "limited", "containerEdits": {
            "env": ["GPUSLICE_MEMORY_LIMIT=256Mi"],
            "deviceNodes": [{"path": "/dev/nvidia0", "hostPath": str(gpu.dev_dir / "nvidia0")}]}}]}))
    state, logs = base / "gpuslice-state", base / "gpuslice-log"
    conf = write_gpuslice_config(base / "gpuslice.toml", [gpu.spec_dir], tool("runc"), hook, state, logs)
    conf.write_text(conf.read_text().replace(
        "[runtime]\n", f'[runtime]\ninterposer-path = "{built("GPUSLICE_INTERPOSER")}"\n', 1))
    env = dict(os.environ, GPUSLICE_CONFIG=str(conf))
    bin_dir = ctrd.release_bin_dir(release)
    d = ctrd.Containerd(base / "containerd", str(bin_dir / "containerd"), str(bin_dir / "ctr"), env=env)
    d.cri_config = cri_config(base, runtime, d.config_version, enable_cdi, [gpu.spec_dir])
    d.write_config()
    # Registered the way an operator does it.
    p = subprocess.run([built("GPUSLICE_CLI"), "configure", "containerd", "--config", str(d.config),
                        "--runtime-path", runtime], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    client = None
    try:
        d.start(write=False)
        d.import_busybox(busybox_rootfs, PAUSE_IMAGE, ["sleep", "1000000"])
        d.import_busybox(busybox_rootfs, BUSYBOX)
        client = cri_client.Cri(d.socket, base / "cri-gen")
        yield Node(base, d, client, gpu, state, logs, release, enable_cdi)
    finally:
        if client:
            client.close()
        d.stop()
        remove_cgroup_parent(CGROUP_PARENT)


# The pods' cgroup parent: runc makes it in every hierarchy and removes only
# the containers' own cgroups under it.
CGROUP_PARENT = f"gpuslice-cri-{os.getpid()}"


def remove_cgroup_parent(name: str) -> None:
    """Removes `name` (and what is left under it) from every cgroup
    hierarchy, deepest first; a cgroup still in use stays."""
    for top in [Path("/sys/fs/cgroup"), *Path("/sys/fs/cgroup").iterdir()]:
        parent = top / name
        if not parent.is_dir():
            continue
        for dirpath, _, _ in sorted(os.walk(parent), key=lambda w: -w[0].count("/")):
            try:
                os.rmdir(dirpath)
            except OSError:
                pass


class Pod:
    """A pod and its containers, removed at exit whatever happened."""

    def __init__(self, node: Node, handler: str = "gpuslice", annotations: dict | None = None):
        self.node = node
        self.name = node.name("pod")
        log_dir = node.base / "pod-logs" / self.name
        log_dir.mkdir(parents=True)
        self.config = node.cri.sandbox_config(self.name, self.name + "-uid", log_dir, annotations,
                                              cgroup_parent=f"/{CGROUP_PARENT}")
        self.id = node.cri.run_pod(self.config, handler)
        self.containers: list[str] = []

    def container(self, annotations: dict | None = None, start: bool = True, args: list[str] | None = None,
                  cdi_devices: list[str] = ()) -> str:
        cid = self.node.cri.create_container(self.id, self.config, self.node.name("ctr"), BUSYBOX,
                                             args or ["sleep", "1000000"], annotations, cdi_devices=cdi_devices)
        self.containers.append(cid)
        if start:
            self.node.cri.start(cid)
        return cid

    def sh(self, cid: str, script: str) -> str:
        rc, out, err = self.node.cri.exec_sync(cid, ["sh", "-c", script])
        assert rc == 0, (rc, out, err)
        return out

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for cid in self.containers:
            try:
                self.node.cri.remove_container(cid)
            except Exception:  # noqa: BLE001 - teardown goes on
                pass
        self.node.cri.remove_pod(self.id)


def init_env(pod: Pod, cid: str) -> str:
    return pod.sh(cid, "tr '\\0' '\\n' < /proc/1/environ")


# What a container has of the fake GPU: nodes, whether the device cgroup
# lets an open through (ENXIO: yes, no driver behind; EPERM: no), the mount.
GPU_PROBE = ("for n in 0 1; do test -c /dev/nvidia$n && echo has-nvidia$n; "
             "  cat /dev/nvidia$n 2>&1 | grep -q 'No such device or address' && echo opens-nvidia$n; done; "
             f"cat {ocitest.FakeGpu.MOUNT_DEST}/{ocitest.FakeGpu.MOUNT_FILE} 2>/dev/null; true")


def test_cri_version(node):
    v = node.cri.version()
    assert v.runtime_name == "containerd" and v.runtime_api_version.startswith("v1"), v


def test_dra_and_device_plugin_containers_get_their_devices(node):
    with Pod(node) as pod:
        dra = pod.container({DRA_KEY: "nvidia.com/gpu=0"})
        plugin = pod.container({PLUGIN_KEY: "nvidia.com/gpu=1"})
        plain = pod.container()

        out = pod.sh(dra, GPU_PROBE)
        assert out.split() == ["has-nvidia0", "opens-nvidia0", *ocitest.FakeGpu.MOUNT_CONTENT.split()], out
        assert "GPUSLICE_FAKE_GPU0=present" in init_env(pod, dra)
        # An exec'd process (kubectl exec, probes) has the device's env too:
        # containerd 1.6 builds it from the spec it stored, without the CDI
        # edits; gpuslice-runtime adds what the request does not set.
        exec_env = pod.sh(dra, "env").split()
        assert "GPUSLICE_FAKE_GPU0=present" in exec_env and "GPUSLICE_FAKE_DRIVER=1" in exec_env, exec_env

        out = pod.sh(plugin, GPU_PROBE)
        assert out.split() == ["has-nvidia1", "opens-nvidia1", *ocitest.FakeGpu.MOUNT_CONTENT.split()], out
        assert "GPUSLICE_FAKE_GPU1=present" in init_env(pod, plugin)

        out = pod.sh(plain, GPU_PROBE)
        assert out.split() == [], out
        assert "GPUSLICE_FAKE" not in init_env(pod, plain)
        assert "GPUSLICE_FAKE" not in pod.sh(plain, "env")

        # The pause container went through gpuslice-runtime (the handler's
        # binary) and was not touched: no hook, no device, no state. The DRA
        # container has state, which names the pid file of its init.
        assert gpuslice_path_in_options(node, pod.id)
        pause = node.bundle_config(pod.id)
        assert "gpuslice-hook" not in json.dumps(pause) and "/dev/nvidia" not in json.dumps(pause)
        assert not (node.state / "containers" / pod.id).exists()
        assert ocitest.state_record(node.state / "containers" / dra)["init_pid_file"].endswith("/init.pid")


def test_cdi_edits_are_applied_once_whoever_applies_them(node):
    """containerd 1.7+ with enable_cdi applies the spec's edits before
    gpuslice-runtime sees config.json: nothing may be there twice, and the
    spec's hook runs once."""
    with Pod(node) as pod:
        cid = pod.container({DRA_KEY: "nvidia.com/gpu=0"})
        config = node.bundle_config(cid)
        hooks = config.get("hooks", {})
        assert [h["path"] for h in hooks.get("createContainer", [])].count(str(node.gpu.hook)) == 1, hooks
        for stage, entries in hooks.items():
            assert sum("gpuslice-hook" in h["path"] for h in entries) <= 1, (stage, entries)
        for minor in (0, 255):
            rules = [r for r in config["linux"]["resources"]["devices"]
                     if r.get("allow") and r.get("major") == 195 and r.get("minor") == minor]
            assert len(rules) == 1, config["linux"]["resources"]["devices"]
        assert [d["path"] for d in config["linux"]["devices"]].count("/dev/nvidia0") == 1
        assert config["process"]["env"].count("GPUSLICE_FAKE_GPU0=present") == 1
        assert [m["destination"] for m in config["mounts"]].count(ocitest.FakeGpu.MOUNT_DEST) == 1
        assert (node.gpu.markers / f"{cid}.runs").read_text().split() == ["ran"]
        assert "opens-nvidia0" in pod.sh(cid, GPU_PROBE).split()


def gpuslice_path_in_options(node: Node, cid: str) -> bool:
    options = node.task_dir(cid) / "options.json"
    return options.exists() and "gpuslice-runtime" in options.read_text()


def test_update_container_resources_keeps_device_access(node):
    with Pod(node) as pod:
        cid = pod.container({DRA_KEY: "nvidia.com/gpu=0"})
        before = pod.sh(cid, GPU_PROBE).split()
        node.cri.update_resources(cid, cpu_shares=512)
        after = pod.sh(cid, GPU_PROBE).split()
        assert "opens-nvidia0" in before and after == before, (before, after)


def test_unknown_device_fails_create_and_names_it(node):
    import grpc
    with Pod(node) as pod:
        with pytest.raises(grpc.RpcError) as err:
            pod.container({DRA_KEY: "nvidia.com/gpu=9"})
        assert "nvidia.com/gpu=9" in err.value.details(), err.value.details()
        assert not (node.state / "containers").exists() or not any((node.state / "containers").iterdir())


def test_limits_through_cri_and_teardown_leaves_nothing(node):
    with Pod(node) as pod:
        cid = pod.container({DRA_KEY: f"{SLICE_KIND}=limited"})
        out = pod.sh(cid, "cat /etc/ld.so.preload; ls /run/gpuslice; cat /run/gpuslice/limits")
        assert "/run/gpuslice/libgpuslice-cuda.so" in out and "region.sock" in out, out
        assert "memory 268435456" in out, out
        assert (node.state / "containers" / cid / "limits").exists()
    # Teardown (StopContainer, RemoveContainer, StopPodSandbox, RemovePodSandbox)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any((node.state / "containers").iterdir()):
        time.sleep(0.05)
    assert list((node.state / "containers").iterdir()) == []


def test_a_limited_device_in_the_cdi_devices_field_runs_with_its_limit(node):
    """kubelet passes a DRA claim's devices in the CRI field CDIDevices
    (its device manager only there since 1.32), which never reaches the
    runtime: containerd with its own CDI applies the slice's edits, and
    gpuslice-runtime recognises the slice by its GPUSLICE_ variables and its
    device node in config.json and sets up its limit. Without enable_cdi the
    field is ignored by containerd and the container gets no GPU at all."""
    with Pod(node) as pod:
        cid = pod.container(cdi_devices=[f"{SLICE_KIND}=limited"])
        if node.enable_cdi:
            out = pod.sh(cid, "cat /etc/ld.so.preload; ls /run/gpuslice; cat /run/gpuslice/limits")
            assert "/run/gpuslice/libgpuslice-cuda.so" in out and "region.sock" in out, out
            assert "memory 268435456" in out, out
            assert "has-nvidia0" in pod.sh(cid, GPU_PROBE).split()
            config = node.bundle_config(cid)
            assert [d["path"] for d in config["linux"]["devices"]].count("/dev/nvidia0") == 1, config["linux"]
            assert config["process"]["env"].count("GPUSLICE_MEMORY_LIMIT=256Mi") == 1
            assert (node.state / "containers" / cid / "limits").exists()
        else:
            assert pod.sh(cid, GPU_PROBE).split() == []
            assert "GPUSLICE_MEMORY_LIMIT" not in init_env(pod, cid)


def test_a_limit_in_the_pod_authors_env_alone_is_refused(node):
    """The same variable written by the pod's author, with no device that
    carries it: refused on every node, never started unlimited."""
    import grpc
    with Pod(node) as pod:
        cid = node.cri.create_container(pod.id, pod.config, node.name("ctr"), BUSYBOX, ["sleep", "1000000"],
                                        envs={"GPUSLICE_MEMORY_LIMIT": "256Mi"})
        pod.containers.append(cid)
        with pytest.raises(grpc.RpcError) as err:
            node.cri.start(cid)  # the task, and so gpuslice-runtime's create, comes at StartContainer
        assert "refusing to start it unlimited" in err.value.details(), err.value.details()
        assert not (node.state / "containers").exists() or not any((node.state / "containers").iterdir())


def test_pod_annotation_gives_no_device(node):
    """A pod author's own `cdi.k8s.io/` annotation reaches neither the pause
    container nor the pod's containers."""
    with Pod(node, annotations={"cdi.k8s.io/x": "nvidia.com/gpu=0"}) as pod:
        cid = pod.container()
        assert pod.sh(cid, GPU_PROBE).split() == []
        assert "GPUSLICE_FAKE" not in init_env(pod, cid)
        for c in (pod.id, cid):
            config = json.dumps(node.bundle_config(c))
            assert "/dev/nvidia0" not in config and "gpuslice-hook" not in config


def test_pod_annotation_control_with_an_unsafe_handler(node):
    """The same attack against a handler registered with pod_annotations
    (what gpuslice before 0.2 wrote): the pod gets the GPU. This is what the
    test above would see if `configure` still passed pod annotations."""
    with Pod(node, handler="podann", annotations={"cdi.k8s.io/x": "nvidia.com/gpu=0"}) as pod:
        cid = pod.container()
        assert "opens-nvidia0" in pod.sh(cid, GPU_PROBE).split()
