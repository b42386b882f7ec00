"""Listeners with a security protocol the broker does not serve are refused at start-up."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_unserved_security_protocol_refuses_to_start(tmp_path: Path, protocol: str) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafkars.server.cli",
            "--override",
            f"listeners={protocol}://127.0.0.1:0",
            "--override",
            f"inter.broker.listener.name={protocol}",
            "--override",
            f"log.dirs={tmp_path / 'data'}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert f"security protocol {protocol}" in output
    assert "refusing to start" in output
    assert "Traceback" not in output
    # Refused before anything was written to the log dir.
    assert not (tmp_path / "data" / "meta.properties").exists()
