"""Stand-ins for what gpuslice-kubelet-plugin talks to and no machine here
runs: kubelet (its plugin watcher: a socket appearing in the registrar dir,
GetInfo, NotifyRegistrationStatus; its DRA manager: NodePrepareResources and
NodeUnprepareResources, v1 or v1beta1, over the unix socket GetInfo names),
and the API server (HTTPS with a CA of its own, bearer tokens, the
resource.k8s.io paths the plugin reads, claims held in memory and allocated
by the test as the scheduler would). The gRPC classes are generated at run
time from kubelet/*.proto with grpc_tools.protoc."""
from __future__ import annotations

import importlib
import json
import ssl
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PROTOS = Path(__file__).resolve().parent / "kubelet"


def _load(gen_dir: Path, name: str):
    """The modules of kubelet/NAME.proto, or of dra_VERSION.proto made from kubelet/dra.proto.in."""
    gen_dir.mkdir(parents=True, exist_ok=True)
    source = PROTOS / f"{name}.proto"
    if name.startswith("dra_"):
        source = gen_dir / f"{name}.proto"
        source.write_text((PROTOS / "dra.proto.in").read_text().replace("@DRA_VERSION@", name[len("dra_"):]))
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{source.parent}", f"--python_out={gen_dir}",
                    f"--grpc_python_out={gen_dir}", source.name], check=True, capture_output=True, text=True)
    if str(gen_dir) not in sys.path:
        sys.path.insert(0, str(gen_dir))
    return importlib.import_module(f"{name}_pb2"), importlib.import_module(f"{name}_pb2_grpc")


class Kubelet:
    """kubelet's side: registration, then DRA calls to the endpoint it was given."""

    def __init__(self, registrar_dir: Path, gen_dir: Path, timeout: float = 30):
        import grpc
        self.grpc = grpc
        self.registrar_dir, self.gen_dir, self.timeout = registrar_dir, gen_dir, timeout
        self.reg_pb, self.reg_grpc = _load(gen_dir, "registration")
        self.info = None
        self.channel = None  # one connection to the plugin, as kubelet keeps
        self.apis: dict = {}

    def register(self, driver: str, alive=lambda: True):
        """Waits for <driver>-reg.sock as kubelet's watcher does (while `alive()`); GetInfo, then says it is
        registered."""
        sock = self.registrar_dir / f"{driver}-reg.sock"
        deadline = time.monotonic() + self.timeout
        while not sock.is_socket():
            if time.monotonic() > deadline or not alive():
                raise TimeoutError(f"no {sock} after {self.timeout}s")
            time.sleep(0.05)
        # A socket left by a killed plugin is there before the new one listens:
        # kubelet's reconciler tries again, so does this.
        while True:
            try:
                with self.grpc.insecure_channel(f"unix://{sock}") as ch:
                    stub = self.reg_grpc.RegistrationStub(ch)
                    self.info = stub.GetInfo(self.reg_pb.InfoRequest(), timeout=self.timeout)
                    stub.NotifyRegistrationStatus(self.reg_pb.RegistrationStatus(plugin_registered=True),
                                                  timeout=self.timeout)
                return self.info
            except self.grpc.RpcError as e:
                if e.code() != self.grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline or not alive():
                    raise
                time.sleep(0.05)

    def _dra(self, version: str):
        if version not in self.apis:  # generated once per version
            self.apis[version] = _load(self.gen_dir, f"dra_{version}")
        pb, grpc_mod = self.apis[version]
        if self.channel is None:
            self.channel = self.grpc.insecure_channel(f"unix://{self.info.endpoint}")
        return pb, grpc_mod.DRAPluginStub(self.channel)

    def close(self):
        if self.channel is not None:
            self.channel.close()
            self.channel = None

    def prepare(self, claims: list[dict], version: str = "v1") -> dict:
        """{uid: {"error": ..., "devices": [(requests, pool, device, cdi ids)]}}"""
        pb, stub = self._dra(version)
        resp = stub.NodePrepareResources(
            pb.NodePrepareResourcesRequest(claims=[pb.Claim(**c) for c in claims]), timeout=self.timeout)
        return {uid: {"error": r.error, "devices": [(list(d.request_names), d.pool_name, d.device_name,
                                                     list(d.cdi_device_ids)) for d in r.devices]}
                for uid, r in resp.claims.items()}

    def unprepare(self, claims: list[dict], version: str = "v1") -> dict:
        pb, stub = self._dra(version)
        resp = stub.NodeUnprepareResources(
            pb.NodeUnprepareResourcesRequest(claims=[pb.Claim(**c) for c in claims]), timeout=self.timeout)
        return {uid: r.error for uid, r in resp.claims.items()}


def make_ca_and_server_cert(d: Path) -> tuple[Path, Path, Path]:
    """A CA, and a certificate it signed for 127.0.0.1: (ca.crt, server.crt, server.key)."""
    d.mkdir(parents=True, exist_ok=True)
    run = lambda *a: subprocess.run(a, check=True, capture_output=True, cwd=d)  # noqa: E731
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=stand-in CA",
        "-keyout", "ca.key", "-out", "ca.crt")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", "server.key",
        "-out", "server.csr")
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    run("openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-days", "2", "-extfile", "san.ext", "-out", "server.crt")
    return d / "ca.crt", d / "server.crt", d / "server.key"


