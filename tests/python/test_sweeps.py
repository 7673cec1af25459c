"""W&B sweep grids: counting, points, and the errors for sampled sweeps."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hpc_helpers.sweeps import SweepError, count_grid, grid_config, iter_grid, load_sweep

SIMPLE = """\
program: train.py
method: grid
metric: {name: val_loss, goal: minimize}
parameters:
  lr:
    values: [0.1, 0.01, 0.001]
  batch_size:
    values: [32, 64]
  epochs:
    value: 10
"""

NESTED = """\
method: grid
parameters:
  model:
    parameters:
      depth: {values: [2, 4]}
      act: {value: relu}
      head:
        parameters:
          width: {values: [64, 128, 256]}
  lr: {values: [0.1, 0.01]}
  layers: {values: [[64, 64], [128]]}
"""

SINGLE = """\
method: grid
parameters:
  seed: {value: 0}
"""

RANDOM = """\
method: random
parameters:
  lr: {distribution: log_uniform_values, min: 0.0001, max: 0.1}
  batch_size: {values: [32, 64]}
"""

BAYES = """\
method: bayes
metric: {name: loss, goal: minimize}
parameters:
  lr: {min: 0.0001, max: 0.1}
"""

GRID_WITH_DISTRIBUTION = """\
method: grid
parameters:
  lr: {distribution: uniform, min: 0, max: 1}
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


@pytest.fixture
def sweeps_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "sweeps with 'quotes' and spaces"
    folder.mkdir()
    return folder


@pytest.mark.parametrize(
    ("text", "count"),
    [(SIMPLE, 6), (NESTED, 2 * 3 * 2 * 2), (SINGLE, 1)],
)
def test_count_grid(sweeps_dir: Path, text: str, count: int) -> None:
    config = load_sweep(write(sweeps_dir, "sweeper.yml", text))
    assert count_grid(config) == count
    assert len(list(iter_grid(config))) == count


def test_simple_points_in_order(sweeps_dir: Path) -> None:
    config = load_sweep(write(sweeps_dir, "sweeper.yml", SIMPLE))
    points = [grid_config(config, i) for i in range(6)]
    assert points == [
        {"lr": lr, "batch_size": bs, "epochs": 10}
        for lr, bs in itertools.product([0.1, 0.01, 0.001], [32, 64])
    ]
    assert list(points[0]) == ["lr", "batch_size", "epochs"]  # file order


def test_nested_points(sweeps_dir: Path) -> None:
    config = load_sweep(write(sweeps_dir, "sweeper.yml", NESTED))
    assert grid_config(config, 0) == {
        "model": {"depth": 2, "act": "relu", "head": {"width": 64}},
        "lr": 0.1,
        "layers": [64, 64],
    }
    assert grid_config(config, 1) == {
        "model": {"depth": 2, "act": "relu", "head": {"width": 64}},
        "lr": 0.1,
        "layers": [128],
    }
    assert grid_config(config, 23) == {
        "model": {"depth": 4, "act": "relu", "head": {"width": 256}},
        "lr": 0.01,
        "layers": [128],
    }
    all_points = list(iter_grid(config))
    assert all_points == [grid_config(config, i) for i in range(24)]
    assert len({repr(p) for p in all_points}) == 24


def test_points_are_copies(sweeps_dir: Path) -> None:
    config = load_sweep(write(sweeps_dir, "sweeper.yml", NESTED))
    point = grid_config(config, 0)
    point["layers"].append(1)
    assert grid_config(config, 0)["layers"] == [64, 64]


def test_single_value(sweeps_dir: Path) -> None:
    config = load_sweep(write(sweeps_dir, "sweeper.yml", SINGLE))
    assert grid_config(config, 0) == {"seed": 0}


@pytest.mark.parametrize(("text", "method"), [(RANDOM, "random"), (BAYES, "bayes")])
def test_nongrid_methods(sweeps_dir: Path, text: str, method: str) -> None:
    config = load_sweep(write(sweeps_dir, "sweeper.yml", text))
    with pytest.raises(SweepError, match=f"^method {method} has no finite grid"):
        count_grid(config)
    assert count_grid(config, allow_nongrid=True) is None
    with pytest.raises(SweepError, match=f"^method {method} has no finite grid"):
        grid_config(config, 0)


