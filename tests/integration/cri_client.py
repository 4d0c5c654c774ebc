"""A CRI v1 client over gRPC, the way kubelet talks to containerd: the
message classes are generated at run time from cri/runtime_v1_subset.proto
with grpc_tools.protoc (Debian: python3-grpcio, python3-grpc-tools)."""
from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

PROTO = Path(__file__).resolve().parent / "cri" / "runtime_v1_subset.proto"


def load(out_dir: Path):
    """(messages module, RuntimeServiceStub class), generated into out_dir."""
    out_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO.parent}", f"--python_out={out_dir}",
                    f"--grpc_python_out={out_dir}", PROTO.name], check=True, capture_output=True, text=True)
    sys.path.insert(0, str(out_dir))
    pb = importlib.import_module("runtime_v1_subset_pb2")
    grpc_mod = importlib.import_module("runtime_v1_subset_pb2_grpc")
    return pb, grpc_mod.RuntimeServiceStub


class Cri:
    """RuntimeService calls with kubelet's shapes of request."""

    def __init__(self, socket: Path, gen_dir: Path, timeout: float = 60):
        import grpc
        self.grpc = grpc
        self.pb, stub = load(gen_dir)
        self.channel = grpc.insecure_channel(f"unix://{socket}")
        self.rt = stub(self.channel)
        self.timeout = timeout

    def close(self) -> None:
        self.channel.close()

    def call(self, name: str, request):
        return getattr(self.rt, name)(request, timeout=self.timeout)

    def version(self):
        return self.call("Version", self.pb.VersionRequest(version="v1"))

    def sandbox_config(self, name: str, uid: str, log_dir: Path, annotations: dict | None = None,
                       cgroup_parent: str = ""):
        pb = self.pb
        return pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid=uid, namespace="default", attempt=0),
            hostname="", log_directory=str(log_dir), annotations=annotations or {},  # host network: no UTS namespace
            linux=pb.LinuxPodSandboxConfig(
                cgroup_parent=cgroup_parent,
                security_context=pb.LinuxSandboxSecurityContext(
                    namespace_options=pb.NamespaceOption(network=pb.NODE, pid=pb.CONTAINER, ipc=pb.POD))))

    def run_pod(self, config, handler: str) -> str:
        return self.call("RunPodSandbox", self.pb.RunPodSandboxRequest(config=config, runtime_handler=handler)).pod_sandbox_id

    def create_container(self, pod_id: str, pod_config, name: str, image: str, args: list[str],
                         annotations: dict | None = None, envs: dict | None = None,
                         cdi_devices: list[str] = ()) -> str:
        pb = self.pb
        config = pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name=name, attempt=0), image=pb.ImageSpec(image=image),
            command=args[:1], args=args[1:], annotations=annotations or {},
            envs=[pb.KeyValue(key=k, value=v) for k, v in (envs or {}).items()], log_path=f"{name}.log",
            CDI_devices=[pb.CDIDevice(name=n) for n in cdi_devices],
            linux=pb.LinuxContainerConfig(security_context=pb.LinuxContainerSecurityContext(
                namespace_options=pb.NamespaceOption(network=pb.NODE, pid=pb.CONTAINER, ipc=pb.POD))))
        return self.call("CreateContainer", pb.CreateContainerRequest(
            pod_sandbox_id=pod_id, config=config, sandbox_config=pod_config)).container_id

    def start(self, cid: str) -> None:
        self.call("StartContainer", self.pb.StartContainerRequest(container_id=cid))

    def status(self, cid: str):
        return self.call("ContainerStatus", self.pb.ContainerStatusRequest(container_id=cid, verbose=True))

    def exec_sync(self, cid: str, cmd: list[str], timeout: int = 30) -> tuple[int, str, str]:
        r = self.call("ExecSync", self.pb.ExecSyncRequest(container_id=cid, cmd=cmd, timeout=timeout))
        return r.exit_code, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")

    def update_resources(self, cid: str, cpu_shares: int) -> None:
        self.call("UpdateContainerResources", self.pb.UpdateContainerResourcesRequest(
            container_id=cid, linux=self.pb.LinuxContainerResources(cpu_shares=cpu_shares)))

    def remove_container(self, cid: str) -> None:
        self.call("StopContainer", self.pb.StopContainerRequest(container_id=cid, timeout=0))
        self.call("RemoveContainer", self.pb.RemoveContainerRequest(container_id=cid))

    def remove_pod(self, pod_id: str) -> None:
        self.call("StopPodSandbox", self.pb.StopPodSandboxRequest(pod_sandbox_id=pod_id))
        self.call("RemovePodSandbox", self.pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id))
