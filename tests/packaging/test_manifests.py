#!/usr/bin/env python3
"""Every manifest in packaging/kubernetes/ parses, and the fields that make it
work with gpuslice are right: the RuntimeClass's handler is the one
`gpuslice configure containerd` registers; every pod names that
RuntimeClass; a DRA pod's containers claim only claims the pod declares and
each declared claim exists in the same file and namespace, in the request
shape of its API version (v1: `exactly.deviceClassName`; v1beta1:
`deviceClassName`); gpuslice's DeviceClass selects the plugin's driver, its
claims ask for memory in quantities and configure compute with a valid
GpuShareConfig; the plugin's DaemonSet mounts every directory its flags
name, at the host's path. (test_kubelet_plugin.py checks the DaemonSet's
flags against the built plugin and its ClusterRole against what the plugin
asks of the API server.)  Run: python3 tests/packaging/test_manifests.py"""
from __future__ import annotations

import re
import sys
import unittest
from pathlib import Path

import yaml

DIR = Path(__file__).resolve().parents[2] / "packaging" / "kubernetes"
HANDLER = "gpuslice"  # containerd_config.hpp: the default handler name
DRIVER = "gpu.gpuslice.io"  # gpuslice-kubelet-plugin's default --driver-name
QUANTITY = re.compile(r"[0-9]+(\.[0-9]+)?([KMGTPE]i|[kMGTPE])?")


