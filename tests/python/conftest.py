"""Shared fixtures for the hpc_helpers tests.

The package is imported from ``python_helpers/src`` (as the Bash scripts use it), so the tests
run without installing it. Every test starts from an environment without SLURM, torchrun or
toolkit variables, so the suite behaves the same inside a job (``srun pytest``) and outside.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "python_helpers" / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

# No example database: nothing is written into the repository.
settings.register_profile("hpc", database=None, deadline=None)
settings.load_profile("hpc")

JOB_VARIABLES = (
    "source_dir",
    "scratch_dir",
    "project_name",
    "exp_name",
    "num_nodes",
    "gpus_per_node",
)
TORCH_VARIABLES = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_RUN_ID",
)


def _foreign(name: str) -> bool:
    return (
        name.startswith(("SLURM_", "SLURMD_", "HPC_"))
        or name in JOB_VARIABLES
        or name in TORCH_VARIABLES
    )


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Removes SLURM, torchrun and toolkit variables for the duration of each test."""
    for name in list(os.environ):
        if _foreign(name):
            monkeypatch.delenv(name)


def clean_environ(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """os.environ without foreign variables, PYTHONPATH set to the package, plus EXTRA."""
    env = {k: v for k, v in os.environ.items() if not _foreign(k)}
    env["PYTHONPATH"] = str(SRC)
    env.pop("PYTHONSTARTUP", None)
    if extra:
        env.update(extra)
    return env


def without_plot(monkeypatch: pytest.MonkeyPatch) -> None:
    """scaling_report as where matplotlib is missing (plot() False: test_without_matplotlib), for
    a report whose plot is not what its test is about or was drawn from the same input (summary
    and title) by another case: drawing scaling.png and scaling.svg is nearly all of a report's
    CPU time (a second each)."""
    from hpc_helpers import scaling_report

    monkeypatch.setattr(scaling_report, "plot", lambda *args, **kwargs: False)


@dataclass(frozen=True)
class CliResult:
    status: int
    stdout: str
    stderr: str


def run_cli(*args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> CliResult:
    """Runs ``python -m hpc_helpers ARGS`` in a fresh interpreter with PYTHONPATH set."""
    proc = subprocess.run(
        [sys.executable, "-m", "hpc_helpers", *args],
        env=clean_environ(env),
        cwd=cwd or REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def run_main(main: Callable[[Sequence[str]], int], module: str, *args: str,
             timeout: int = 60) -> CliResult:
    """``main(ARGS)`` of MODULE in this process, its stdout and stderr captured, with a deadline:
    a hang (a FIFO opened for reading) is a failure, not a stuck suite. Without the main thread
    (no SIGALRM there), ``python -m MODULE ARGS`` in a child with that timeout instead."""
    if threading.current_thread() is not threading.main_thread():
        proc = subprocess.run([sys.executable, "-m", module, *args], env=clean_environ(),
                              capture_output=True, text=True, timeout=timeout, check=False)
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"{module} {' '.join(args)}: still running after {timeout} s")

    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(timeout)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(list(args))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return CliResult(status, out.getvalue(), err.getvalue())


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    """run_cli: ``cli("hostlist", "n[1-2]", env={...})``."""
    return run_cli


@pytest.fixture
def child_env() -> Callable[[Mapping[str, str] | None], dict[str, str]]:
    """clean_environ: the environment for a child process, plus the given variables."""
    return clean_environ


@pytest.fixture(scope="session")
def slurm_conf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A minimal slurm.conf, enough for ``scontrol show hostnames`` (no daemon is started)."""
    conf = tmp_path_factory.mktemp("slurm") / "slurm.conf"
    conf.write_text(
        "ClusterName=t\nSlurmctldHost=localhost\nNodeName=n1 CPUs=1\nPartitionName=p Nodes=n1\n"
    )
    return conf


class Scontrol:
    """``scontrol show hostnames EXPR``; None when scontrol rejects EXPR.

    A bad range in the third-last or an earlier bracket group is only logged by SLURM 22.05 (its
    recursion drops the error code), so any logged error counts as a rejection.
    """

    def __init__(self, conf: Path) -> None:
        self.env = {**os.environ, "SLURM_CONF": str(conf)}

    def hostnames(self, expr: str) -> list[str] | None:
        proc = subprocess.run(
            ["scontrol", "--", "show", "hostnames", expr],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if "Invalid hostlist" in proc.stderr or "error:" in proc.stderr:
            return None
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.splitlines()


@pytest.fixture(scope="session")
def scontrol(slurm_conf: Path) -> Scontrol:
    if shutil.which("scontrol") is None:
        pytest.skip("scontrol is not installed")
    checker = Scontrol(slurm_conf)
    if checker.hostnames("n[1-2]") != ["n1", "n2"]:
        pytest.skip("scontrol show hostnames does not work here")
    return checker
