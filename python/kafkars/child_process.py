"""Stopping a server process this one started (a kafkars broker, Apache Kafka, ZooKeeper)
as their own stop scripts do: a signal (SIGTERM: a controlled shutdown), then SIGKILL
once the grace period has passed, so a shutdown that hangs never hangs its caller."""

from __future__ import annotations

import signal
import subprocess
from typing import Any


def stop_child(child: subprocess.Popen[Any], *, grace_s: float, sig: int = signal.SIGTERM) -> None:
    child.send_signal(sig)
    try:
        child.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        kill_child(child)


def kill_child(child: subprocess.Popen[Any]) -> None:
    """SIGKILL, and reap it."""
    child.kill()
    child.wait()
