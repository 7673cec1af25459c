"""The package type-checks with only its required dependencies: a user who runs ``mypy --strict``
on code that uses hpc_helpers, without the optional extras (torch, matplotlib, lightning), gets
no errors that are not theirs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "python_helpers" / "src"


def test_mypy_strict_without_the_optional_extras(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    stubs = Path(sys.prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}",
                 "site-packages", "yaml-stubs")
    if not stubs.is_dir():
        import yaml  # the stubs sit beside the package

        stubs = Path(yaml.__file__).resolve().parents[1] / "yaml-stubs"
    assert stubs.is_dir(), "types-PyYAML is a test dependency"
    # Only PyYAML's stubs: no site-packages, so torch, matplotlib and lightning are missing.
    shutil.copytree(stubs, tmp_path / "stubs" / "yaml")
    env = {**os.environ, "MYPYPATH": str(tmp_path / "stubs")}
    # The stubs found on MYPYPATH would be checked as this code is: they are not ours.
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nstrict = True\n\n[mypy-yaml,yaml.*]\nignore_errors = True\n")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-site-packages",
         "--config-file", str(config), "--cache-dir", str(tmp_path / "cache"),
         str(SRC / "hpc_helpers")],
        capture_output=True, text=True, env=env, check=False, timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
