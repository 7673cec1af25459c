"""``from hpc_helpers import scaling`` imports no framework: Lightning (and torch, whose _dynamo
Lightning pulls in) only when ``scaling.ThroughputCallback`` is first used, so a program that
imports the meter early starts as fast as without it (its warning handler comes no later).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

FRAMEWORKS = ("lightning", "pytorch_lightning", "torch", "torch._dynamo")


def _python(code: str, child_env: Callable[[Mapping[str, str] | None], dict[str, str]]) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=child_env(None),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_import_loads_no_framework(
    child_env: Callable[[Mapping[str, str] | None], dict[str, str]],
) -> None:
    code = (
        "import sys\n"
        "import hpc_helpers.scaling\n"
        "from hpc_helpers import scaling\n"
        f"print([name for name in {FRAMEWORKS!r} if name in sys.modules])\n"
    )
    assert _python(code, child_env) == "[]"


# In the pytest worker that imports Lightning for test_scaling_lightning anyway (its
# xdist_group): where nothing has imported Lightning in this process yet (it runs first there, as
# collected), the check runs here and Lightning's import (about 8 CPU-s) serves both modules; else
# in a child of its own, where Lightning is not imported yet either. Same code, same output.
@pytest.mark.xdist_group("lightning")
@pytest.mark.skipif(importlib.util.find_spec("lightning") is None, reason="no Lightning")
def test_callback_loads_lightning_when_used(
    child_env: Callable[[Mapping[str, str] | None], dict[str, str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = (
        "import sys\n"
        "from hpc_helpers import scaling\n"
        "before = 'lightning' in sys.modules\n"
        "from hpc_helpers.scaling import ThroughputCallback\n"
        "from lightning.pytorch import Callback\n"
        "print(before, issubclass(ThroughputCallback, Callback),\n"
        "      scaling.ThroughputCallback is ThroughputCallback, ThroughputCallback.__name__,\n"
        "      'ThroughputCallback' in scaling.__all__)\n"
    )
    if any(name in sys.modules for name in ("lightning", "pytorch_lightning")):
        out = _python(code, child_env)
    else:
        exec(code, {"__name__": "in_this_process"})  # the child's code, here
        out = capsys.readouterr().out.strip()
    assert out == "False True True ThroughputCallback True"


def test_unknown_attribute_is_an_attribute_error() -> None:
    from hpc_helpers import scaling

    name = "no_such_name"
    with pytest.raises(AttributeError, match=name):
        getattr(scaling, name)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="no torch")
def test_meter_of_a_program_without_torch_imports_none(
    tmp_path: Path, child_env: Callable[[Mapping[str, str] | None], dict[str, str]],
) -> None:
    """A program that never imported torch has no process group: the meter does not import torch
    (3 CPU-s) to learn that, and records the installed torch's version all the same."""
    code = (
        "import json, sys\n"
        "from hpc_helpers import scaling\n"
        f"meter = scaling.Throughput(warmup_steps=1, run_dir={str(tmp_path)!r})\n"
        "for _ in range(3):\n"
        "    meter.step(samples=2)\n"
        "metrics = meter.finish()\n"
        f"print([name for name in {FRAMEWORKS!r} if name in sys.modules], metrics['backend'],\n"
        "      metrics['torch_version'])\n"
    )
    # The installed distribution's version: torch.__version__ (2.13.0+cpu both), torch unimported.
    assert _python(code, child_env) == f"[] none {importlib.metadata.version('torch')}"
