#!/usr/bin/env python3
"""Every manifest in packaging/kubernetes/ parses, and the fields that make it
work with gpuslice are right: the RuntimeClass's handler is the one
`gpuslice configure containerd` registers; every pod names that
RuntimeClass; a DRA pod's containers claim only claims the pod declares and
each declared claim exists in the same file and namespace, in the request
shape of its API version (v1: `exactly.deviceClassName`; v1beta1:
`deviceClassName`).  Run: python3 tests/packaging/test_manifests.py"""
from __future__ import annotations

import sys
import unittest
from pathlib import Path

import yaml

DIR = Path(__file__).resolve().parents[2] / "packaging" / "kubernetes"
HANDLER = "gpuslice"  # containerd_config.hpp: the default handler name


def documents(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def all_documents() -> dict[str, list[dict]]:
    return {p.name: documents(p) for p in sorted(DIR.glob("*.yaml"))}


class Manifests(unittest.TestCase):
    def test_there_are_the_four_files(self):
        self.assertEqual(sorted(all_documents()),
                         ["dra-claim-v1.yaml", "dra-claim-v1beta1.yaml", "gpushare-pod.yaml", "runtimeclass.yaml"])

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
        for name, want_version in (("dra-claim-v1.yaml", "resource.k8s.io/v1"),
                                   ("dra-claim-v1beta1.yaml", "resource.k8s.io/v1beta1")):
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
                        self.assertEqual(request["exactly"]["deviceClassName"], "gpu.nvidia.com", name)
                    else:
                        self.assertNotIn("exactly", request, name)
                        self.assertEqual(request["deviceClassName"], "gpu.nvidia.com", name)
            for pod in pods:
                ns = pod["metadata"]["namespace"]
                declared = {c["name"]: c["resourceClaimName"] for c in pod["spec"]["resourceClaims"]}
                for claim_name in declared.values():
                    self.assertIn((ns, claim_name), claims, f"{name}: pod claims {claim_name} not in the file")
                for c in pod["spec"]["containers"]:
                    for used in c["resources"]["claims"]:
                        self.assertIn(used["name"], declared, f"{name}: container {c['name']}")

    def test_gpushare_pod_asks_for_gpu_memory(self):
        (pod,) = documents(DIR / "gpushare-pod.yaml")
        limits = pod["spec"]["containers"][0]["resources"]["limits"]
        self.assertIsInstance(limits["aliyun.com/gpu-mem"], int)
        self.assertGreater(limits["aliyun.com/gpu-mem"], 0)


if __name__ == "__main__":
    sys.exit(unittest.main())
