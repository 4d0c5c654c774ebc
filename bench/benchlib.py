"""What the root benchmarks share: the wrapper under test, named on the
command line or by $GPUSLICE_RUNTIME as in the integration tests."""
from __future__ import annotations

import argparse
import os


def add_wrapper_argument(ap: argparse.ArgumentParser, help_text: str) -> None:
    ap.add_argument("--wrapper", default=os.environ.get("GPUSLICE_RUNTIME", ""),
                    help=f"{help_text} (default $GPUSLICE_RUNTIME)")


def wrapper_as_root(a: argparse.Namespace) -> str:
    """The wrapper's absolute path; exits unless run as root with one."""
    if os.geteuid() != 0:
        raise SystemExit("run as root")
    if not a.wrapper:
        raise SystemExit("no wrapper: pass --wrapper PATH or set GPUSLICE_RUNTIME")
    return os.path.abspath(a.wrapper)
