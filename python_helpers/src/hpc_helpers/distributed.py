"""Who am I in a distributed run, and ``torch.distributed`` set up from that.

:func:`resolve` reads, in this order:

1. **torchrun** (``RANK`` and ``WORLD_SIZE`` set): ``RANK``, ``LOCAL_RANK`` (default
   RANK % LOCAL_WORLD_SIZE),
   ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE`` (default WORLD_SIZE), ``GROUP_RANK`` (default
   RANK // LOCAL_WORLD_SIZE), ``MASTER_ADDR`` (default 127.0.0.1), ``MASTER_PORT`` (default the
   toolkit's port rule on ``SLURM_JOB_ID``, else 29500).
2. **slurm** (``SLURM_PROCID`` set and the task count known, i.e. a task of ``srun``):
   rank ``SLURM_PROCID``, local rank ``SLURM_LOCALID``, world size ``SLURM_STEP_NUM_TASKS`` /
   ``SLURM_NTASKS`` (else the sum of the tasks per node), node rank ``SLURM_NODEID``, tasks on
   this node from ``SLURM_STEP_TASKS_PER_NODE`` / ``SLURM_TASKS_PER_NODE`` (``2(x3),1`` form) or
   ``SLURM_NTASKS_PER_NODE``; master address ``MASTER_ADDR`` if preset, else the first host of
   ``SLURM_STEP_NODELIST`` / ``SLURM_JOB_NODELIST`` (never resolved or compared with
   ``hostname``); master port ``MASTER_PORT`` if preset, else :func:`ports.derive_port` of
   ``SLURM_JOB_ID`` (each array task has its own job id), or a free port for one task alone.
3. **single**: rank 0 of 1, ``MASTER_ADDR`` or 127.0.0.1, ``MASTER_PORT`` or a free port.

``HPC_DIST_SOURCE=torchrun|slurm|single`` forces a source (for example ``single`` in a batch
shell of a multi-task allocation, where ``SLURM_NTASKS`` describes tasks that ``srun`` has not
started). Malformed values raise ValueError quoting the variable and its value.

:func:`init` exports the result (``MASTER_ADDR``, ``MASTER_PORT``, ``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK``), selects the CUDA device of the local rank
and calls ``torch.distributed.init_process_group``, at world size 1 too: one rank runs the code
N ranks run (DDP, collectives). torch is imported only there.
"""

from __future__ import annotations

import datetime
import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import ports
from .slurm_env import SlurmEnv, parse_int

__all__ = ["SOURCES", "DistEnv", "cleanup", "init", "resolve"]

SOURCES = ("torchrun", "slurm", "single")
DEFAULT_TORCH_PORT = 29500


@dataclass(frozen=True)
class DistEnv:
    """This process's place in the run. ``source`` is one of ``SOURCES``."""

    rank: int
    local_rank: int
    world_size: int
    local_world_size: int
    node_rank: int
    master_addr: str
    master_port: int
    source: str

    @property
    def is_main(self) -> bool:
        """True on global rank 0 (the process that should log and save)."""
        return self.rank == 0

    @property
    def is_distributed(self) -> bool:
        return self.world_size > 1

    def as_env(self) -> dict[str, str]:
        """The torchrun-style variables describing this process."""
        return {
            "MASTER_ADDR": self.master_addr,
            "MASTER_PORT": str(self.master_port),
            "RANK": str(self.rank),
            "WORLD_SIZE": str(self.world_size),
            "LOCAL_RANK": str(self.local_rank),
            "LOCAL_WORLD_SIZE": str(self.local_world_size),
            "GROUP_RANK": str(self.node_rank),
        }

    def items(self) -> list[tuple[str, str]]:
        """(name, value) pairs in field order (what ``python -m hpc_helpers dist`` prints)."""
        return [
            ("source", self.source),
            ("rank", str(self.rank)),
            ("local_rank", str(self.local_rank)),
            ("world_size", str(self.world_size)),
            ("local_world_size", str(self.local_world_size)),
            ("node_rank", str(self.node_rank)),
            ("master_addr", self.master_addr),
            ("master_port", str(self.master_port)),
        ]


