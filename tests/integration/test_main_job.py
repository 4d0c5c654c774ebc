"""README's main job (examples/gpu-container.sh), run as a newcomer runs it:
its container starts through gpuslice-runtime on the simulated GPU, the
memory limit holds, its state goes with it, and it prints nothing a
newcomer would take for a problem (no warning, no error line: the
simulated node has its NVML beside its driver)."""
from __future__ import annotations

import subprocess

from pathlib import Path

import pytest

pytestmark = pytest.mark.gpuslice

REPO = Path(__file__).resolve().parents[2]


def test_the_main_job_runs_its_container_with_the_limit_and_says_no_warning():
    p = subprocess.run(["bash", str(REPO / "examples" / "gpu-container.sh")], cwd=REPO, capture_output=True,
                       text=True, timeout=280)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "cuMemAlloc(300 MiB): CUDA_ERROR_OUT_OF_MEMORY" in out and "cuMemAlloc(200 MiB): CUDA_SUCCESS" in out, out
    assert "-- the limit held" in out, out
    assert "is gone now that it has ended: 0 left" in out, out
    assert "NVML reports them to admission (UUID, bytes): GPU-" in out, out
    noisy = [line for line in out.splitlines() if " warning: " in line or " error: " in line or " warn: " in line]
    assert noisy == [], noisy