@pytest.mark.parametrize(
    ("config", "words"),
    [
        (
            {
                "method": "grid",
                "parameters": {"lr": {"distribution": "uniform", "min": 0, "max": 1}},
            },
            "parameter 'lr' is sampled",
        ),
        ({"method": "grid", "parameters": {"lr": {"min": 0, "max": 1}}}, "so the grid is infinite"),
        (
            {"method": "grid", "parameters": {"a": {"parameters": {"b": {"max": 3}}}}},
            "parameter 'a.b' is sampled",
        ),
        ({"parameters": {"lr": {"values": [1]}}}, "has no method:"),
        ({"method": "hyperband", "parameters": {}}, "unknown method 'hyperband'"),
        ({"method": "grid"}, "parameters must be a non-empty mapping"),
        ({"method": "grid", "parameters": {}}, "parameters must be a non-empty mapping"),
        (
            {"method": "grid", "parameters": {"lr": {"values": []}}},
            "parameter 'lr': values must be a non-empty list, got []",
        ),
        ({"method": "grid", "parameters": {"lr": {"values": 3}}}, "got 3"),
        ({"method": "grid", "parameters": {"lr": 0.1}}, "parameter 'lr': expected a mapping"),
        ({"method": "grid", "parameters": {"lr": {"default": 1}}}, "got keys ['default']"),
        (
            {"method": "grid", "parameters": {"m": {"parameters": {}}}},
            "parameters of 'm' must be a non-empty mapping",
        ),
        ([1, 2], "must be a mapping"),
    ],
)
def test_bad_configs(config: Any, words: str) -> None:
    with pytest.raises(SweepError) as info:
        count_grid(config)
    assert words in str(info.value)


@pytest.mark.parametrize("index", [-1, 6, 100])
def test_index_out_of_range(sweeps_dir: Path, index: int) -> None:
    config = load_sweep(write(sweeps_dir, "sweeper.yml", SIMPLE))
    with pytest.raises(
        SweepError, match=rf"^index {index} is out of range: the grid has 6 points \(0\.\.5\)$"
    ):
        grid_config(config, index)


def test_grid_with_distribution_file(sweeps_dir: Path) -> None:
    config = load_sweep(write(sweeps_dir, "sweeper.yml", GRID_WITH_DISTRIBUTION))
    with pytest.raises(SweepError, match="give it values: or value:"):
        count_grid(config, allow_nongrid=True)


def test_json_sweep_file(sweeps_dir: Path) -> None:
    path = write(
        sweeps_dir, "sweep.json", '{"method": "grid", "parameters": {"a": {"values": [1, 2]}}}'
    )
    assert count_grid(load_sweep(path)) == 2


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("method: grid\nparameters: [\n", "bad YAML at line 3"),
        ("- 1\n", "a sweep configuration must be a mapping"),
        ("", "a sweep configuration must be a mapping"),
    ],
)
def test_load_errors(sweeps_dir: Path, text: str, words: str) -> None:
    path = write(sweeps_dir, "bad.yml", text)
    with pytest.raises(SweepError) as info:
        load_sweep(path)
    assert str(info.value).startswith(repr(str(path)) + ": ")
    assert words in str(info.value)


def test_missing_file(sweeps_dir: Path) -> None:
    path = sweeps_dir / "nope.yml"
    with pytest.raises(SweepError, match="cannot read: No such file or directory"):
        load_sweep(path)


@given(st.lists(st.integers(1, 4), min_size=1, max_size=4))
def test_grid_is_row_major(sizes: list[int]) -> None:
    config = {
        "method": "grid",
        "parameters": {f"p{k}": {"values": list(range(n))} for k, n in enumerate(sizes)},
    }
    expected = list(itertools.product(*(range(n) for n in sizes)))
    assert count_grid(config) == len(expected)
    for i, combo in enumerate(expected):
        assert tuple(grid_config(config, i).values()) == combo


@pytest.mark.parametrize(
    ("config", "point", "expected"),
    [
        (
            {"program": "train.py", "method": "grid"},
            {"lr": 0.1, "opt": {"beta": 2}},
            ["/usr/bin/env", "python", "train.py", "--lr=0.1", "--opt.beta=2"],
        ),
        (
            {
                "program": "t.py",
                "command": ["${interpreter}", "-u", "${program}", "${args_no_equals}"],
            },
            {"a": "x y", "b": True},
            ["python", "-u", "t.py", "--a", "x y", "--b", "True"],
        ),
        (
            {"command": ["run", "${args_no_hyphens}", "${args_json}"]},
            {"a": 1},
            ["run", "a=1", '{"a": 1}'],
        ),
    ],
)
def test_sweep_command_substitutes_wandb_macros(
    config: dict[str, object], point: dict[str, object], expected: list[str]
) -> None:
    from hpc_helpers.sweeps import sweep_command

    assert sweep_command(config, point) == expected


def test_sweep_command_without_program_quotes_the_macro() -> None:
    from hpc_helpers.sweeps import SweepError, sweep_command

    with pytest.raises(SweepError, match=r"\$\{program\}"):
        sweep_command({"method": "grid"}, {"a": 1})
