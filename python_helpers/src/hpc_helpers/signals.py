"""Noticing the toolkit's "time is nearly up" signal from a training loop.

The submitter asks SLURM to send a warning signal some time before the job's limit (the
profile's ``signal.name`` and ``signal.lead_seconds``; the job exports its name as
``HPC_WARNING_SIGNAL``, default ``USR1``). :func:`checkpoint_signal` installs a handler for it,
and for ``SIGTERM`` (what ``scancel`` and the time limit send), that only records the signal;
the training loop polls ``.received`` and checkpoints::

    from hpc_helpers.signals import checkpoint_signal

    stop = checkpoint_signal()          # in the main thread, before training
    for step in range(start, steps):
        train_step()
        if stop.received:               # checked between steps: no work is cut in half
            save_checkpoint(step)
            break                       # exit soon: SLURM sends SIGKILL after KillWait

With SIGTERM caught the process no longer dies on it, so leave the loop promptly. Handlers can
only be installed from the main thread (Python's rule); ``stop.restore()`` (or leaving a
``with checkpoint_signal() as stop:`` block) puts the previous handlers back.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Mapping
from types import FrameType, TracebackType
from typing import Callable, Union

__all__ = [
    "DEFAULT_WARNING_SIGNAL",
    "CheckpointSignal",
    "checkpoint_signal",
    "parse_signal",
    "warning_signal",
]

DEFAULT_WARNING_SIGNAL = "USR1"
_UNCATCHABLE = frozenset({signal.SIGKILL, signal.SIGSTOP})

_Handler = Union[Callable[[int, Union[FrameType, None]], object], int, signal.Handlers, None]


def parse_signal(value: str, name: str = "HPC_WARNING_SIGNAL") -> signal.Signals:
    """``USR1``, ``SIGUSR1``, ``usr1`` or ``10`` -> ``signal.SIGUSR1``; ValueError otherwise."""
    text = value.strip().upper()
    try:
        if text.isascii() and text.isdigit():
            sig = signal.Signals(int(text))
        else:
            sig = signal.Signals[text if text.startswith("SIG") else "SIG" + text]
    except (KeyError, ValueError):
        raise ValueError(f"{name}: unknown signal {value!r}") from None
    if sig in _UNCATCHABLE:
        raise ValueError(f"{name}: signal {value!r} cannot be caught")
    return sig


def warning_signal(env: Mapping[str, str] | None = None) -> signal.Signals:
    """The toolkit's warning signal: ``HPC_WARNING_SIGNAL`` of ENV, default ``USR1``."""
    environ = os.environ if env is None else env
    return parse_signal(environ.get("HPC_WARNING_SIGNAL", "") or DEFAULT_WARNING_SIGNAL)


class CheckpointSignal:
    """Records the arrival of any of its signals; poll ``.received``."""

    def __init__(self, signals: tuple[signal.Signals, ...]) -> None:
        self.signals = signals
        self._event = threading.Event()
        self._first: signal.Signals | None = None
        self._previous: dict[signal.Signals, _Handler] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._first is None:
            self._first = signal.Signals(signum)
        self._event.set()

    def install(self) -> CheckpointSignal:
        """Installs the handlers (done by :func:`checkpoint_signal`); main thread only."""
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("checkpoint_signal() must be called from the main thread")
        for sig in self.signals:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    @property
    def received(self) -> bool:
        """True once any of the signals has arrived (until :meth:`clear`)."""
        return self._event.is_set()

    @property
    def first_signal(self) -> signal.Signals | None:
        """The first signal that arrived, or None."""
        return self._first

    def wait(self, timeout: float | None = None) -> bool:
        """Blocks until a signal arrives or TIMEOUT seconds pass; returns ``received``."""
        return self._event.wait(timeout)

    def clear(self) -> None:
        self._first = None
        self._event.clear()

    def restore(self) -> None:
        """Puts back the handlers that were installed before."""
        for sig, previous in self._previous.items():
            signal.signal(sig, signal.SIG_DFL if previous is None else previous)
        self._previous.clear()

    def __enter__(self) -> CheckpointSignal:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.restore()

    def __repr__(self) -> str:
        names = ",".join(sig.name for sig in self.signals)
        return f"CheckpointSignal(signals={names}, received={self.received})"


def checkpoint_signal(
    *, include_term: bool = True, env: Mapping[str, str] | None = None
) -> CheckpointSignal:
    """Installs handlers for the warning signal (and SIGTERM unless INCLUDE_TERM is false).

    Returns the CheckpointSignal to poll. Raises ValueError for a bad ``HPC_WARNING_SIGNAL`` and
    RuntimeError outside the main thread.
    """
    chosen = [warning_signal(env)]
    if include_term and signal.SIGTERM not in chosen:
        chosen.append(signal.SIGTERM)
    return CheckpointSignal(tuple(chosen)).install()