def _value(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "")
    return None if value == "" else value


def _int(env: Mapping[str, str], name: str, default: int | None, minimum: int = 0) -> int:
    value = _value(env, name)
    if value is None:
        if default is None:
            raise ValueError(f"{name} is not set")
        return default
    return parse_int(value, name, minimum)


def _preset_port(env: Mapping[str, str]) -> int | None:
    value = _value(env, "MASTER_PORT")
    return None if value is None else ports.parse_port(value)


def _check(d: DistEnv) -> DistEnv:
    if d.rank >= d.world_size:
        raise ValueError(f"{d.source}: rank {d.rank} is not below the world size {d.world_size}")
    if d.local_world_size > d.world_size:
        raise ValueError(
            f"{d.source}: {d.local_world_size} local processes exceed the world size {d.world_size}"
        )
    if d.local_rank >= d.local_world_size:
        raise ValueError(
            f"{d.source}: local rank {d.local_rank} is not below the local world size "
            f"{d.local_world_size}"
        )
    return d


def _from_torchrun(env: Mapping[str, str]) -> DistEnv:
    rank = _int(env, "RANK", None)
    world = _int(env, "WORLD_SIZE", None, minimum=1)
    local_world = _int(env, "LOCAL_WORLD_SIZE", world, minimum=1)
    port = _preset_port(env)
    if port is None:
        job_id = SlurmEnv(env).job_id
        port = DEFAULT_TORCH_PORT if job_id is None else ports.derive_port(job_id)
    return _check(
        DistEnv(
            rank=rank,
            local_rank=_int(env, "LOCAL_RANK", rank % local_world),
            world_size=world,
            local_world_size=local_world,
            node_rank=_int(env, "GROUP_RANK", rank // local_world),
            master_addr=_value(env, "MASTER_ADDR") or "127.0.0.1",
            master_port=port,
            source="torchrun",
        )
    )


def _slurm_world(slurm: SlurmEnv) -> int | None:
    world = slurm.ntasks
    if world is None:
        per_node = slurm.ntasks_per_node
        if per_node is not None and sum(per_node) > 0:
            world = sum(per_node)
    return world


def _from_slurm(env: Mapping[str, str]) -> DistEnv:
    slurm = SlurmEnv(env)
    rank = slurm.procid
    world = _slurm_world(slurm)
    if rank is None or world is None:
        raise ValueError("SLURM_PROCID and SLURM_NTASKS (or SLURM_STEP_NUM_TASKS) must be set")
    node_rank = slurm.nodeid or 0
    per_node = slurm.ntasks_per_node
    if per_node is not None:
        if node_rank >= len(per_node):
            raise ValueError(
                f"SLURM_NODEID {node_rank} is beyond the tasks-per-node list {per_node}"
            )
        local_world = per_node[node_rank]
    else:
        nnodes = slurm.nnodes or 1
        if world % nnodes:
            raise ValueError(
                f"cannot tell the tasks on this node: {world} tasks on {nnodes} nodes and no "
                "SLURM_STEP_TASKS_PER_NODE / SLURM_TASKS_PER_NODE"
            )
        local_world = world // nnodes
    addr = _value(env, "MASTER_ADDR")
    if addr is None:
        nodes = slurm.nodelist
        if nodes is not None:
            addr = nodes[0]
        elif local_world == world:
            addr = "127.0.0.1"
        else:
            raise ValueError(
                "cannot tell the master address: set SLURM_JOB_NODELIST or MASTER_ADDR"
            )
    port = _preset_port(env)
    if port is None and world == 1:
        # One task alone (a batch step without a launcher): no other process must find its port,
        # and the derived one may be taken on the node (a job whose id is 12768 apart, or a
        # client's ephemeral port): one the kernel reports free.
        port = ports.ephemeral_port()
    elif port is None:
        job_id = slurm.job_id
        if job_id is None:
            raise ValueError("cannot derive the master port: set SLURM_JOB_ID or MASTER_PORT")
        port = ports.derive_port(job_id)
    return _check(
        DistEnv(
            rank=rank,
            local_rank=slurm.localid or 0,
            world_size=world,
            local_world_size=local_world,
            node_rank=node_rank,
            master_addr=addr,
            master_port=port,
            source="slurm",
        )
    )


def _single(env: Mapping[str, str]) -> DistEnv:
    port = _preset_port(env)
    return DistEnv(
        rank=0,
        local_rank=0,
        world_size=1,
        local_world_size=1,
        node_rank=0,
        master_addr=_value(env, "MASTER_ADDR") or "127.0.0.1",
        master_port=ports.ephemeral_port() if port is None else port,
        source="single",
    )


def _detect(env: Mapping[str, str]) -> str:
    forced = _value(env, "HPC_DIST_SOURCE")
    if forced is not None:
        if forced not in SOURCES:
            raise ValueError(f"HPC_DIST_SOURCE must be one of {', '.join(SOURCES)}, got {forced!r}")
        return forced
    has_rank = _value(env, "RANK") is not None
    has_world = _value(env, "WORLD_SIZE") is not None
    if has_rank and has_world:
        return "torchrun"
    if has_rank != has_world:
        present, absent = ("RANK", "WORLD_SIZE") if has_rank else ("WORLD_SIZE", "RANK")
        raise ValueError(f"{present} is set but {absent} is not (torchrun sets both)")
    slurm = SlurmEnv(env)
    if slurm.procid is not None and _slurm_world(slurm) is not None:
        return "slurm"
    return "single"


def resolve(env: Mapping[str, str] | None = None) -> DistEnv:
    """This process's DistEnv from ENV (default ``os.environ``); see the module docstring."""
    environ = os.environ if env is None else env
    source = _detect(environ)
    if source == "torchrun":
        return _from_torchrun(environ)
    if source == "slurm":
        return _from_slurm(environ)
    return _single(environ)


def _torch() -> tuple[Any, Any]:
    try:
        torch = importlib.import_module("torch")
        tdist = importlib.import_module("torch.distributed")
    except ImportError as exc:
        raise RuntimeError(
            f"hpc_helpers.distributed.init needs torch ({exc}); install hpc-helpers[torch]"
        ) from None
    return torch, tdist


def init(
    backend: str | None = None,
    timeout_s: float = 1800.0,
    *,
    env: Mapping[str, str] | None = None,
    force_init: bool = False,
    set_device: bool = True,
) -> DistEnv:
    """Resolves this process's DistEnv, exports it and initialises ``torch.distributed``.

    * BACKEND: ``nccl`` when ``torch.cuda.is_available()``, else ``gloo``, unless given.
    * With CUDA and SET_DEVICE, the current device becomes the local rank's (device 0 when the
      process sees a single GPU, as with ``--gpus-per-task``).
    * The process group is made at every world size, 1 included (DDP on one GPU, a scaling
      study's 1x1 baseline), unless one already exists. FORCE_INIT is accepted for callers
      written when world size 1 skipped it; it changes nothing.
    * TIMEOUT_S bounds the rendezvous and every collective operation.
    """
    dist_env = resolve(env)
    os.environ.update(dist_env.as_env())
    torch, tdist = _torch()
    cuda = bool(torch.cuda.is_available())
    if cuda and set_device:
        count = int(torch.cuda.device_count())
        device = 0 if count == 1 else dist_env.local_rank
        if device >= count:
            raise RuntimeError(
                f"local rank {dist_env.local_rank} has no GPU: this process sees {count} GPUs"
            )
        torch.cuda.set_device(device)
    del force_init  # the group is always made (see above)
    if not tdist.is_available():
        raise RuntimeError("this torch build has no torch.distributed")
    if tdist.is_initialized():
        return dist_env
    tdist.init_process_group(
        backend=backend or ("nccl" if cuda else "gloo"),
        init_method="env://",
        rank=dist_env.rank,
        world_size=dist_env.world_size,
        timeout=datetime.timedelta(seconds=timeout_s),
    )
    return dist_env


def cleanup() -> None:
    """Destroys the default process group if one exists (call once at the end of training)."""
    _, tdist = _torch()
    if tdist.is_available() and tdist.is_initialized():
        tdist.destroy_process_group()