class ApiServer:
    """The API server's JSON over HTTPS: resource.k8s.io's claims (read) and
    resourceslices (list by spec.nodeName, create, replace, delete), and
    nodes (read)."""

    def __init__(self, cert_dir: Path, token: str, versions=("v1", "v1beta1")):
        self.ca, cert, key = make_ca_and_server_cert(cert_dir)
        self.token, self.versions = token, list(versions)
        self.claims: dict[tuple[str, str], dict] = {}
        self.slices: dict[str, dict] = {}
        self.nodes: dict[str, dict] = {}
        self.requests: list[str] = []
        self.version_counter = 0
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # connections kept open, as the API server's
            wbufsize = 1 << 16  # headers and body leave in one write (no Nagle/delayed-ACK stall)

            def log_message(self, *args):
                pass

            def answer(self, code: int, body: dict):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def status(self, code: int, reason: str, message: str):
                self.answer(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
                                   "reason": reason, "code": code})

            def authorized(self) -> bool:
                api.requests.append(f"{self.command} {self.path}")
                if self.headers.get("Authorization") != f"Bearer {api.token}":
                    self.status(401, "Unauthorized", "Unauthorized")
                    return False
                return True

            def slice_path(self):
                """(version, name or None, query) of a resourceslices path of a served version, or None."""
                path, _, query = self.path.partition("?")
                parts = path.strip("/").split("/")
                if parts[:2] == ["apis", "resource.k8s.io"] and len(parts) in (4, 5) and parts[2] in api.versions \
                        and parts[3] == "resourceslices":
                    return parts[2], (parts[4] if len(parts) == 5 else None), query
                return None

            def body(self) -> dict:
                return json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))

            def stored(self, version: str, obj: dict) -> dict:
                api.version_counter += 1
                obj["metadata"]["resourceVersion"] = str(api.version_counter)
                obj["apiVersion"] = f"resource.k8s.io/{version}"
                api.slices[obj["metadata"]["name"]] = obj
                return obj

            def do_GET(self):
                if not self.authorized():
                    return
                parts = self.path.strip("/").split("/")
                if parts == ["apis", "resource.k8s.io"]:
                    return self.answer(200, {"kind": "APIGroup", "apiVersion": "v1", "name": "resource.k8s.io",
                                             "versions": [{"groupVersion": f"resource.k8s.io/{v}", "version": v}
                                                          for v in api.versions],
                                             "preferredVersion": {"groupVersion": f"resource.k8s.io/{api.versions[0]}",
                                                                  "version": api.versions[0]}})
                if len(parts) == 4 and parts[:3] == ["api", "v1", "nodes"]:
                    node = api.nodes.get(parts[3])
                    return self.answer(200, node) if node else self.status(404, "NotFound", "node not found")
                if (len(parts) == 7 and parts[:2] == ["apis", "resource.k8s.io"] and parts[2] in api.versions
                        and parts[3] == "namespaces" and parts[5] == "resourceclaims"):
                    claim = api.claims.get((parts[4], parts[6]))
                    if claim is None:
                        return self.status(404, "NotFound",
                                           f'resourceclaims.resource.k8s.io "{parts[6]}" not found')
                    return self.answer(200, dict(claim, apiVersion=f"resource.k8s.io/{parts[2]}"))
                if (s := self.slice_path()) and s[1] is None:
                    node = s[2].removeprefix("fieldSelector=spec.nodeName%3D") if s[2] else None
                    items = [o for o in api.slices.values() if node is None or o["spec"].get("nodeName") == node]
                    return self.answer(200, {"kind": "ResourceSliceList", "items": items})
                if s:
                    found = api.slices.get(s[1])
                    return self.answer(200, found) if found else self.status(404, "NotFound", "resourceslice not found")
                return self.status(404, "NotFound", "the server could not find the requested resource")

            def do_POST(self):
                if not self.authorized():
                    return
                s = self.slice_path()
                if not s or s[1] is not None:
                    return self.status(404, "NotFound", "no such collection")
                obj = self.body()
                if obj["metadata"]["name"] in api.slices:
                    return self.status(409, "AlreadyExists", "resourceslice already exists")
                self.answer(201, self.stored(s[0], obj))

            def do_PUT(self):
                if not self.authorized():
                    return
                s = self.slice_path()
                if not s or s[1] not in api.slices:
                    return self.status(404, "NotFound", "resourceslice not found")
                obj = self.body()
                if obj["metadata"].get("resourceVersion") != api.slices[s[1]]["metadata"]["resourceVersion"]:
                    return self.status(409, "Conflict", "the object has been modified")
                self.answer(200, self.stored(s[0], obj))

            def do_DELETE(self):
                if not self.authorized():
                    return
                s = self.slice_path()
                if not s or api.slices.pop(s[1], None) is None:
                    return self.status(404, "NotFound", "resourceslice not found")
                self.answer(200, {"kind": "Status", "status": "Success"})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def add_node(self, name: str, uid: str):
        self.nodes[name] = {"kind": "Node", "apiVersion": "v1", "metadata": {"name": name, "uid": uid}}

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def kubeconfig(self, path: Path, token: str | None = None) -> Path:
        import base64
        ca = base64.b64encode(self.ca.read_bytes()).decode()
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "node",
            "clusters": [{"name": "stand-in", "cluster": {"server": self.url, "certificate-authority-data": ca}}],
            "users": [{"name": "plugin", "user": {"token": token or self.token}}],
            "contexts": [{"name": "node", "context": {"cluster": "stand-in", "user": "plugin"}}]}))
        return path

    def allocate(self, namespace: str, name: str, uid: str, results: list[dict], config: list[dict] | None = None):
        """A claim as the scheduler leaves it: status.allocation.devices."""
        self.claims[(namespace, name)] = {
            "kind": "ResourceClaim", "metadata": {"namespace": namespace, "name": name, "uid": uid},
            "spec": {"devices": {"requests": [{"name": "gpu"}]}},
            "status": {"allocation": {"devices": {"results": results, "config": config or []}}}}
