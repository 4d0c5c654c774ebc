"""containerd 1.6 (Debian 12's), 1.7 and 2.x (Debian 13's and unstable's,
fetched once), private instances, busybox image imported from a locally
written OCI layout, containers run with `ctr run` and the runc v2 shim (ctr
has no CDI of its own: gpuslice-runtime applies the edits).

ctr passes OCI annotations with `--annotation k=v` (split on the first
`=`, so `cdi.k8s.io/x=nvidia.com/gpu=0` works) and uses a runc-compatible
binary in place of runc with `--runtime io.containerd.runc.v2 --runc-binary
PATH`; the shim calls it exactly like runc (global flags, then the verb).
"""
from __future__ import annotations

import json
import os
import textwrap

import pytest

import ocitest

ANNOTATION = "cdi.k8s.io/gpuslice-test"


def test_ctr_run_busybox_plain_runc(containerd, cid):
    p = containerd.run(cid, ["sh", "-c", "echo hello from $(hostname); cat /proc/1/cmdline | tr '\\0' ' '"])
    assert p.stdout.startswith("hello from "), p.stdout
    assert "sh -c" in p.stdout
    assert containerd.ctr("containers", "list", "--quiet").stdout.split() == []


def test_ctr_exit_status(containerd, cid):
    p = containerd.run(cid, ["sh", "-c", "exit 7"], check=False)
    assert p.returncode == 7, (p.returncode, p.stderr)


def test_ctr_runc_binary_and_annotations_reach_runtime(containerd, test_tmp, cid):
    """Validates the mechanism gpuslice-runtime relies on, with a stand-in
    wrapper that records its argv, its env and the bundle's config.json on
    `create`, then execs runc."""
    rec = test_tmp / "rec"
    rec.mkdir()
    wrapper = test_tmp / "recording-runtime"
    wrapper.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        rec={rec}
        printf '%s\\n' "$*" >> "$rec/argv"
        prev=
        for a in "$@"; do
          if [ "$prev" = --bundle ]; then cp "$a/config.json" "$rec/config.json"; env > "$rec/env"; fi
          prev=$a
        done
        exec runc "$@"
        """))
    wrapper.chmod(0o755)
    p = containerd.run(cid, ["sh", "-c", "echo via wrapper"], runc_binary=str(wrapper),
                       annotations={ANNOTATION: "nvidia.com/gpu=0,nvidia.com/gpu=1"})
    assert p.stdout == "via wrapper\n"
    argv = (rec / "argv").read_text().splitlines()
    creates = [a for a in argv if " create " in f" {a} "]
    assert len(creates) == 1, argv
    assert f"--root {containerd.runc_root}/" in creates[0], creates   # global flags before the verb
    assert creates[0].split(" create ", 1)[1].startswith("--bundle "), creates
    assert any(a.split()[-2:] == ["delete", cid] or a.endswith(f"delete {cid}") for a in argv), argv
    spec = json.loads((rec / "config.json").read_text())
    assert spec["annotations"][ANNOTATION] == "nvidia.com/gpu=0,nvidia.com/gpu=1"
    env = (rec / "env").read_text().splitlines()
    assert f"GPUSLICE_CONFIG={containerd.gpuslice_config}" in env


@pytest.mark.gpuslice
def test_ctr_gpuslice_runtime_injects_device(request, containerd, containerd_fake_gpu, cid):
    from conftest import gpuslice_path
    wrapper = gpuslice_path(request.config)
    gpu = containerd_fake_gpu
    p = containerd.run(cid, ["sh", "/probe.sh"], runc_binary=wrapper,
                       annotations={ANNOTATION: gpu.qualified("0")})
    facts = ocitest.parse_probe(p.stdout)
    assert facts.get("done") == "1", p.stdout + p.stderr
    assert facts["node:/dev/nvidia0"] == f"character special file c3 0 {gpu.NODE_MODE:o} 0 0", facts
    assert os.strerror(6) in facts["open:/dev/nvidia0"], facts
    assert facts["env:GPUSLICE_FAKE_GPU0"] == "present", facts
    assert facts["node:/dev/nvidia1"] == "absent", facts
    assert facts["mount:content"] == gpu.MOUNT_CONTENT, facts
    assert containerd.ctr("containers", "list", "--quiet").stdout.split() == []


@pytest.mark.gpuslice
def test_ctr_gpuslice_runtime_without_request(request, containerd, containerd_fake_gpu, cid):
    from conftest import gpuslice_path
    p = containerd.run(cid, ["sh", "-c", "echo plain; test -e /dev/nvidia0 || echo no-gpu"],
                       runc_binary=gpuslice_path(request.config))
    assert p.stdout == "plain\nno-gpu\n"


@pytest.mark.gpuslice
def test_ctr_gpuslice_runtime_unknown_device(request, containerd, containerd_fake_gpu, cid):
    """The shim does not show the runtime's stderr: it reports the last
    `"level":"error"` line of the `--log` file it passed (`--log-format json`,
    runc's format `{"level":"error","msg":"...","time":"<RFC 3339>"}`) and
    says "unable to retrieve OCI runtime error" when there is none. So the
    wrapper's error must also go there for a user to see it."""
    from conftest import gpuslice_path
    p = containerd.run(cid, ["true"], runc_binary=gpuslice_path(request.config),
                       annotations={ANNOTATION: "nvidia.com/gpu=7"}, check=False)
    assert p.returncode != 0
    assert "nvidia.com/gpu=7" in p.stderr, p.stderr
    containerd.ctr("containers", "delete", cid, check=False)
