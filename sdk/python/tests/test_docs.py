"""The API reference in docs/python-sdk.md is the one the docstrings make."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import SDK


def test_api_reference_is_current() -> None:
    tool = os.path.join(SDK, "tools", "apiref.py")
    out = subprocess.run([sys.executable, tool, "--check"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
