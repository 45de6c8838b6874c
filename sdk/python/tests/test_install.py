"""``pip install ./sdk/python`` works offline, with pip's default flags: the
in-tree build backend needs nothing from a package index."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import SDK


def test_pip_install_offline(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    out = subprocess.run([py, "-m", "pip", "install", SDK], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    probe = (
        "import jobd, os; d = os.path.dirname(jobd.__file__); "
        "print(d); print(os.path.exists(os.path.join(d, 'py.typed'))); print(jobd.__version__)"
    )
    shown = subprocess.run([py, "-c", probe], cwd=str(tmp_path), env=env, capture_output=True, text=True, check=True)
    where, typed, version = shown.stdout.split()
    assert where.startswith(str(venv)) and typed == "True" and version == "0.1.0"
    helped = subprocess.run([py, "-m", "jobd", "worker", "--help"], cwd=str(tmp_path), env=env, capture_output=True, text=True)
    assert helped.returncode == 0 and "--queues" in helped.stdout
