"""gpuslice-kubelet-plugin against stand-ins of kubelet and the API server
(kubelet_standin.py: the registration and DRA gRPC services over unix
sockets, the API server's JSON over HTTPS with a bearer token), on a fake
driver tree (test_cdi_generate.fake_driver_tree): registration, claims
prepared from the API server's allocation into CDI specs, each claim's own
error, idempotency, a kill -9 and restart, unprepare after the claim is gone,
both DRA versions, an API server that serves only v1beta1."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from kubelet_standin import ApiServer, Kubelet
from test_cdi_generate import GPUS, fake_driver_tree

pytestmark = pytest.mark.gpuslice

DRIVER = "gpu.gpuslice.io"
NODE = "node-1"
TOKEN = "stand-in-token-0123456789"
UID = [f"5c2d4d1e-0000-4000-8000-00000000000{i}" for i in range(10)]
GiB = 1 << 30
NODE_UID = "0e1d2c3b-0000-4000-8000-00000000aaaa"
# The fake NVML's UUIDs (tests/fakes/fake_nvml.c), written into the fake
# driver tree's /proc files so that the plugin matches NVML's memory to them.
UUIDS = [f"GPU-facea2a3-a4a5-a6a7-a8a9-aaabacadae{i:02x}" for i in range(2)]
MEMORY = [80 * GiB, 40 * GiB]


def plugin_binary() -> str:
    path = os.environ.get("GPUSLICE_KUBELET_PLUGIN", "")
    if not path:
        pytest.fail("GPUSLICE_KUBELET_PLUGIN is not set (ctest sets it)", pytrace=False)
    return path


class Node:
    """The plugin's dirs, the stand-ins, and the plugin process."""

    def __init__(self, tmp: Path, versions=("v1", "v1beta1"), hook_path: str = "/usr/bin/gpuslice-hook"):
        self.tmp, self.hook_path = tmp, hook_path
        # the driver as the plugin finds it: under its roots (a node's
        # GPU operator root), or the DaemonSet's way, under the host's "/"
        # mounted in the plugin's container (--host-root)
        self.roots = ["--dev-root", "@", "--driver-root", "@"]
        self.root = fake_driver_tree(tmp / "driver")
        for (bus, _, old), new in zip(GPUS, UUIDS):
            info = self.root / "proc" / "driver" / "nvidia" / "gpus" / bus / "information"
            info.write_text(info.read_text().replace(old, new))
        self.cdi, self.reg, self.plugin_dir = tmp / "cdi", tmp / "registry", tmp / "plugin"
        self.reg.mkdir()
        self.api = ApiServer(tmp / "certs", TOKEN, versions)
        self.api.add_node(NODE, NODE_UID)
        self.kubeconfig = self.api.kubeconfig(tmp / "kubeconfig")
        self.proc = None
        self.log = tmp / "plugin.log"

    def start(self, *extra: str) -> Kubelet:
        self.proc = subprocess.Popen(
            [plugin_binary(), "--node-name", NODE, "--kubeconfig", str(self.kubeconfig), "--cdi-root", str(self.cdi),
             "--registrar-dir", str(self.reg), "--plugin-dir", str(self.plugin_dir),
             *[str(self.root) if a == "@" else a for a in self.roots], "--hook-path", self.hook_path, *extra],
            stdout=self.log.open("ab"), stderr=subprocess.STDOUT,
            env={"PATH": os.environ["PATH"], "FAKE_CUDA_DEVICES": "2",
                 "FAKE_CUDA_MEMORY": ",".join(f"{i}:{m}" for i, m in enumerate(MEMORY))})
        kubelet = Kubelet(self.reg, self.tmp / "gen")
        try:
            kubelet.register(DRIVER, alive=lambda: self.proc.poll() is None)
        except TimeoutError:
            self.proc.kill()
            raise AssertionError(self.log.read_text())
        return kubelet

    def stop(self, sig=signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=30)

    def spec(self, uid: str) -> dict:
        return json.loads((self.cdi / f"{DRIVER}-claim_{uid}.json").read_text())


