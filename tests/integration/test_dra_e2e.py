"""A pod's GPU memory claim from the API server to the limit inside its
container, the way a Kubernetes node runs it: the scheduler's allocation
(the stand-in API server holds it, with `consumedCapacity.memory`),
gpuslice-kubelet-plugin preparing the claim into a CDI spec, kubelet (its
stand-in) passing the returned CDI id in the CRI field `CDIDevices` with no
annotation, real containerd 1.7 and 2.x applying the spec (enable_cdi), and
gpuslice-runtime recognising the claim's device in config.json and setting
up its limit. Inside, an ordinary program (tests/interposer/probe.c, the
fake driver the plugin's spec mounts) sees the claimed memory as the GPU's:
an allocation past it fails with CUDA_ERROR_OUT_OF_MEMORY.

containerd 1.6 has no CDIDevices field: DRA is not supported there (see
docs/kubernetes.md); a claim's id in the field is ignored and the container
gets no GPU, which test_cri.py shows for every release without enable_cdi."""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

import ocitest
from conftest import built, gpuslice_hook_path, gpuslice_path, tool, write_gpuslice_config
from test_cri import BUSYBOX, CGROUP_PARENT, PAUSE_IMAGE, Pod, cri_config, remove_cgroup_parent
from test_cri import Node as CriNode
from test_kubelet_plugin import DRIVER, NODE, UID, claim, result
from test_kubelet_plugin import Node as PluginNode

pytestmark = [pytest.mark.gpuslice, pytest.mark.containerd]


class Cluster:
    def __init__(self, plugin: PluginNode, kubelet, cri: CriNode):
        self.plugin, self.kubelet, self.cri = plugin, kubelet, cri

    def prepare(self, i: int, name: str, memory: str, share: str) -> list[str]:
        """The scheduler's allocation of gpu-0 with `memory` consumed, then
        kubelet's NodePrepareResources: the claim's CDI ids."""
        self.plugin.api.allocate("team-a", name, UID[i], [result("gpu-0", memory, share)])
        got = self.kubelet.prepare([claim(i, name=name)])[UID[i]]
        assert got["error"] == "", got
        [(_, _, _, ids)] = got["devices"]
        return ids


@pytest.fixture(scope="module", params=["1.7", "2"], ids=lambda r: f"containerd{r}")
def cluster(request, session_tmp, host_cgroups):
    import cri_client
    import ctrd
    release = request.param
    hook = gpuslice_hook_path(request.config)
    short = Path(tempfile.mkdtemp(prefix="kd-"))  # the plugin's sockets: under 108 bytes
    plugin = PluginNode(short, hook_path=hook)
    base = session_tmp / f"dra-e2e-{release}"
    base.mkdir()
    # The pod's image: busybox and the probe with its glibc; libcuda comes
    # from the claim's spec, as the driver's libraries do on a node.
    image = ocitest.build_busybox_rootfs(base / "image")
    ocitest.copy_with_libs(built("GPUSLICE_PROBE"), image, "/bin/probe")
    conf = write_gpuslice_config(base / "gpuslice.toml", [plugin.cdi], tool("runc"), hook, base / "state",
                                 base / "log")
    conf.write_text(conf.read_text().replace(
        "[runtime]\n", f'[runtime]\ninterposer-path = "{built("GPUSLICE_INTERPOSER")}"\n', 1))
    bin_dir = ctrd.release_bin_dir(release)
    runtime = gpuslice_path(request.config)
    d = ctrd.Containerd(base / "containerd", str(bin_dir / "containerd"), str(bin_dir / "ctr"),
                        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "GPUSLICE_CONFIG": str(conf)})
    d.cri_config = cri_config(base, runtime, d.config_version, True, [plugin.cdi])
    d.write_config()
    p = subprocess.run([str(built("GPUSLICE_CLI")), "configure", "containerd", "--config", str(d.config),
                        "--runtime-path", runtime], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    client = None
    try:
        kubelet = plugin.start()  # makes --cdi-root before containerd watches it
        d.start(write=False)
        d.import_busybox(image, PAUSE_IMAGE, ["sleep", "1000000"])
        d.import_busybox(image, BUSYBOX)
        client = cri_client.Cri(d.socket, base / "cri-gen")
        yield Cluster(plugin, kubelet, CriNode(base, d, client, None, base / "state", base / "log", release, True))
    finally:
        if client:
            client.close()
        d.stop()
        remove_cgroup_parent(CGROUP_PARENT)
        if plugin.proc and plugin.proc.poll() is None:
            plugin.proc.kill()
            plugin.proc.wait()
        plugin.api.close()
        shutil.rmtree(short, ignore_errors=True)


def test_two_claims_sharing_a_gpu_each_hold_their_own_memory(cluster):
    a = cluster.prepare(0, "train", "256Mi", "share-a")
    b = cluster.prepare(1, "eval", "128Mi", "share-b")
    assert a == [f"{DRIVER}/claim={UID[0]}-gpu-0"] and b == [f"{DRIVER}/claim={UID[1]}-gpu-0"], (a, b)
    with Pod(cluster.cri) as pod:
        # kubelet passes the ids in CDIDevices only: no cdi.k8s.io annotation
        ca = pod.container(cdi_devices=a)
        cb = pod.container(cdi_devices=b)
        out_a = pod.sh(ca, "cat /run/gpuslice/limits; /bin/probe dlsym alloc 300Mi oom 256Mi; "
                           "/bin/probe dlsym alloc 200Mi ok 256Mi")
        out_b = pod.sh(cb, "/bin/probe dlsym alloc 200Mi oom 128Mi; /bin/probe dlsym alloc 100Mi ok 128Mi")
        assert f"memory {256 << 20}" in out_a, out_a
        assert "probe dlsym alloc 300Mi: as expected" in out_a and "probe dlsym alloc 200Mi: as expected" in out_a
        assert "probe dlsym alloc 200Mi: as expected" in out_b and "probe dlsym alloc 100Mi: as expected" in out_b
        for cid in (ca, cb):
            config = cluster.cri.bundle_config(cid)
            assert not any(k.startswith("cdi.k8s.io/") for k in config.get("annotations", {})), config["annotations"]
            assert [d["path"] for d in config["linux"]["devices"]].count("/dev/nvidia0") == 1, config["linux"]
            assert (cluster.cri.state / "containers" / cid / "limits").exists()
    assert cluster.kubelet.unprepare([claim(0, name="train"), claim(1, name="eval")]) == {UID[0]: "", UID[1]: ""}
    assert not list(cluster.plugin.cdi.glob(f"{DRIVER}-claim_*.json"))


def test_a_claims_env_without_its_device_is_refused(cluster):
    """A pod author who copies a claim's variables into the container's env
    gets no limit and no GPU: the container is refused."""
    import grpc
    cluster.prepare(2, "copied", "256Mi", "share-c")
    spec = cluster.plugin.spec(UID[2])
    env = dict(e.split("=", 1) for e in spec["devices"][0]["containerEdits"]["env"])
    with Pod(cluster.cri) as pod:
        cid = cluster.cri.cri.create_container(pod.id, pod.config, cluster.cri.name("ctr"), BUSYBOX,
                                               ["sleep", "1000000"], envs=env)
        pod.containers.append(cid)
        with pytest.raises(grpc.RpcError) as err:
            cluster.cri.cri.start(cid)
        assert "refusing to start it unlimited" in err.value.details(), err.value.details()
    assert cluster.kubelet.unprepare([claim(2, name="copied")]) == {UID[2]: ""}
