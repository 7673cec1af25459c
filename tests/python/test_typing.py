"""The package type-checks with only its required dependencies: a user who runs ``mypy --strict``
on code that uses hpc_helpers, without the optional extras (torch, matplotlib, lightning), gets
no errors that are not theirs."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
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
    # mypy's cache beside the lint's (tests/run.sh: HPC_MYPY_CACHE), the user's, not this test's
    # temporary folder: a cold check costs about 6 CPU-s, one with the cache under 1 (mypy checks
    # each file's content and the options against it, as the lint's does). The stubs and the
    # sources are named by paths that stay the same from run to run and clone to clone (the
    # sources relative to python_helpers/), so that the cache's entries still name them.
    home = os.environ.get("HOME") or str(tmp_path)
    cache_root = os.environ.get("HPC_MYPY_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"), "hpc_toolkit", "mypy")
    cache = Path(cache_root, "without_extras")
    # Only PyYAML's stubs: no site-packages, so torch, matplotlib and lightning are missing. Their
    # copy is named by their content and made whole before it takes that name (a rename), so that
    # another run at the same time never reads a copy half written.
    digest = hashlib.sha256()
    for path in sorted(p for p in stubs.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(stubs)).encode() + b"\0" + path.read_bytes() + b"\0")
    mypypath = cache / f"stubs-{digest.hexdigest()[:16]}"
    if not mypypath.is_dir():
        cache.mkdir(parents=True, exist_ok=True)
        made = Path(tempfile.mkdtemp(dir=cache, prefix=".stubs-"))
        shutil.copytree(stubs, made / "yaml")
        try:
            made.rename(mypypath)
        except OSError:  # another run made it first
            shutil.rmtree(made)
    env = {**os.environ, "MYPYPATH": str(mypypath)}
    # The stubs found on MYPYPATH would be checked as this code is: they are not ours.
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nstrict = True\n\n[mypy-yaml,yaml.*]\nignore_errors = True\n")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-site-packages",
         "--config-file", str(config), "--cache-dir", str(cache / "cache"),
         str(SRC.relative_to(SRC.parent) / "hpc_helpers")],
        capture_output=True, text=True, env=env, check=False, timeout=600, cwd=SRC.parent,
    )
    assert result.returncode == 0, result.stdout + result.stderr
