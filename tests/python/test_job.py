"""job.paths: the folders a toolkit job reads and writes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from hpc_helpers import job
from hpc_helpers.job import JobEnvError, JobPaths, paths


@pytest.fixture
def weird_dir(tmp_path: Path) -> Path:
    """A folder whose path contains spaces and both kinds of quotes."""
    folder = tmp_path / 'my "quoted" dir\'s $(x)'
    folder.mkdir()
    return folder


def _set_job(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    monkeypatch.setenv("source_dir", str(root / "src" / "proj"))
    monkeypatch.setenv("scratch_dir", str(root / "scratch"))
    monkeypatch.setenv("SLURM_TMPDIR", str(root / "tmp"))


def test_all_from_environment(monkeypatch: pytest.MonkeyPatch, weird_dir: Path) -> None:
    _set_job(monkeypatch, weird_dir)
    monkeypatch.setenv("project_name", "demo")
    monkeypatch.setenv("exp_name", "lr sweep")
    monkeypatch.setenv("num_nodes", "2")
    monkeypatch.setenv("gpus_per_node", "4")
    p = paths()
    assert p == JobPaths(
        source_dir=weird_dir / "src" / "proj",
        project_name="demo",
        scratch_dir=weird_dir / "scratch",
        exp_name="lr sweep",
        slurm_tmpdir=weird_dir / "tmp",
        checkpoints=weird_dir / "scratch" / "lr sweep" / "checkpoints",
        outputs=weird_dir / "scratch" / "hpc_outputs",
        num_nodes=2,
        gpus_per_node=4,
    )


def test_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _set_job(monkeypatch, tmp_path)
    p = paths()
    assert p.project_name == "proj"
    assert p.exp_name == ""
    assert p.checkpoints == tmp_path / "scratch" / "checkpoints"
    assert p.num_nodes == 1
    assert p.gpus_per_node == 0


def test_slurm_fallbacks_for_sizes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _set_job(monkeypatch, tmp_path)
    monkeypatch.setenv("SLURM_JOB_NUM_NODES", "3")
    monkeypatch.setenv("SLURM_GPUS_ON_NODE", "2")
    p = paths()
    assert (p.num_nodes, p.gpus_per_node) == (3, 2)
    monkeypatch.delenv("SLURM_GPUS_ON_NODE")
    monkeypatch.setenv("SLURM_GPUS_PER_NODE", "a100:4")
    assert paths().gpus_per_node == 4


def test_frozen(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _set_job(monkeypatch, tmp_path)
    p = paths()
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.exp_name = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("missing", "how"),
    [
        ("source_dir", 'export source_dir="$PWD"'),
        ("scratch_dir", 'export scratch_dir="$HOME/scratch"'),
        ("SLURM_TMPDIR", 'export SLURM_TMPDIR="$(mktemp -d)"'),
    ],
)
def test_missing_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, missing: str, how: str
) -> None:
    _set_job(monkeypatch, tmp_path)
    monkeypatch.delenv(missing)
    with pytest.raises(JobEnvError) as info:
        paths()
    assert isinstance(info.value, RuntimeError)
    assert info.value.variable == missing
    message = str(info.value)
    assert message.startswith(f"{missing} is not set")
    assert "submit with hpc_files/job_submitter.sh" in message
    assert how in message


def test_empty_counts_as_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _set_job(monkeypatch, tmp_path)
    monkeypatch.setenv("scratch_dir", "")
    with pytest.raises(JobEnvError, match="scratch_dir is not set"):
        paths()


def test_outside_a_job_names_the_first_missing() -> None:
    with pytest.raises(JobEnvError, match=r"^source_dir is not set"):
        paths()


def test_tmpdir_fallback(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _set_job(monkeypatch, tmp_path)
    monkeypatch.delenv("SLURM_TMPDIR")
    monkeypatch.setattr(job, "_fallback_tmpdir", None)
    first = paths(tmpdir_fallback=True).slurm_tmpdir
    assert first.is_dir()
    assert first.name.startswith("hpc_tmpdir_")
    assert paths(tmpdir_fallback=True).slurm_tmpdir == first  # one per process
    first.rmdir()


def test_tmpdir_fallback_not_used_when_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _set_job(monkeypatch, tmp_path)
    assert paths(tmpdir_fallback=True).slurm_tmpdir == tmp_path / "tmp"


def test_explicit_env_mapping(tmp_path: Path) -> None:
    env = {"source_dir": "/a/b", "scratch_dir": "/s", "SLURM_TMPDIR": "/t", "exp_name": "e"}
    p = paths(env=env)
    assert p.checkpoints == Path("/s/e/checkpoints")
    assert p.project_name == "b"


@pytest.mark.parametrize("exp_name", ["/abs", "../up", "a/../../b"])
def test_exp_name_must_stay_inside_scratch(exp_name: str) -> None:
    env = {"source_dir": "/a", "scratch_dir": "/s", "SLURM_TMPDIR": "/t", "exp_name": exp_name}
    with pytest.raises(JobEnvError, match="exp_name must be a relative name"):
        paths(env=env)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("num_nodes", "0"),
        ("num_nodes", "two"),
        ("gpus_per_node", "-1"),
        ("SLURM_GPUS_ON_NODE", "x"),
    ],
)
def test_bad_numbers(name: str, value: str) -> None:
    env = {"source_dir": "/a", "scratch_dir": "/s", "SLURM_TMPDIR": "/t", name: value}
    with pytest.raises(JobEnvError) as info:
        paths(env=env)
    assert info.value.variable == name
    assert repr(value) in str(info.value)


def test_items_order() -> None:
    env = {"source_dir": "/a", "scratch_dir": "/s", "SLURM_TMPDIR": "/t"}
    assert [name for name, _ in paths(env=env).items()] == [
        f.name for f in dataclasses.fields(JobPaths)
    ]
