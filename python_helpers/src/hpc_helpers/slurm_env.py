"""A typed, read-only view over the ``SLURM_*`` variables of a job or job step.

Every property returns ``None`` when its variable is absent (``restart_count`` gives 0) and raises
:class:`ValueError`, quoting the variable and its value, when the value cannot be parsed. Where
SLURM has a step-level variable (set by ``srun``) and a job-level one, the step's wins.

>>> env = SlurmEnv({"SLURM_JOB_ID": "42", "SLURM_STEP_TASKS_PER_NODE": "2(x2),1"})
>>> env.job_id, env.ntasks_per_node
(42, [2, 2, 1])
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from . import hostlist

__all__ = [
    "SlurmEnv",
    "parse_gpu_count",
    "parse_int",
    "parse_tasks_per_node",
]

_TASKS_ITEM = re.compile(r"([0-9]+)(?:\(x([0-9]+)\))?")


def parse_int(value: str, name: str = "value", minimum: int = 0) -> int:
    """Parses a decimal integer >= MINIMUM; ValueError quoting NAME and VALUE otherwise."""
    text = value.strip()
    if not (text.isascii() and text.isdigit()) or int(text) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(text)


def parse_tasks_per_node(value: str, name: str = "SLURM_TASKS_PER_NODE") -> list[int]:
    """Expands SLURM's tasks-per-node notation: ``"2(x3),1"`` -> ``[2, 2, 2, 1]``."""
    counts: list[int] = []
    for item in value.strip().split(","):
        match = _TASKS_ITEM.fullmatch(item.strip())
        if match is None or (match.group(2) is not None and int(match.group(2)) == 0):
            raise ValueError(f"{name}: bad tasks-per-node item {item!r} in {value!r}")
        counts.extend([int(match.group(1))] * int(match.group(2) or "1"))
    return counts


def parse_gpu_count(value: str, name: str = "SLURM_GPUS_ON_NODE") -> int:
    """GPUs in SLURM's ``[gres:][type:]count`` notation, summed over comma-separated items.

    ``"4"`` -> 4, ``"a100:2"`` -> 2, ``"gpu:a100:2,gpu:v100:1"`` -> 3.
    """
    total = 0
    for item in value.strip().split(","):
        count = item.strip().rsplit(":", 1)[-1]
        if not (count.isascii() and count.isdigit()):
            raise ValueError(f"{name}: bad GPU count {item!r} in {value!r}")
        total += int(count)
    return total


class SlurmEnv:
    """The ``SLURM_*`` variables of ENV (default: ``os.environ`` at construction time)."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        source = os.environ if env is None else env
        self._env: dict[str, str] = {
            k: v for k, v in source.items() if k.startswith(("SLURM_", "SLURMD_"))
        }

    def __repr__(self) -> str:
        return f"SlurmEnv(job_id={self.job_id!r}, procid={self.procid!r})"

    def raw(self, *names: str) -> tuple[str, str] | None:
        """(name, value) of the first of NAMES that is set and not empty."""
        for name in names:
            value = self._env.get(name, "")
            if value != "":
                return name, value
        return None

    def _int(self, *names: str, minimum: int = 0) -> int | None:
        found = self.raw(*names)
        return None if found is None else parse_int(found[1], found[0], minimum)

    @property
    def in_job(self) -> bool:
        """True inside a SLURM allocation (``SLURM_JOB_ID`` is set)."""
        return self.raw("SLURM_JOB_ID", "SLURM_JOBID") is not None

    @property
    def job_id(self) -> int | None:
        return self._int("SLURM_JOB_ID", "SLURM_JOBID")

    @property
    def array_job_id(self) -> int | None:
        return self._int("SLURM_ARRAY_JOB_ID")

    @property
    def array_task_id(self) -> int | None:
        return self._int("SLURM_ARRAY_TASK_ID")

    @property
    def step_id(self) -> str | None:
        found = self.raw("SLURM_STEP_ID", "SLURM_STEPID")
        return None if found is None else found[1]

    @property
    def procid(self) -> int | None:
        """Global rank of this task."""
        return self._int("SLURM_PROCID")

    @property
    def localid(self) -> int | None:
        """Rank of this task on its node."""
        return self._int("SLURM_LOCALID")

    @property
    def ntasks(self) -> int | None:
        return self._int("SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS", minimum=1)

    @property
    def nodeid(self) -> int | None:
        """Index of this node in the step (or job)."""
        return self._int("SLURM_NODEID")

    @property
    def nnodes(self) -> int | None:
        return self._int("SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES", minimum=1)

    @property
    def ntasks_per_node(self) -> list[int] | None:
        """Tasks on each node, in node order (from ``*_TASKS_PER_NODE`` in all forms).

        A plain ``SLURM_NTASKS_PER_NODE=N`` (the ``--ntasks-per-node`` option) gives N for each of
        ``nnodes`` nodes (one entry if nnodes is unknown).
        """
        found = self.raw("SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE")
        if found is not None:
            return parse_tasks_per_node(found[1], found[0])
        per_node = self._int("SLURM_NTASKS_PER_NODE", minimum=1)
        if per_node is None:
            return None
        return [per_node] * (self.nnodes or 1)

    @property
    def nodelist_expr(self) -> str | None:
        found = self.raw("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")
        return None if found is None else found[1]

    @property
    def nodelist(self) -> list[str] | None:
        """The step's (else the job's) nodes, expanded."""
        found = self.raw("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST")
        if found is None:
            return None
        try:
            return hostlist.expand(found[1])
        except ValueError as exc:
            raise ValueError(f"{found[0]}: {exc}") from None

    @property
    def nodename(self) -> str | None:
        """This node's name as slurmd knows it (``SLURMD_NODENAME``)."""
        found = self.raw("SLURMD_NODENAME")
        return None if found is None else found[1]

    @property
    def restart_count(self) -> int:
        """How often the job was requeued (0 when ``SLURM_RESTART_COUNT`` is absent)."""
        value = self._int("SLURM_RESTART_COUNT")
        return 0 if value is None else value

    @property
    def cpus_per_task(self) -> int | None:
        return self._int("SLURM_CPUS_PER_TASK", minimum=1)

    @property
    def gpus_on_node(self) -> int | None:
        """GPUs allocated on this node (``SLURM_GPUS_ON_NODE``, else ``SLURM_GPUS_PER_NODE``)."""
        found = self.raw("SLURM_GPUS_ON_NODE", "SLURM_GPUS_PER_NODE")
        return None if found is None else parse_gpu_count(found[1], found[0])
