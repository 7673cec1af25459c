"""The job's folders and sizes, from the variables ``hpc_files/job_submitter.sh`` exports.

=================  ==============================================  =============================
attribute          from                                            when absent
=================  ==============================================  =============================
source_dir         ``source_dir``                                  JobEnvError
scratch_dir        ``scratch_dir``                                 JobEnvError
project_name       ``project_name``                                basename of source_dir
exp_name           ``exp_name``                                    ``""``
slurm_tmpdir       ``SLURM_TMPDIR``                                JobEnvError, or a temporary
                                                                   folder with tmpdir_fallback
checkpoints        ``checkpoints_dir`` (every job sets it: an array task's own folder), else
                   scratch_dir / exp_name / ``checkpoints``
outputs            scratch_dir / ``hpc_outputs``
num_nodes          ``num_nodes``, ``SLURM_JOB_NUM_NODES``,         1
                   ``SLURM_NNODES``
gpus_per_node      ``gpus_per_node``, ``SLURM_GPUS_ON_NODE``,      0
                   ``SLURM_GPUS_PER_NODE``
=================  ==============================================  =============================

An empty variable counts as absent. Paths are kept as given (not resolved).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .slurm_env import parse_gpu_count, parse_int

__all__ = ["JobEnvError", "JobPaths", "paths"]

_HOW = "submit with hpc_files/job_submitter.sh, or export {name}={example}"
_EXAMPLES = {
    "source_dir": '"$PWD"',
    "scratch_dir": '"$HOME/scratch"',
    "SLURM_TMPDIR": '"$(mktemp -d)"',
}


class JobEnvError(RuntimeError):
    """A job variable is missing or malformed; ``.variable`` names it."""

    def __init__(self, variable: str, message: str) -> None:
        super().__init__(message)
        self.variable = variable


def _missing(name: str) -> JobEnvError:
    how = _HOW.format(name=name, example=_EXAMPLES.get(name, "..."))
    return JobEnvError(name, f"{name} is not set (not inside a toolkit job?): {how}")


@dataclass(frozen=True)
class JobPaths:
    """Where a job reads and writes; see the module docstring for the sources."""

    source_dir: Path
    project_name: str
    scratch_dir: Path
    exp_name: str
    slurm_tmpdir: Path
    checkpoints: Path
    outputs: Path
    num_nodes: int
    gpus_per_node: int

    def items(self) -> list[tuple[str, str]]:
        """(name, value) pairs in field order, values as strings (what the CLI prints)."""
        return [
            ("source_dir", str(self.source_dir)),
            ("project_name", self.project_name),
            ("scratch_dir", str(self.scratch_dir)),
            ("exp_name", self.exp_name),
            ("slurm_tmpdir", str(self.slurm_tmpdir)),
            ("checkpoints", str(self.checkpoints)),
            ("outputs", str(self.outputs)),
            ("num_nodes", str(self.num_nodes)),
            ("gpus_per_node", str(self.gpus_per_node)),
        ]


_fallback_tmpdir: Path | None = None


def _fallback() -> Path:
    """One temporary folder per process, removed when the process exits."""
    global _fallback_tmpdir
    if _fallback_tmpdir is None or not _fallback_tmpdir.is_dir():
        made = Path(tempfile.mkdtemp(prefix="hpc_tmpdir_"))
        atexit.register(shutil.rmtree, made, ignore_errors=True)
        _fallback_tmpdir = made
    return _fallback_tmpdir


def _get(env: Mapping[str, str], *names: str) -> tuple[str, str] | None:
    for name in names:
        value = env.get(name, "")
        if value != "":
            return name, value
    return None


def _number(env: Mapping[str, str], names: tuple[str, ...], default: int, gpus: bool) -> int:
    found = _get(env, *names)
    if found is None:
        return default
    name, value = found
    try:
        if gpus and name.startswith("SLURM_"):
            return parse_gpu_count(value, name)
        return parse_int(value, name, minimum=0 if gpus else 1)
    except ValueError as exc:
        raise JobEnvError(name, str(exc)) from None


def paths(*, tmpdir_fallback: bool = False, env: Mapping[str, str] | None = None) -> JobPaths:
    """Reads the job's folders from ENV (default ``os.environ``).

    Raises JobEnvError (a RuntimeError) naming the variable and how to set it when
    ``source_dir`` or ``scratch_dir`` is missing, or ``SLURM_TMPDIR`` is missing and
    TMPDIR_FALLBACK is false. With TMPDIR_FALLBACK, a missing ``SLURM_TMPDIR`` becomes a fresh
    temporary folder (one per process, removed at exit).
    """
    environ = os.environ if env is None else env
    required: dict[str, str] = {}
    for name in ("source_dir", "scratch_dir"):
        value = environ.get(name, "")
        if value == "":
            raise _missing(name)
        required[name] = value
    source_dir = Path(required["source_dir"])
    scratch_dir = Path(required["scratch_dir"])
    tmp = environ.get("SLURM_TMPDIR", "")
    if tmp != "":
        slurm_tmpdir = Path(tmp)
    elif tmpdir_fallback:
        slurm_tmpdir = _fallback()
    else:
        raise _missing("SLURM_TMPDIR")
    project_name = environ.get("project_name", "") or source_dir.name
    exp_name = environ.get("exp_name", "")
    if Path(exp_name).is_absolute() or ".." in Path(exp_name).parts:
        raise JobEnvError(
            "exp_name", f"exp_name must be a relative name inside scratch_dir, got {exp_name!r}"
        )
    return JobPaths(
        source_dir=source_dir,
        project_name=project_name,
        scratch_dir=scratch_dir,
        exp_name=exp_name,
        slurm_tmpdir=slurm_tmpdir,
        checkpoints=Path(environ["checkpoints_dir"])
        if environ.get("checkpoints_dir")
        else scratch_dir / exp_name / "checkpoints",
        outputs=scratch_dir / "hpc_outputs",
        num_nodes=_number(
            environ, ("num_nodes", "SLURM_JOB_NUM_NODES", "SLURM_NNODES"), 1, gpus=False
        ),
        gpus_per_node=_number(
            environ,
            ("gpus_per_node", "SLURM_GPUS_ON_NODE", "SLURM_GPUS_PER_NODE"),
            0,
            gpus=True,
        ),
    )
