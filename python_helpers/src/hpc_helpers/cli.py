"""``python -m hpc_helpers COMMAND``: the toolkit's Bash scripts call Python through this.

Commands and their output (stdout):

``profile FILE``
    Validates the cluster profile and prints ``hpc_profile_<key>=<value>`` lines (see
    :func:`hpc_helpers.profile.render_shell`), ready to ``source``.
``hostlist EXPR``
    The expanded hosts, one per line, in ``scontrol show hostnames`` order.
``port [--job-id N] [--check-free] [--host H] [--tries T]``
    The master port: ``MASTER_PORT`` when it is set, else ``20000 + N % 12768``; with
    ``--check-free`` the first port from there that can be bound on H (default 127.0.0.1).
    N defaults to ``SLURM_JOB_ID``.
``count-sweeps FILE [--allow-nongrid]``
    The number of grid points of a W&B sweep file; nothing for a random/bayes sweep with
    ``--allow-nongrid``.
``grid-config FILE I``
    Point I (0-based) of the grid as one line of JSON.
``sweep-commands FILE``
    For each grid point, in order, one line: the argument vector W&B's agent would run
    (:func:`hpc_helpers.sweeps.sweep_command`), its elements separated by the unit separator
    (0x1f). An element holding a newline or 0x1f is an error.
``sweep-info FILE``
    ``method=``, ``count=`` (empty unless grid), ``entity=``, ``project=`` lines.
``paths [--shell]``
    ``name=value`` lines for the job's folders (values shell-quoted with ``--shell``).
``dist``
    ``name=value`` lines for this process's rank, world size and master address/port.

Exit status: 0 on success; 2 on bad input or outside a job (``paths``), with one line on
stderr: ``hpc_helpers COMMAND: what is wrong, quoting the value``; 1 when the input is fine
but the work failed (no free port). Modules are imported per command, to start fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Callable

__all__ = ["main"]

PROG = "hpc_helpers"
USAGE_ERROR = 2
FAILURE = 1


class CommandError(Exception):
    """Ends a command with MESSAGE on stderr and exit STATUS."""

    def __init__(self, message: str, status: int = USAGE_ERROR) -> None:
        super().__init__(message)
        self.status = status


def _emit(lines: Sequence[str]) -> None:
    sys.stdout.write("".join(line + "\n" for line in lines))


def _profile(args: argparse.Namespace) -> int:
    from .profile import ProfileError, load_profile, render_shell

    try:
        text = render_shell(load_profile(args.file))
    except ProfileError as exc:
        raise CommandError(str(exc)) from None
    sys.stdout.write(text)
    return 0


def _hostlist(args: argparse.Namespace) -> int:
    from .hostlist import expand

    try:
        hosts = expand(args.expr)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    _emit(hosts)
    return 0


def _port(args: argparse.Namespace) -> int:
    from . import ports
    from .slurm_env import parse_int

    try:
        preset = os.environ.get("MASTER_PORT", "")
        if preset != "":
            _emit([str(ports.parse_port(preset))])
            return 0
        job_id = args.job_id
        if job_id is None:
            from_env = os.environ.get("SLURM_JOB_ID", "")
            if from_env == "":
                raise CommandError("no --job-id given and SLURM_JOB_ID is not set")
            job_id = parse_int(from_env, "SLURM_JOB_ID")
        if not args.check_free:
            _emit([str(ports.derive_port(job_id))])
            return 0
        port = ports.find_free_port(job_id, host=args.host, tries=args.tries)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    except ports.PortError as exc:
        raise CommandError(str(exc), FAILURE) from None
    _emit([str(port)])
    return 0


def _load_sweep(file: str) -> dict[str, object]:
    from .sweeps import SweepError, load_sweep

    try:
        return load_sweep(file)
    except SweepError as exc:
        raise CommandError(str(exc)) from None


def _count_sweeps(args: argparse.Namespace) -> int:
    from .sweeps import SweepError, count_grid

    config = _load_sweep(args.file)
    try:
        count = count_grid(config, allow_nongrid=args.allow_nongrid)
    except SweepError as exc:
        raise CommandError(f"{args.file!r}: {exc}") from None
    if count is not None:
        _emit([str(count)])
    return 0


def _grid_config(args: argparse.Namespace) -> int:
    import json

    from .sweeps import SweepError, grid_config

    config = _load_sweep(args.file)
    try:
        point = grid_config(config, args.index)
    except SweepError as exc:
        raise CommandError(f"{args.file!r}: {exc}") from None
    _emit([json.dumps(point, ensure_ascii=False, default=str)])
    return 0


def _sweep_commands(args: argparse.Namespace) -> int:
    from .sweeps import SweepError, iter_grid, sweep_command

    config = _load_sweep(args.file)
    lines: list[str] = []
    try:
        for index, point in enumerate(iter_grid(config)):
            argv = sweep_command(config, point)
            for word in argv:
                if "\n" in word or "\x1f" in word:
                    raise SweepError(f"point {index}: argument {word!r} holds a newline or 0x1f")
            lines.append("\x1f".join(argv))
    except SweepError as exc:
        raise CommandError(f"{args.file!r}: {exc}") from None
    _emit(lines)
    return 0


def _sweep_info(args: argparse.Namespace) -> int:
    from .sweeps import SweepError, count_grid

    config = _load_sweep(args.file)
    try:
        count = count_grid(config, allow_nongrid=True)
    except SweepError as exc:
        raise CommandError(f"{args.file!r}: {exc}") from None
    fields = {
        "method": str(config.get("method", "")),
        "count": "" if count is None else str(count),
        "entity": str(config.get("entity") or ""),
        "project": str(config.get("project") or ""),
    }
    _emit([f"{name}={value}" for name, value in fields.items()])
    return 0


def _paths(args: argparse.Namespace) -> int:
    import shlex

    from .job import JobEnvError, paths

    try:
        items = paths().items()
    except JobEnvError as exc:
        raise CommandError(str(exc)) from None
    quote: Callable[[str], str] = shlex.quote if args.shell else str
    _emit([f"{name}={quote(value)}" for name, value in items])
    return 0


def _dist(args: argparse.Namespace) -> int:
    from .distributed import resolve

    try:
        items = resolve().items()
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    _emit([f"{name}={value}" for name, value in items])
    return 0


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Helpers for the SLURM toolkit's Bash scripts.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("profile", help="validate a cluster profile; print hpc_profile_* lines")
    p.add_argument("file", metavar="FILE")
    p.set_defaults(func=_profile)

    p = sub.add_parser("hostlist", help="expand a SLURM hostlist, one host per line")
    p.add_argument("expr", metavar="EXPR")
    p.set_defaults(func=_hostlist)

    p = sub.add_parser("port", help="the master port of a job")
    p.add_argument("--job-id", type=int, metavar="N", help="default: $SLURM_JOB_ID")
    p.add_argument("--check-free", action="store_true", help="walk up to a bindable port")
    p.add_argument("--host", default="127.0.0.1", metavar="H", help="default: %(default)s")
    p.add_argument("--tries", type=int, default=50, metavar="T", help="default: %(default)s")
    p.set_defaults(func=_port)

    p = sub.add_parser("count-sweeps", help="number of grid points of a W&B sweep file")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--allow-nongrid", action="store_true", help="print nothing for random/bayes")
    p.set_defaults(func=_count_sweeps)

    p = sub.add_parser("grid-config", help="grid point I (0-based) of a sweep file, as JSON")
    p.add_argument("file", metavar="FILE")
    p.add_argument("index", type=int, metavar="I")
    p.set_defaults(func=_grid_config)

    p = sub.add_parser("sweep-commands", help="each grid point's command, 0x1f-separated")
    p.add_argument("file", metavar="FILE")
    p.set_defaults(func=_sweep_commands)

    p = sub.add_parser("sweep-info", help="method, grid size, entity and project of a sweep")
    p.add_argument("file", metavar="FILE")
    p.set_defaults(func=_sweep_info)

    p = sub.add_parser("paths", help="the job's folders as name=value lines")
    p.add_argument("--shell", action="store_true", help="quote values for the shell")
    p.set_defaults(func=_paths)

    p = sub.add_parser("dist", help="this process's rank, world size and master address/port")
    p.set_defaults(func=_dist)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs one command; returns the exit status (argparse exits 2 itself on bad usage)."""
    args = _parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        status = func(args)
        sys.stdout.flush()
    except CommandError as exc:
        sys.stderr.write(f"{PROG} {args.command}: {exc}\n")
        return exc.status
    except BrokenPipeError:
        # The reader went away (``| head -1``): stop quietly, as shell tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return FAILURE
    return status