@pytest.fixture
def short_tmp():
    """Socket paths must fit in 107 bytes: a short dir of its own."""
    d = Path(tempfile.mkdtemp(prefix="kp-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def node(short_tmp):
    n = Node(short_tmp)
    yield n
    if n.proc and n.proc.poll() is None:
        n.proc.kill()
        n.proc.wait()
    n.api.close()


def result(device: str, memory: str | None = None, share: str | None = None, request: str = "gpu") -> dict:
    r = {"request": request, "driver": DRIVER, "pool": NODE, "device": device}
    if memory:
        r["consumedCapacity"] = {"memory": memory}
    if share:
        r["shareID"] = share
    return r


def claim(i: int, namespace: str = "team-a", name: str | None = None) -> dict:
    return {"namespace": namespace, "uid": UID[i], "name": name or f"claim-{i}"}


def env_of(spec: dict, device: str) -> list[str]:
    return next(d["containerEdits"].get("env", []) for d in spec["devices"] if d["name"] == device)


def test_claims_sharing_a_gpu_each_get_their_own_limit(node):
    kubelet = node.start()
    info = kubelet.info
    assert (info.type, info.name, info.endpoint) == ("DRAPlugin", DRIVER, str(node.plugin_dir / "dra.sock"))
    assert list(info.supported_versions) == ["v1.DRAPlugin", "v1beta1.DRAPlugin"]
    gpu0, gpu1 = UUIDS
    # two claims of one name in two namespaces share gpu-0; a third has gpu-1 whole with a compute share
    node.api.allocate("team-a", "train", UID[0], [result("gpu-0", "8Gi", "share-a")])
    node.api.allocate("team-b", "train", UID[1], [result("gpu-0", "4Gi", "share-b")])
    node.api.allocate("team-a", "whole", UID[2], [result("gpu-1")], config=[
        {"source": "FromClaim", "opaque": {"driver": DRIVER, "parameters": {
            "apiVersion": "gpuslice.io/v1alpha1", "kind": "GpuShareConfig", "computeLimit": 30,
            "computePolicy": "burst"}}}])
    asked = [claim(0, "team-a", "train"), claim(1, "team-b", "train"), claim(2, "team-a", "whole")]
    got = kubelet.prepare(asked)
    assert all(got[u]["error"] == "" for u in UID[:3]), got
    assert got[UID[0]]["devices"] == [(["gpu"], NODE, "gpu-0", [f"{DRIVER}/claim={UID[0]}-gpu-0"])]
    assert got[UID[1]]["devices"] == [(["gpu"], NODE, "gpu-0", [f"{DRIVER}/claim={UID[1]}-gpu-0"])]
    a, b, whole = node.spec(UID[0]), node.spec(UID[1]), node.spec(UID[2])
    assert a["kind"] == f"{DRIVER}/claim"
    assert env_of(a, f"{UID[0]}-gpu-0") == [f"GPUSLICE_GPU_UUID={gpu0}", f"GPUSLICE_MEMORY_LIMIT={8 * GiB}"]
    assert env_of(b, f"{UID[1]}-gpu-0") == [f"GPUSLICE_GPU_UUID={gpu0}", f"GPUSLICE_MEMORY_LIMIT={4 * GiB}"]
    assert env_of(whole, f"{UID[2]}-gpu-1") == [f"GPUSLICE_GPU_UUID={gpu1}", "GPUSLICE_COMPUTE_LIMIT=30",
                                                 "GPUSLICE_COMPUTE_POLICY=burst"]
    assert a["devices"][0]["containerEdits"]["deviceNodes"][0]["path"] == "/dev/nvidia0"
    assert any(n["path"] == "/dev/nvidiactl" for n in a["containerEdits"]["deviceNodes"])
    st = (node.cdi / f"{DRIVER}-claim_{UID[0]}.json").stat()
    assert (st.st_uid, st.st_mode & 0o777) == (0, 0o644)
    # every GET carried the token; the plugin asked for the newest version served
    assert "GET /apis/resource.k8s.io/v1/namespaces/team-b/resourceclaims/train" in node.api.requests
    assert TOKEN not in node.log.read_text()


def test_each_claim_fails_alone(node):
    kubelet = node.start()
    node.api.allocate("team-a", "good", UID[0], [result("gpu-0", "8Gi")])
    node.api.allocate("team-a", "other-uid", UID[9], [result("gpu-0")])
    node.api.claims[("team-a", "pending")] = {"kind": "ResourceClaim",
                                              "metadata": {"namespace": "team-a", "name": "pending", "uid": UID[3]}}
    node.api.allocate("team-a", "gone-gpu", UID[4], [result("gpu-7")])
    node.api.allocate("team-a", "bad-config", UID[5], [result("gpu-1")], config=[
        {"source": "FromClass", "opaque": {"driver": DRIVER, "parameters": {
            "apiVersion": "gpuslice.io/v1alpha1", "kind": "GpuShareConfig", "computeLimit": 0}}}])
    node.api.allocate("team-a", "bad-size", UID[6], [result("gpu-0", "8Gx")])
    got = kubelet.prepare([claim(0, name="good"), claim(1, name="missing"), claim(2, name="other-uid"),
                           claim(3, name="pending"), claim(4, name="gone-gpu"), claim(5, name="bad-config"),
                           claim(6, name="bad-size")])
    assert set(got) == set(UID[:7])
    assert got[UID[0]]["error"] == "" and got[UID[0]]["devices"], got
    expected = {1: "not in the API server", 2: UID[9], 3: "not allocated", 4: '"gpu-7"', 5: "computeLimit",
                6: "8Gx"}
    for i, says in expected.items():
        assert says in got[UID[i]]["error"] and f"team-a/" in got[UID[i]]["error"], (i, got[UID[i]])
        assert not (node.cdi / f"{DRIVER}-claim_{UID[i]}.json").exists()
    assert node.proc.poll() is None


def test_prepare_is_idempotent_survives_kill_9_and_unprepare_needs_no_api(node):
    kubelet = node.start()
    node.api.allocate("team-a", "train", UID[0], [result("gpu-0", "8Gi")])
    first = kubelet.prepare([claim(0, name="train")])
    assert first[UID[0]]["error"] == "", first
    assert kubelet.prepare([claim(0, name="train")]) == first
    assert node.stop(signal.SIGKILL) == -signal.SIGKILL
    # the claim is gone from the API server: only the checkpoint can answer now
    del node.api.claims[("team-a", "train")]
    kubelet = node.start()
    assert kubelet.prepare([claim(0, name="train")]) == first
    assert kubelet.unprepare([claim(0, name="train"), claim(8, name="never-seen")]) == {UID[0]: "", UID[8]: ""}
    assert not (node.cdi / f"{DRIVER}-claim_{UID[0]}.json").exists()
    assert kubelet.unprepare([claim(0, name="train")]) == {UID[0]: ""}
    # prepared again once it is back
    node.api.allocate("team-a", "train", UID[0], [result("gpu-1", "2Gi")])
    again = kubelet.prepare([claim(0, name="train")])
    assert again[UID[0]]["devices"][0][2] == "gpu-1", again
    assert node.stop() == 0
    assert not (node.reg / f"{DRIVER}-reg.sock").exists() and not (node.plugin_dir / "dra.sock").exists()


def test_v1beta1_kubelet_and_an_api_server_of_v1beta1_only(short_tmp):
    node = Node(short_tmp, versions=("v1beta1",))
    try:
        kubelet = node.start()
        node.api.allocate("team-a", "old", UID[0], [result("gpu-1", "1Gi")])
        got = kubelet.prepare([claim(0, name="old")], version="v1beta1")
        assert got[UID[0]]["error"] == "", got
        assert "GET /apis/resource.k8s.io/v1beta1/namespaces/team-a/resourceclaims/old" in node.api.requests
        (published,) = node.api.slices.values()
        assert published["apiVersion"] == "resource.k8s.io/v1beta1"
        assert published["spec"]["devices"][1]["basic"]["capacity"]["memory"] == {"value": str(MEMORY[1])}
        assert env_of(node.spec(UID[0]), f"{UID[0]}-gpu-1")[1] == f"GPUSLICE_MEMORY_LIMIT={GiB}"
        assert kubelet.unprepare([claim(0, name="old")], version="v1beta1") == {UID[0]: ""}
    finally:
        if node.proc and node.proc.poll() is None:
            node.proc.kill()
        node.api.close()


def test_a_wrong_token_or_ca_stops_the_plugin_saying_why(node, test_tmp):
    """It cannot publish its slice: it stops at once, saying why (the DaemonSet restarts it), and never
    registers with kubelet."""
    def run_plugin() -> subprocess.CompletedProcess:
        return subprocess.run(
            [plugin_binary(), "--node-name", NODE, "--kubeconfig", str(node.kubeconfig), "--cdi-root", str(node.cdi),
             "--registrar-dir", str(node.reg), "--plugin-dir", str(node.plugin_dir), "--dev-root", str(node.root),
             "--driver-root", str(node.root)], capture_output=True, text=True, timeout=60,
            env={"PATH": os.environ["PATH"], "FAKE_CUDA_DEVICES": "2"})
    node.kubeconfig = node.api.kubeconfig(test_tmp / "bad-token", token="not-the-token")
    p = run_plugin()
    assert p.returncode == 1 and "HTTP 401" in p.stderr, p.stderr
    assert "not-the-token" not in p.stderr + p.stdout
    assert not list(node.reg.iterdir())
    other = ApiServer(test_tmp / "other-certs", TOKEN)  # another CA: the server must not be trusted
    try:
        config = json.loads(node.api.kubeconfig(test_tmp / "other-ca").read_text())
        config["clusters"][0]["cluster"]["certificate-authority-data"] = json.loads(
            other.kubeconfig(test_tmp / "other").read_text())["clusters"][0]["cluster"]["certificate-authority-data"]
        node.kubeconfig.write_text(json.dumps(config))
        p = run_plugin()
        assert p.returncode == 1 and "certificate" in p.stderr.lower(), p.stderr
    finally:
        other.close()
    assert not any(r.startswith("POST") for r in node.api.requests)


def test_a_token_file_is_read_for_each_request(node):
    """A kubeconfig's tokenFile (a service account's token, which kubelet
    rotates) is read again for each request: a rotated token is used as
    soon as it is in the file."""
    token_file = node.tmp / "token"
    token_file.write_text(TOKEN + "\n")
    config = json.loads(node.kubeconfig.read_text())
    config["users"][0]["user"] = {"tokenFile": str(token_file)}
    node.kubeconfig.write_text(json.dumps(config))
    kubelet = node.start()
    node.api.allocate("team-a", "before", UID[0], [result("gpu-0", "1Gi")])
    assert kubelet.prepare([claim(0, name="before")])[UID[0]]["error"] == ""
    node.api.token = "rotated-token-0123456789"
    node.api.allocate("team-a", "after", UID[1], [result("gpu-0", "1Gi")])
    assert "HTTP 401" in kubelet.prepare([claim(1, name="after")])[UID[1]]["error"]  # the old token, refused
    token_file.write_text(node.api.token)
    assert kubelet.prepare([claim(1, name="after")])[UID[1]]["error"] == ""
    assert TOKEN not in node.log.read_text() and node.api.token not in node.log.read_text()


REPO = Path(__file__).resolve().parents[2]
VERBS = {"GET": "get", "POST": "create", "PUT": "update", "DELETE": "delete", "PATCH": "patch"}


def test_the_daemonsets_flags_and_role_are_what_the_plugin_uses(node):
    """packaging/kubernetes/kubelet-plugin.yaml: every flag it passes is
    one the plugin has, and its ClusterRole grants each request the plugin
    made here (publishing over a stale slice, a prepare, a look at its slice,
    a restart), and no verb more."""
    import yaml
    docs = {d["kind"]: d for d in yaml.safe_load_all((REPO / "packaging/kubernetes/kubelet-plugin.yaml").read_text())}
    (ctr,) = docs["DaemonSet"]["spec"]["template"]["spec"]["containers"]
    helped = subprocess.run([plugin_binary(), "--help"], capture_output=True, text=True).stdout
    for arg in ctr["args"]:
        assert arg.split("=")[0] in helped, arg
    node.api.slices["node-1-stale"] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                       "metadata": {"name": "node-1-stale", "resourceVersion": "0"},
                                       "spec": {"driver": DRIVER, "nodeName": NODE, "devices": []}}
    kubelet = node.start()
    node.api.allocate("team-a", "train", UID[0], [result("gpu-0", "8Gi")])
    assert kubelet.prepare([claim(0, name="train")])[UID[0]]["error"] == ""
    node.proc.send_signal(signal.SIGHUP)  # looks at its GPUs and its slice
    wait_for(lambda: "the node's GPUs are unchanged" in node.log.read_text())
    node.stop()
    node.start()  # replaces its slice
    used = set()
    for request in node.api.requests:
        method, path = request.split(" ", 1)
        parts = path.split("?")[0].strip("/").split("/")
        if parts[0] == "apis" and len(parts) <= 3:
            continue  # discovery: every authenticated user may
        group = "" if parts[0] == "api" else parts[1]
        rest = parts[2:] if parts[0] == "api" else parts[3:]
        if rest[0] == "namespaces":
            rest = rest[2:]
        verb = VERBS[method] if len(rest) > 1 or method != "GET" else "list"
        used.add((group, rest[0], verb))
    granted = {(g, r, v) for rule in docs["ClusterRole"]["rules"] for g in rule["apiGroups"]
               for r in rule["resources"] for v in rule["verbs"]}
    assert {("", "nodes", "get"), ("resource.k8s.io", "resourceslices", "delete"),
            ("resource.k8s.io", "resourceclaims", "get")} <= used, used
    assert used == granted, (used - granted, granted - used)


def test_flags_say_what_is_missing(test_tmp):
    p = subprocess.run([plugin_binary(), "--kubeconfig", str(test_tmp / "none")], capture_output=True, text=True,
                       env={"PATH": os.environ["PATH"]})
    assert p.returncode == 1 and "NODE_NAME" in p.stderr, p.stderr
    p = subprocess.run([plugin_binary(), "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "--slices" in p.stdout and "--registrar-dir" in p.stdout


def slice_devices(node: Node) -> dict:
    mine = [o for o in node.api.slices.values() if o["spec"]["driver"] == DRIVER and o["spec"]["nodeName"] == NODE]
    assert len(mine) == 1, node.api.slices
    return {d["name"]: d for d in mine[0]["spec"]["devices"]}


def test_the_node_publishes_one_slice_with_each_device_once(node):
    # a slice of this node and driver left under another name (a crash, an older version), another driver's,
    # and another node's
    def other(name, driver, node_name):
        node.api.slices[name] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                 "metadata": {"name": name, "resourceVersion": "0"},
                                 "spec": {"driver": driver, "nodeName": node_name, "devices": []}}
    other("node-1-gpu.gpuslice.io-old", DRIVER, NODE)
    other("node-1-net", "net.example.com", NODE)
    other("node-2-gpu.gpuslice.io", DRIVER, "node-2")
    node.start()
    assert set(node.api.slices) == {f"{NODE}-{DRIVER}", "node-1-net", "node-2-gpu.gpuslice.io"}
    published = node.api.slices[f"{NODE}-{DRIVER}"]
    assert published["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": NODE_UID, "controller": True}]
    assert published["spec"]["pool"] == {"name": NODE, "generation": 1, "resourceSliceCount": 1}
    devices = slice_devices(node)
    assert set(devices) == {"gpu-0", "gpu-1"}
    for i, name in enumerate(("gpu-0", "gpu-1")):
        d = devices[name]
        assert d["attributes"]["uuid"] == {"string": UUIDS[i]}
        assert d["attributes"]["index"] == {"int": i}
        assert d["attributes"]["driverVersion"] == {"version": "550.54.15"}
        assert d["attributes"]["productName"] == {"string": "NVIDIA H200"}
        assert d["capacity"]["memory"] == {"value": str(MEMORY[i])}
        assert d["allowMultipleAllocations"] is True
    # a restart replaces it: still each device once, the pool's next generation
    node.stop()
    node.start()
    assert len(slice_devices(node)) == 2
    assert node.api.slices[f"{NODE}-{DRIVER}"]["spec"]["pool"]["generation"] == 2


def wait_for(what, timeout: float = 20):
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_the_slice_follows_the_nodes_gpus_and_its_node(node):
    """A GPU gone (or back) is seen on SIGHUP (and every minute): the slice
    is published again with the next generation, the other GPU keeps its
    device name (names follow /dev/nvidiaN, not the index, which shifts),
    and later claims are prepared from the GPUs there are. A slice deleted,
    or left owned by a Node since made again, is published again."""
    kubelet = node.start()
    generation = lambda: node.api.slices[f"{NODE}-{DRIVER}"]["spec"]["pool"]["generation"]  # noqa: E731
    looked = lambda: node.log.read_text().count("the node's GPUs are unchanged")  # noqa: E731
    gone = node.root / "proc" / "driver" / "nvidia" / "gpus" / GPUS[0][0]  # the first by bus: index 0
    kept = node.tmp / "gpu0-information"
    shutil.move(gone / "information", kept)
    gone.rmdir()
    node.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: generation() == 2)
    devices = slice_devices(node)
    assert set(devices) == {"gpu-1"} and devices["gpu-1"]["attributes"]["uuid"] == {"string": UUIDS[1]}, devices
    assert devices["gpu-1"]["attributes"]["index"] == {"int": 0}  # nvidia-smi's index did shift
    node.api.allocate("team-a", "late", UID[0], [result("gpu-0")])
    assert '"gpu-0"' in kubelet.prepare([claim(0, name="late")])[UID[0]]["error"]
    node.api.allocate("team-a", "other", UID[1], [result("gpu-1", "1Gi")])
    assert kubelet.prepare([claim(1, name="other")])[UID[1]]["error"] == ""
    assert env_of(node.spec(UID[1]), f"{UID[1]}-gpu-1")[0] == f"GPUSLICE_GPU_UUID={UUIDS[1]}"
    node.proc.send_signal(signal.SIGHUP)  # nothing changed: looked at, not published again
    wait_for(lambda: looked() == 1)
    assert generation() == 2
    gone.mkdir()
    shutil.move(kept, gone / "information")
    node.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: generation() == 3)
    assert set(slice_devices(node)) == {"gpu-0", "gpu-1"}
    assert kubelet.prepare([claim(0, name="late")])[UID[0]]["error"] == ""
    assert "the node's GPUs changed: 1 GPU(s)" in node.log.read_text()
    # the slice deleted (the Node's garbage collection), then the Node made again
    del node.api.slices[f"{NODE}-{DRIVER}"]
    node.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: f"{NODE}-{DRIVER}" in node.api.slices)
    node.api.add_node(NODE, NODE_UID.replace("aaaa", "bbbb"))
    node.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: node.api.slices[f"{NODE}-{DRIVER}"]["metadata"]["ownerReferences"][0]["uid"] != NODE_UID)
    assert set(slice_devices(node)) == {"gpu-0", "gpu-1"}
    assert node.proc.poll() is None