def documents(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def all_documents() -> dict[str, list[dict]]:
    return {p.name: documents(p) for p in sorted(DIR.glob("*.yaml"))}


class Manifests(unittest.TestCase):
    def test_there_are_the_four_files(self):
        self.assertEqual(sorted(all_documents()),
                         ["deviceclass.yaml", "dra-claim-v1.yaml", "dra-claim-v1beta1.yaml", "gpushare-pod.yaml",
                          "gpuslice-claims.yaml", "gpuslice-slice-claim.yaml", "kubelet-plugin.yaml",
                          "runtimeclass.yaml"])

    def test_every_document_has_kind_version_and_name(self):
        for name, docs in all_documents().items():
            for d in docs:
                with self.subTest(file=name, kind=d.get("kind")):
                    self.assertIn("apiVersion", d)
                    self.assertIn("kind", d)
                    self.assertTrue(d["metadata"]["name"])

    def test_runtime_class_names_the_registered_handler(self):
        (rc,) = documents(DIR / "runtimeclass.yaml")
        self.assertEqual((rc["apiVersion"], rc["kind"]), ("node.k8s.io/v1", "RuntimeClass"))
        self.assertEqual(rc["handler"], HANDLER)
        self.assertEqual(rc["metadata"]["name"], "gpuslice")

    def test_every_pod_runs_through_gpuslice(self):
        pods = [(n, d) for n, docs in all_documents().items() for d in docs if d["kind"] == "Pod"]
        self.assertGreaterEqual(len(pods), 3)
        for name, pod in pods:
            with self.subTest(file=name, pod=pod["metadata"]["name"]):
                self.assertEqual(pod["spec"]["runtimeClassName"], "gpuslice")
                self.assertTrue(pod["spec"]["containers"])

    def test_dra_pods_claim_what_the_file_declares(self):
        for name, want_version, want_class in (("dra-claim-v1.yaml", "resource.k8s.io/v1", "gpu.nvidia.com"),
                                               ("dra-claim-v1beta1.yaml", "resource.k8s.io/v1beta1", "gpu.nvidia.com"),
                                               ("gpuslice-claims.yaml", "resource.k8s.io/v1", DRIVER),
                                               ("gpuslice-slice-claim.yaml", "resource.k8s.io/v1", DRIVER)):
            docs = documents(DIR / name)
            claims = {(d["metadata"]["namespace"], d["metadata"]["name"]): d for d in docs if d["kind"] == "ResourceClaim"}
            namespaces = {d["metadata"]["name"] for d in docs if d["kind"] == "Namespace"}
            pods = [d for d in docs if d["kind"] == "Pod"]
            self.assertTrue(claims and pods, name)
            for claim in claims.values():
                self.assertEqual(claim["apiVersion"], want_version, name)
                self.assertIn(claim["metadata"]["namespace"], namespaces, name)
                for request in claim["spec"]["devices"]["requests"]:
                    if want_version == "resource.k8s.io/v1":
                        self.assertNotIn("deviceClassName", request, name)
                        self.assertEqual(request["exactly"]["deviceClassName"], want_class, name)
                    else:
                        self.assertNotIn("exactly", request, name)
                        self.assertEqual(request["deviceClassName"], want_class, name)
            for pod in pods:
                ns = pod["metadata"]["namespace"]
                declared = {c["name"]: c["resourceClaimName"] for c in pod["spec"]["resourceClaims"]}
                for claim_name in declared.values():
                    self.assertIn((ns, claim_name), claims, f"{name}: pod claims {claim_name} not in the file")
                for c in pod["spec"]["containers"]:
                    for used in c["resources"]["claims"]:
                        self.assertIn(used["name"], declared, f"{name}: container {c['name']}")

    def test_gpuslice_device_class_selects_the_plugins_driver(self):
        (dc,) = documents(DIR / "deviceclass.yaml")
        self.assertEqual((dc["apiVersion"], dc["kind"], dc["metadata"]["name"]),
                         ("resource.k8s.io/v1", "DeviceClass", DRIVER))
        self.assertEqual([s["cel"]["expression"] for s in dc["spec"]["selectors"]], [f'device.driver == "{DRIVER}"'])

    def test_gpuslice_claims_ask_memory_and_configure_compute_as_the_plugin_reads_them(self):
        claims = [d for d in documents(DIR / "gpuslice-claims.yaml") if d["kind"] == "ResourceClaim"]
        memory = [r["exactly"]["capacity"]["requests"]["memory"] for c in claims for r in c["spec"]["devices"]["requests"]]
        self.assertEqual(len(memory), 2)  # every claim of a shared GPU asks for its memory
        for q in memory:
            self.assertRegex(q, QUANTITY)
        configs = [c for claim in claims for c in claim["spec"]["devices"].get("config", [])]
        self.assertEqual(len(configs), 1)
        for c in configs:
            params = c["opaque"]["parameters"]
            self.assertEqual(c["opaque"]["driver"], DRIVER)
            self.assertEqual((params["apiVersion"], params["kind"]), ("gpuslice.io/v1alpha1", "GpuShareConfig"))
            self.assertLessEqual(set(params), {"apiVersion", "kind", "computeLimit", "computePolicy"})
            self.assertTrue(1 <= params["computeLimit"] <= 100)
            self.assertIn(params["computePolicy"], ("fixed", "burst", "native"))
            requests = {r["name"] for claim in claims for r in claim["spec"]["devices"]["requests"]}
            self.assertLessEqual(set(c["requests"]), requests)

    def test_the_slice_claim_asks_for_no_capacity(self):
        (claim,) = [d for d in documents(DIR / "gpuslice-slice-claim.yaml") if d["kind"] == "ResourceClaim"]
        (request,) = claim["spec"]["devices"]["requests"]
        self.assertNotIn("capacity", request["exactly"])  # a slice is taken whole
        self.assertIn('device.capacity["gpu.gpuslice.io"].memory', request["exactly"]["selectors"][0]["cel"]["expression"])

    def test_the_plugins_daemonset_mounts_what_its_flags_name(self):
        docs = {d["kind"]: d for d in documents(DIR / "kubelet-plugin.yaml")}
        pod = docs["DaemonSet"]["spec"]["template"]["spec"]
        self.assertEqual(pod["serviceAccountName"], docs["ServiceAccount"]["metadata"]["name"])
        subject = docs["ClusterRoleBinding"]["subjects"][0]
        self.assertEqual((subject["namespace"], subject["name"]), (docs["ServiceAccount"]["metadata"]["namespace"],
                                                                   docs["ServiceAccount"]["metadata"]["name"]))
        self.assertEqual(docs["ClusterRoleBinding"]["roleRef"]["name"], docs["ClusterRole"]["metadata"]["name"])
        (ctr,) = pod["containers"]
        flags = dict(a.removeprefix("--").split("=", 1) for a in ctr["args"])
        volumes = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"]}
        mounts = {m["mountPath"]: m for m in ctr["volumeMounts"]}
        for flag in ("cdi-root", "registrar-dir", "plugin-dir"):
            with self.subTest(flag=flag):
                self.assertIn(flags[flag], mounts)
                self.assertEqual(volumes[mounts[flags[flag]]["name"]], flags[flag])  # the host's own path
        self.assertEqual(flags["plugin-dir"], f"/var/lib/kubelet/plugins/{DRIVER}")
        host = mounts[flags["host-root"]]
        self.assertEqual((volumes[host["name"]], host.get("readOnly")), ("/", True))
        self.assertEqual(flags["hook-path"], "/usr/bin/gpuslice-hook")  # the packages' path, run by the host
        self.assertIn({"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}, ctr["env"])

    def test_gpushare_pod_asks_for_gpu_memory(self):
        (pod,) = documents(DIR / "gpushare-pod.yaml")
        limits = pod["spec"]["containers"][0]["resources"]["limits"]
        self.assertIsInstance(limits["aliyun.com/gpu-mem"], int)
        self.assertGreater(limits["aliyun.com/gpu-mem"], 0)


if __name__ == "__main__":
    sys.exit(unittest.main())
