"""A PEP 517 build backend for the jobd SDK, standard library only.

pip builds a package in an isolated environment into which it installs the
backend named by ``[build-system] requires`` from the package index. The
machines jobd is developed on cannot reach that index, so the SDK names no
requirement and builds itself with this module (``backend-path``): a pure
Python wheel of the ``jobd`` package, written with ``zipfile``. The
project's name and version are read from ``pyproject.toml`` (``tomllib`` on
3.11+, a minimal reader of the two keys before).

Hooks: ``build_wheel``, ``build_sdist``, ``build_editable`` (a ``.pth``
file pointing at the source tree), and the optional ``get_requires_*``
hooks, which ask for nothing.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from typing import Dict, List, Mapping, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "jobd"
TAG = "py3-none-any"


def _project() -> Dict[str, str]:
    """Returns name, version, description and requires-python of [project]."""
    path = os.path.join(ROOT, "pyproject.toml")
    with open(path, "rb") as f:
        raw = f.read()
    try:
        import tomllib  # Python 3.11+

        proj = tomllib.loads(raw.decode("utf-8"))["project"]
        return {k: str(proj.get(k, "")) for k in ("name", "version", "description", "requires-python")}
    except ImportError:
        pass
    out: Dict[str, str] = {}
    section = ""
    for line in raw.decode("utf-8").splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
            continue
        m = re.match(r'^([A-Za-z-]+)\s*=\s*"([^"]*)"', line)
        if section == "[project]" and m:
            out[m.group(1)] = m.group(2)
    return out


def _dist_name() -> Tuple[str, str]:
    p = _project()
    return re.sub(r"[-_.]+", "_", p["name"]), p["version"]


def _metadata() -> str:
    p = _project()
    lines = [
        "Metadata-Version: 2.1",
        "Name: " + p["name"],
        "Version: " + p["version"],
        "Summary: " + p.get("description", ""),
        "Requires-Python: " + p.get("requires-python", ">=3.9"),
    ]
    readme = os.path.join(ROOT, "README.md")
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            return "\n".join(lines) + "\n\n" + f.read()
    return "\n".join(lines) + "\n"


def _package_files() -> List[Tuple[str, str]]:
    """(path in the archive, path on disk) of the package's files."""
    out = []
    base = os.path.join(ROOT, PACKAGE)
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(dirpath, name)
            out.append((os.path.relpath(full, ROOT).replace(os.sep, "/"), full))
    return out


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (arcname, digest, len(data))


def _write_wheel(directory: str, files: List[Tuple[str, bytes]]) -> str:
    name, version = _dist_name()
    info = "%s-%s.dist-info" % (name, version)
    wheel = "%s-%s-%s.whl" % (name, version, TAG)
    files = files + [
        (info + "/METADATA", _metadata().encode("utf-8")),
        (info + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: jobd-backend\nRoot-Is-Purelib: true\nTag: %s\n" % TAG).encode()),
        (info + "/top_level.txt", (PACKAGE + "\n").encode()),
    ]
    record = [_record_line(a, d) for a, d in files] + [info + "/RECORD,,"]
    files.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))
    path = os.path.join(directory, wheel)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for arcname, data in files:
            zi = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return wheel


def get_requires_for_build_wheel(config_settings: Optional[Mapping[str, object]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Mapping[str, object]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Mapping[str, object]] = None) -> List[str]:
    return []


def build_wheel(
    wheel_directory: str,
    config_settings: Optional[Mapping[str, object]] = None,
    metadata_directory: Optional[str] = None,
) -> str:
    files = []
    for arcname, full in _package_files():
        with open(full, "rb") as f:
            files.append((arcname, f.read()))
    return _write_wheel(wheel_directory, files)


def build_editable(
    wheel_directory: str,
    config_settings: Optional[Mapping[str, object]] = None,
    metadata_directory: Optional[str] = None,
) -> str:
    return _write_wheel(wheel_directory, [("jobd_editable.pth", (ROOT + "\n").encode())])


def build_sdist(sdist_directory: str, config_settings: Optional[Mapping[str, object]] = None) -> str:
    name, version = _dist_name()
    base = "%s-%s" % (name, version)
    path = os.path.join(sdist_directory, base + ".tar.gz")
    extra = ["pyproject.toml", "README.md", "_build/backend.py"]
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel in extra:
            full = os.path.join(ROOT, rel)
            if os.path.exists(full):
                tar.add(full, arcname=base + "/" + rel)
        for arcname, full in _package_files():
            tar.add(full, arcname=base + "/" + arcname)
        pkg_info = _metadata().encode("utf-8")
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size = len(pkg_info)
        tar.addfile(ti, io.BytesIO(pkg_info))
    return base + ".tar.gz"
