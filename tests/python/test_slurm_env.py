"""SlurmEnv and its parsers."""

from __future__ import annotations

import re

import pytest

from hpc_helpers.slurm_env import SlurmEnv, parse_gpu_count, parse_int, parse_tasks_per_node


@pytest.mark.parametrize(
    ("value", "counts"),
    [
        ("1", [1]),
        ("4", [4]),
        ("2(x3),1", [2, 2, 2, 1]),
        ("2(x3)", [2, 2, 2]),
        ("1,2,3", [1, 2, 3]),
        ("8(x2),4(x1),2", [8, 8, 4, 2]),
        (" 2(x2) ", [2, 2]),
        ("16(x128)", [16] * 128),
    ],
)
def test_parse_tasks_per_node(value: str, counts: list[int]) -> None:
    assert parse_tasks_per_node(value) == counts


@pytest.mark.parametrize(
    ("value", "item"),
    [
        ("", ""),
        ("a", "a"),
        ("2(x3", "2(x3"),
        ("2x3", "2x3"),
        ("2(3)", "2(3)"),
        ("2(x0)", "2(x0)"),
        ("2(x3),", ""),
        ("-1", "-1"),
        ("2(x-1)", "2(x-1)"),
        ("(x3)", "(x3)"),
    ],
)
def test_parse_tasks_per_node_bad(value: str, item: str) -> None:
    with pytest.raises(ValueError, match="bad tasks-per-node item") as info:
        parse_tasks_per_node(value, "SLURM_TASKS_PER_NODE")
    message = str(info.value)
    assert message.startswith("SLURM_TASKS_PER_NODE: ")
    assert f"{item!r} in {value!r}" in message


@pytest.mark.parametrize(
    ("value", "count"),
    [("4", 4), ("0", 0), ("a100:2", 2), ("gpu:a100:2", 2), ("a100:2,v100:1", 3)],
)
def test_parse_gpu_count(value: str, count: int) -> None:
    assert parse_gpu_count(value) == count


@pytest.mark.parametrize("value", ["", "a100", "a100:", "two", "a100:x"])
def test_parse_gpu_count_bad(value: str) -> None:
    with pytest.raises(ValueError, match="bad GPU count"):
        parse_gpu_count(value)


@pytest.mark.parametrize(("value", "number"), [("0", 0), ("17", 17), (" 3 ", 3), ("007", 7)])
def test_parse_int(value: str, number: int) -> None:
    assert parse_int(value, "X") == number


@pytest.mark.parametrize("value", ["", "-1", "1.0", "x", "1e3", "٣"])
def test_parse_int_bad(value: str) -> None:
    with pytest.raises(ValueError, match=f"X must be an integer >= 0, got {value!r}"):
        parse_int(value, "X")


def test_parse_int_minimum() -> None:
    with pytest.raises(ValueError, match="N must be an integer >= 1, got '0'"):
        parse_int("0", "N", minimum=1)


FULL_STEP = {
    "SLURM_JOB_ID": "1234",
    "SLURM_ARRAY_JOB_ID": "1200",
    "SLURM_ARRAY_TASK_ID": "34",
    "SLURM_STEP_ID": "0",
    "SLURM_PROCID": "5",
    "SLURM_LOCALID": "1",
    "SLURM_NTASKS": "8",
    "SLURM_STEP_NUM_TASKS": "6",
    "SLURM_NODEID": "2",
    "SLURM_NNODES": "3",
    "SLURM_JOB_NUM_NODES": "4",
    "SLURM_TASKS_PER_NODE": "2(x4)",
    "SLURM_STEP_TASKS_PER_NODE": "2(x3)",
    "SLURM_JOB_NODELIST": "gpu[01-04]",
    "SLURM_STEP_NODELIST": "gpu[02-04]",
    "SLURMD_NODENAME": "gpu04",
    "SLURM_RESTART_COUNT": "2",
    "SLURM_CPUS_PER_TASK": "4",
    "SLURM_GPUS_ON_NODE": "2",
    "UNRELATED": "x",
}


def test_full_step_view() -> None:
    env = SlurmEnv(FULL_STEP)
    assert env.in_job
    assert env.job_id == 1234
    assert env.array_job_id == 1200
    assert env.array_task_id == 34
    assert env.step_id == "0"
    assert env.procid == 5
    assert env.localid == 1
    assert env.ntasks == 6  # the step's
    assert env.nodeid == 2
    assert env.nnodes == 3
    assert env.ntasks_per_node == [2, 2, 2]  # the step's
    assert env.nodelist_expr == "gpu[02-04]"
    assert env.nodelist == ["gpu02", "gpu03", "gpu04"]
    assert env.nodename == "gpu04"
    assert env.restart_count == 2
    assert env.cpus_per_task == 4
    assert env.gpus_on_node == 2


def test_outside_a_job() -> None:
    env = SlurmEnv({})
    assert not env.in_job
    for name in (
        "job_id",
        "array_job_id",
        "array_task_id",
        "step_id",
        "procid",
        "localid",
        "ntasks",
        "nodeid",
        "nnodes",
        "ntasks_per_node",
        "nodelist",
        "nodelist_expr",
        "nodename",
        "cpus_per_task",
        "gpus_on_node",
    ):
        assert getattr(env, name) is None, name
    assert env.restart_count == 0


def test_job_level_fallbacks() -> None:
    env = SlurmEnv(
        {
            "SLURM_JOBID": "9",
            "SLURM_NPROCS": "4",
            "SLURM_NODELIST": "n[1-2]",
            "SLURM_JOB_NUM_NODES": "2",
            "SLURM_NTASKS_PER_NODE": "2",
        }
    )
    assert env.job_id == 9
    assert env.ntasks == 4
    assert env.nodelist == ["n1", "n2"]
    assert env.nnodes == 2
    assert env.ntasks_per_node == [2, 2]


def test_empty_values_count_as_absent() -> None:
    assert SlurmEnv({"SLURM_JOB_ID": ""}).job_id is None


def test_reads_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "3")
    env = SlurmEnv()
    assert (env.job_id, env.array_task_id) == (77, 3)


@pytest.mark.parametrize(
    ("name", "value", "prop"),
    [
        ("SLURM_JOB_ID", "12a", "job_id"),
        ("SLURM_PROCID", "-1", "procid"),
        ("SLURM_NTASKS", "0", "ntasks"),
        ("SLURM_ARRAY_TASK_ID", "x", "array_task_id"),
        ("SLURM_RESTART_COUNT", "one", "restart_count"),
        ("SLURM_TASKS_PER_NODE", "2(x", "ntasks_per_node"),
        ("SLURM_JOB_NODELIST", "n[2-1]", "nodelist"),
    ],
)
def test_bad_values_quote_variable_and_value(name: str, value: str, prop: str) -> None:
    with pytest.raises(ValueError, match=re.escape(name)) as info:
        getattr(SlurmEnv({name: value}), prop)
    assert repr(value) in str(info.value)
