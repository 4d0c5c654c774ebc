"""What the root benchmarks share: the wrapper under test, named on the
command line or by $GPUSLICE_RUNTIME as in the integration tests, and the
kernel's RCU knob that a run may expedite."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

RCU_EXPEDITED = Path("/sys/kernel/rcu_expedited")
RCU_NORMAL = Path("/sys/kernel/rcu_normal")


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


def expedite_rcu(expedited: Path = RCU_EXPEDITED, normal: Path = RCU_NORMAL) -> str:
    """Makes the kernel's RCU grace periods expedited; returns what the
    knob held, for restore_rcu.

    Why: runc's create waits for RCU grace periods, and on a kernel with
    lazy RCU and a 250 Hz tick a create took either ~14 or ~19 ms, by
    whether a wait caught a tick. Its cycles fell in two modes, with the
    median between them, so a ratio of medians moved by 4-8 % either way
    over 200 cycles and by ~3 % over 1,000. Expedited, the waits are short
    and alike for every arm; the cycle is one mode, a little shorter, so
    gpuslice's share of it is, if anything, larger."""
    try:
        was = expedited.read_text().strip()
        overridden = normal.exists() and normal.read_text().strip() != "0"
    except OSError as e:
        raise SystemExit(f"--expedite-rcu: cannot read {e.filename}: {e.strerror}")
    if overridden:
        raise SystemExit(f"--expedite-rcu: {normal} is set, which keeps grace periods normal whatever "
                         f"{expedited} says: run without --expedite-rcu")
    try:
        expedited.write_text("1")
    except OSError as e:
        raise SystemExit(f"--expedite-rcu: cannot write {expedited}: {e.strerror} (a read-only /sys?): run without "
                         f"--expedite-rcu")
    return was


def restore_rcu(was: str, expedited: Path = RCU_EXPEDITED) -> None:
    """Puts back what expedite_rcu found; says so on stderr where it cannot."""
    try:
        expedited.write_text(was)
    except OSError as e:
        print(f"cannot set {expedited} back to {was}: {e.strerror}", file=sys.stderr)
