"""The master-port rule: derive_port, MASTER_PORT, find_free_port."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hpc_helpers import ports


@pytest.mark.parametrize(
    ("job_id", "port"),
    [
        (0, 20000),
        (1, 20001),
        (12767, 32767),
        (12768, 20000),
        (123456, 20000 + 123456 - 9 * 12768),
        (4_294_967_295, 20000 + 4_294_967_295 % 12768),
    ],
)
def test_derive_port(job_id: int, port: int) -> None:
    assert ports.derive_port(job_id) == port


@given(st.integers(min_value=0, max_value=2**63))
def test_derive_port_range(job_id: int) -> None:
    port = ports.derive_port(job_id)
    assert 20000 <= port <= 32767
    assert port == 20000 + job_id % 12768


def test_array_tasks_get_their_own_ports() -> None:
    # SLURM gives array tasks consecutive job ids: 1000 (task 0), 1001, 1002, ...
    assert len({ports.derive_port(1000 + task) for task in range(100)}) == 100


@pytest.mark.parametrize("bad", [-1, -20000])
def test_negative_job_id(bad: int) -> None:
    with pytest.raises(ValueError, match=f"job id must be >= 0, got {bad}"):
        ports.derive_port(bad)


@pytest.mark.parametrize("bad", ["12", 1.5, True, None])
def test_job_id_type(bad: object) -> None:
    with pytest.raises(TypeError):
        ports.derive_port(bad)  # type: ignore[arg-type]


def test_master_port_prefers_preset() -> None:
    assert ports.master_port(5, {"MASTER_PORT": "29501"}) == 29501
    assert ports.master_port(5, {"MASTER_PORT": ""}) == 20005
    assert ports.master_port(5, {}) == 20005


def test_master_port_reads_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MASTER_PORT", "31337")
    assert ports.master_port(5) == 31337
    monkeypatch.delenv("MASTER_PORT")
    assert ports.master_port(5) == 20005


@pytest.mark.parametrize("bad", ["abc", "0", "65536", "-1", "12.5", "1e4", "\uff12\uff12"])
def test_bad_preset_port(bad: str) -> None:
    with pytest.raises(ValueError, match=r"MASTER_PORT must be a port number 1\.\.65535") as info:
        ports.master_port(1, {"MASTER_PORT": bad})
    assert repr(bad) in str(info.value)


@pytest.fixture
def busy() -> Iterator[list[socket.socket]]:
    """Sockets that hold ports; closed at the end of the test."""
    held: list[socket.socket] = []
    yield held
    for sock in held:
        sock.close()


def _hold(held: list[socket.socket], port: int) -> bool:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen()
    except OSError:
        sock.close()
        return False
    held.append(sock)
    return True


def _free_job_id(span: int) -> int:
    """A job id whose first SPAN ports are all free now."""
    for job_id in range(7000, 20000, 97):
        start = ports.derive_port(job_id)
        if all(ports.is_free(start + i) for i in range(span)):
            return job_id
    pytest.skip("no run of free ports found")


def test_find_free_port_returns_derived_when_free() -> None:
    job_id = _free_job_id(1)
    assert ports.find_free_port(job_id) == ports.derive_port(job_id)


def test_find_free_port_skips_busy(busy: list[socket.socket]) -> None:
    job_id = _free_job_id(3)
    start = ports.derive_port(job_id)
    assert _hold(busy, start)
    assert _hold(busy, start + 1)
    assert not ports.is_free(start)
    assert ports.find_free_port(job_id) == start + 2


def test_find_free_port_wraps_inside_range(busy: list[socket.socket]) -> None:
    if not (ports.is_free(32767) and ports.is_free(20000)):
        pytest.skip("ports 32767/20000 are in use")
    assert _hold(busy, 32767)
    assert ports.find_free_port(12767) == 20000


def test_find_free_port_gives_up(busy: list[socket.socket]) -> None:
    job_id = _free_job_id(2)
    start = ports.derive_port(job_id)
    assert _hold(busy, start)
    assert _hold(busy, start + 1)
    with pytest.raises(ports.PortError, match=r"no free port on '127\.0\.0\.1' among 2 tried"):
        ports.find_free_port(job_id, tries=2)


@pytest.mark.parametrize("tries", [0, -1, 20001])
def test_find_free_port_bad_tries(tries: int) -> None:
    with pytest.raises(ValueError, match="tries must be"):
        ports.find_free_port(1, tries=tries)


def test_not_a_local_address() -> None:
    # 192.0.2.0/24 is TEST-NET-1: never an address of this machine.
    with pytest.raises(ports.PortError, match=r"cannot bind on host '192\.0\.2\.1'"):
        ports.find_free_port(1, host="192.0.2.1")


def test_ephemeral_port_is_bindable() -> None:
    port = ports.ephemeral_port()
    assert 1 <= port <= 65535


@pytest.mark.parametrize(("value", "port"), [("1", 1), ("65535", 65535), (" 29500 ", 29500)])
def test_parse_port(value: str, port: int) -> None:
    assert ports.parse_port(value) == port


@given(st.integers(min_value=0, max_value=2**63))
def test_derive_port_below_the_kernels_ephemeral_ports(job_id: int) -> None:
    # Linux hands out ports from 32768..60999 by default to every listener that binds port 0
    # (gloo's and NCCL's, any other job's) and to outgoing connections: a derived port there can
    # be taken between find_free_port's check and the launcher's listen (EADDRINUSE, seen on a
    # shared node: a 2-node torchrun job's rendezvous at 39191 failed).
    assert ports.derive_port(job_id) < 32768
