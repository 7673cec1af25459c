"""The toolkit's master-port rule (the one implementation; Bash calls it via the CLI).

* :func:`derive_port`: ``20000 + job_id % 12768``, in 20000..32767: below the ports Linux hands
  out by default (32768..60999) to every listener that binds port 0 (gloo's, NCCL's, other
  jobs') and to outgoing connections, which could take a derived port between the check of it
  and the launcher's listen. Every SLURM array task has its own ``SLURM_JOB_ID``, so concurrent
  array tasks get different ports too.
* :func:`master_port`: a preset ``MASTER_PORT`` in the environment wins, else :func:`derive_port`.
* :func:`find_free_port`: starts at :func:`derive_port` and walks up (wrapping inside
  20000..32767) to the first port that can be bound on HOST. Call it only where rank 0 will
  listen (the first node) and hand the result to every task: other nodes cannot see the ports
  that are busy there.
"""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Mapping

__all__ = [
    "PORT_BASE",
    "PORT_SPAN",
    "PortError",
    "derive_port",
    "ephemeral_port",
    "find_free_port",
    "is_free",
    "master_port",
    "parse_port",
]

PORT_BASE = 20000
PORT_SPAN = 12768


class PortError(RuntimeError):
    """No usable port could be found (as opposed to bad input, which is ValueError)."""


def _check_job_id(job_id: int) -> int:
    if isinstance(job_id, bool) or not isinstance(job_id, int):
        raise TypeError(f"job id must be an int, not {type(job_id).__name__}")
    if job_id < 0:
        raise ValueError(f"job id must be >= 0, got {job_id!r}")
    return job_id


def derive_port(job_id: int) -> int:
    """``20000 + job_id % 12768``: a port in 20000..32767 that differs between concurrent jobs."""
    return PORT_BASE + _check_job_id(job_id) % PORT_SPAN


def parse_port(value: str, name: str = "MASTER_PORT") -> int:
    """Parses a port number (1..65535); ValueError quoting NAME and VALUE otherwise."""
    text = value.strip()
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 65535:
        raise ValueError(f"{name} must be a port number 1..65535, got {value!r}")
    return int(text)


def master_port(job_id: int, env: Mapping[str, str] | None = None) -> int:
    """The preset ``MASTER_PORT`` of ENV (default ``os.environ``) if set, else derive_port."""
    environ = os.environ if env is None else env
    preset = environ.get("MASTER_PORT", "")
    if preset != "":
        return parse_port(preset)
    return derive_port(job_id)


def _bind_family(host: str, port: int) -> tuple[socket.AddressFamily, tuple[object, ...]]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise PortError(f"cannot resolve host {host!r}: {exc.strerror}") from None
    family, _, _, _, address = infos[0]
    return family, tuple(address)


def is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when PORT can be bound on HOST right now (SO_REUSEADDR off, so TIME_WAIT counts).

    Raises PortError when HOST is not an address of this machine (binding fails for every port).
    """
    family, address = _bind_family(host, port)
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 0)
        try:
            sock.bind(address)
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise PortError(f"cannot bind on host {host!r}: {exc.strerror}") from None
    return True


def find_free_port(job_id: int, host: str = "127.0.0.1", tries: int = 50) -> int:
    """The first bindable port among derive_port(job_id), +1, ... (TRIES ports, wrapping).

    Does not look at ``MASTER_PORT``; see :func:`master_port`. Raises PortError when all TRIES
    ports are busy.
    """
    start = derive_port(job_id)
    if isinstance(tries, bool) or not isinstance(tries, int) or not 1 <= tries <= PORT_SPAN:
        raise ValueError(f"tries must be an int in 1..{PORT_SPAN}, got {tries!r}")
    for step in range(tries):
        port = PORT_BASE + (start - PORT_BASE + step) % PORT_SPAN
        if is_free(port, host):
            return port
    last = PORT_BASE + (start - PORT_BASE + tries - 1) % PORT_SPAN
    raise PortError(f"no free port on {host!r} among {tries} tried ({start}..{last}, wrapping)")


def ephemeral_port(host: str = "127.0.0.1") -> int:
    """A port the kernel reports free on HOST (bind to port 0); for single-process runs."""
    family, address = _bind_family(host, 0)
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind(address)
        port: int = sock.getsockname()[1]
    return port
