"""signals: parsing the warning signal and polling for it from a loop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from hpc_helpers.signals import CheckpointSignal, checkpoint_signal, parse_signal, warning_signal


@pytest.mark.parametrize(
    ("value", "sig"),
    [
        ("USR1", signal.SIGUSR1),
        ("SIGUSR1", signal.SIGUSR1),
        ("usr2", signal.SIGUSR2),
        (" TERM ", signal.SIGTERM),
        ("INT", signal.SIGINT),
        (str(int(signal.SIGUSR1)), signal.SIGUSR1),
    ],
)
def test_parse_signal(value: str, sig: signal.Signals) -> None:
    assert parse_signal(value) == sig


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("FOO", "unknown signal 'FOO'"),
        ("", "unknown signal ''"),
        ("999", "unknown signal '999'"),
        ("KILL", "signal 'KILL' cannot be caught"),
        ("SIGSTOP", "signal 'SIGSTOP' cannot be caught"),
    ],
)
def test_parse_signal_bad(value: str, words: str) -> None:
    with pytest.raises(ValueError, match=r"^HPC_WARNING_SIGNAL: ") as info:
        parse_signal(value)
    assert words in str(info.value)


def test_warning_signal_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    assert warning_signal() == signal.SIGUSR1
    monkeypatch.setenv("HPC_WARNING_SIGNAL", "USR2")
    assert warning_signal() == signal.SIGUSR2
    assert warning_signal({"HPC_WARNING_SIGNAL": ""}) == signal.SIGUSR1


def _wait_for(stop: CheckpointSignal) -> bool:
    for _ in range(200):
        if stop.received:
            return True
        time.sleep(0.01)
    return False


def test_signal_sets_received_and_restore() -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGUSR1, signal.SIGTERM)}
    stop = checkpoint_signal()
    try:
        assert stop.signals == (signal.SIGUSR1, signal.SIGTERM)
        assert not stop.received
        assert stop.first_signal is None
        os.kill(os.getpid(), signal.SIGUSR1)
        assert _wait_for(stop)
        assert stop.first_signal == signal.SIGUSR1
        os.kill(os.getpid(), signal.SIGTERM)  # caught: the test process lives on
        time.sleep(0.05)
        assert stop.first_signal == signal.SIGUSR1
        stop.clear()
        assert not stop.received
        os.kill(os.getpid(), signal.SIGTERM)
        assert _wait_for(stop)
        assert stop.first_signal == signal.SIGTERM
        assert "received=True" in repr(stop)
    finally:
        stop.restore()
    assert {s: signal.getsignal(s) for s in before} == before


def test_context_manager_and_options(monkeypatch: pytest.MonkeyPatch) -> None:
    term_before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setenv("HPC_WARNING_SIGNAL", "SIGUSR2")
    with checkpoint_signal(include_term=False) as stop:
        assert stop.signals == (signal.SIGUSR2,)
        assert signal.getsignal(signal.SIGTERM) == term_before
        os.kill(os.getpid(), signal.SIGUSR2)
        assert stop.wait(2.0)
    assert signal.getsignal(signal.SIGUSR2) == signal.SIG_DFL


def test_term_as_warning_signal_is_listed_once() -> None:
    with checkpoint_signal(env={"HPC_WARNING_SIGNAL": "TERM"}) as stop:
        assert stop.signals == (signal.SIGTERM,)


def test_bad_env_signal() -> None:
    with pytest.raises(ValueError, match="unknown signal 'NOPE'"):
        checkpoint_signal(env={"HPC_WARNING_SIGNAL": "NOPE"})


def test_main_thread_only() -> None:
    errors: list[BaseException] = []

    def body() -> None:
        try:
            checkpoint_signal()
        except RuntimeError as exc:
            errors.append(exc)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert len(errors) == 1
    assert "main thread" in str(errors[0])


LOOP = """
import sys, time
from hpc_helpers.signals import checkpoint_signal

stop = checkpoint_signal()
print("ready", flush=True)
for step in range(100000):
    time.sleep(0.01)
    if stop.received:
        print(f"checkpoint at step {step} after {stop.first_signal.name}", flush=True)
        sys.exit(0)
sys.exit(3)
"""


def test_training_loop_checkpoints_on_warning(
    tmp_path: Path, child_env: Callable[[Mapping[str, str] | None], dict[str, str]]
) -> None:
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        env=child_env({"HPC_WARNING_SIGNAL": "USR1"}),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGUSR1)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert out.startswith("checkpoint at step ")
    assert out.rstrip().endswith("after SIGUSR1")