def test_slices_mode_gives_fixed_shares(node):
    """Also the DaemonSet's way to the driver: the host's / under
    --host-root, the specs naming the host's own paths."""
    node.roots = ["--host-root", "@"]
    kubelet = node.start("--slices", "2")
    devices = slice_devices(node)
    assert sorted(devices) == ["gpu-0-slice-0", "gpu-0-slice-1", "gpu-1-slice-0", "gpu-1-slice-1"]
    assert devices["gpu-1-slice-1"]["capacity"]["memory"] == {"value": str(MEMORY[1] // 2)}
    assert "allowMultipleAllocations" not in devices["gpu-1-slice-1"]
    node.api.allocate("team-a", "half", UID[0], [result("gpu-1-slice-1")])
    got = kubelet.prepare([claim(0, name="half")])
    assert got[UID[0]]["error"] == "", got
    spec = node.spec(UID[0])
    assert env_of(spec, f"{UID[0]}-gpu-1-slice-1") == [
        f"GPUSLICE_GPU_UUID={UUIDS[1]}", f"GPUSLICE_MEMORY_LIMIT={MEMORY[1] // 2}", "GPUSLICE_COMPUTE_LIMIT=50"]
    assert str(node.root) not in json.dumps(spec), spec
    assert [n.get("hostPath", n["path"]) for n in spec["devices"][0]["containerEdits"]["deviceNodes"]] == ["/dev/nvidia1"]
    libcuda = [m for m in spec["containerEdits"]["mounts"] if "/libcuda.so." in m["containerPath"]]
    assert [m["hostPath"] for m in libcuda] == ["/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"], spec
