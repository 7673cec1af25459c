"""Weights & Biases sweep configurations as finite grids (one SLURM array task per point).

A parameter is a mapping with one of:

* ``values: [a, b, ...]`` - counts ``len(values)`` (must not be empty);
* ``value: x`` - a constant, counts 1;
* ``parameters: {...}`` - a nested block; its leaves count like top-level ones and its point
  is a nested dict;
* ``distribution:`` / ``min:`` / ``max:`` (``mu``, ``sigma``, ``q``) - sampled, so no finite grid.

``method: grid`` gives the product of the counts. ``random`` and ``bayes`` sample until stopped:
:func:`count_grid` raises :class:`SweepError` for them unless ``allow_nongrid=True`` (then it
returns None). A distribution in a grid sweep is always an error.

Point ``i`` (0-based) of the grid takes the parameters in file order, depth first, the last one
varying fastest (``itertools.product`` order)::

    parameters: {lr: {values: [0.1, 0.01]}, opt: {parameters: {beta: {values: [1, 2, 3]}}}}
    # 6 points; point 1 = {"lr": 0.1, "opt": {"beta": 2}},
    #           point 3 = {"lr": 0.01, "opt": {"beta": 1}}
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_COMMAND",
    "METHODS",
    "SweepError",
    "count_grid",
    "grid_config",
    "iter_grid",
    "load_sweep",
    "sweep_command",
]

METHODS = ("grid", "random", "bayes")
_SAMPLED_KEYS = ("distribution", "min", "max", "mu", "sigma", "q")

# A leaf: its path of names and its values.
_Leaf = tuple[tuple[str, ...], list[Any]]


class SweepError(ValueError):
    """The sweep configuration cannot be used as asked."""


def _dotted(path: tuple[str, ...]) -> str:
    return ".".join(path)


def _leaves(parameters: object, prefix: tuple[str, ...] = ()) -> list[_Leaf]:
    where = "parameters" if not prefix else f"parameters of {_dotted(prefix)!r}"
    if not isinstance(parameters, Mapping) or not parameters:
        raise SweepError(f"{where} must be a non-empty mapping of parameter names to specs")
    leaves: list[_Leaf] = []
    for name, spec in parameters.items():
        path = (*prefix, str(name))
        label = repr(_dotted(path))
        if not isinstance(spec, Mapping):
            raise SweepError(
                f"parameter {label}: expected a mapping with values:, value:, parameters: or a "
                f"distribution, got {spec!r}"
            )
        if "values" in spec:
            values = spec["values"]
            if not isinstance(values, list) or not values:
                raise SweepError(
                    f"parameter {label}: values must be a non-empty list, got {values!r}"
                )
            leaves.append((path, values))
        elif "value" in spec:
            leaves.append((path, [spec["value"]]))
        elif "parameters" in spec:
            leaves.extend(_leaves(spec["parameters"], path))
        elif any(key in spec for key in _SAMPLED_KEYS):
            sampled = {k: spec[k] for k in _SAMPLED_KEYS if k in spec}
            raise SweepError(
                f"parameter {label} is sampled ({sampled}), so the grid is infinite: "
                "give it values: or value:"
            )
        else:
            raise SweepError(
                f"parameter {label}: expected values:, value:, parameters: or a distribution, "
                f"got keys {sorted(map(str, spec))}"
            )
    return leaves


def _method(config: object) -> tuple[Mapping[str, Any], str]:
    if not isinstance(config, Mapping):
        raise SweepError(f"a sweep configuration must be a mapping, got {config!r}")
    method = config.get("method")
    if method is None:
        raise SweepError("the sweep configuration has no method: (grid, random or bayes)")
    if method not in METHODS:
        raise SweepError(f"unknown method {method!r} (expected grid, random or bayes)")
    return config, str(method)


def count_grid(config: Mapping[str, Any], *, allow_nongrid: bool = False) -> int | None:
    """How many points the sweep's grid has; None for random/bayes with ALLOW_NONGRID.

    Raises SweepError for random/bayes without ALLOW_NONGRID, for a sampled parameter in a grid,
    and for malformed parameters.
    """
    mapping, method = _method(config)
    if method != "grid":
        if allow_nongrid:
            return None
        raise SweepError(
            f"method {method} has no finite grid (it samples until stopped); "
            "use method: grid, or allow non-grid sweeps (--allow-nongrid)"
        )
    count = 1
    for _, values in _leaves(mapping.get("parameters")):
        count *= len(values)
    return count


def _point(leaves: list[_Leaf], index: int) -> dict[str, Any]:
    choices: list[int] = []
    rest = index
    for _, values in reversed(leaves):
        rest, choice = divmod(rest, len(values))
        choices.append(choice)
    choices.reverse()
    point: dict[str, Any] = {}
    for (path, values), choice in zip(leaves, choices):
        node = point
        for name in path[:-1]:
            node = node.setdefault(name, {})
        node[path[-1]] = copy.deepcopy(values[choice])
    return point


def grid_config(config: Mapping[str, Any], index: int) -> dict[str, Any]:
    """The parameters of point INDEX (0-based) of the grid; nested blocks give nested dicts."""
    count = count_grid(config)
    assert count is not None
    if isinstance(index, bool) or not isinstance(index, int):
        raise SweepError(f"the index must be an int, got {index!r}")
    if not 0 <= index < count:
        raise SweepError(
            f"index {index} is out of range: the grid has {count} points (0..{count - 1})"
        )
    return _point(_leaves(config.get("parameters")), index)


def iter_grid(config: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every point of the grid, in index order."""
    count = count_grid(config)
    assert count is not None
    leaves = _leaves(config.get("parameters"))
    for index in range(count):
        yield _point(leaves, index)


def load_sweep(path: str | Path) -> dict[str, Any]:
    """Reads a sweep configuration (YAML or JSON); SweepError quoting PATH when unusable."""
    import yaml

    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise SweepError(f"{file!r}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise SweepError(f"{file!r}: not UTF-8 text") from None
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = "" if mark is None else f" at line {mark.line + 1}, column {mark.column + 1}"
        problem = " ".join(str(exc.problem or exc.context or "syntax error").split())
        raise SweepError(f"{file!r}: bad YAML{where}: {problem}") from None
    except yaml.YAMLError as exc:
        raise SweepError(f"{file!r}: bad YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict):
        raise SweepError(f"{file!r}: a sweep configuration must be a mapping")
    return data


# W&B's default ``command:`` of a sweep.
DEFAULT_COMMAND = ("${env}", "${interpreter}", "${program}", "${args}")


def _flat(point: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    items: list[tuple[str, Any]] = []
    for name, value in point.items():
        key = f"{prefix}{name}"
        if isinstance(value, Mapping):
            items.extend(_flat(value, key + "."))
        else:
            items.append((key, value))
    return items


def _text(value: Any) -> str:
    return str(value)


def sweep_command(config: Mapping[str, Any], point: Mapping[str, Any]) -> list[str]:
    """The argument vector W&B's agent would run for POINT: the sweep's ``command:`` (default
    ``${env} ${interpreter} ${program} ${args}``) with its macros substituted: ``${env}`` ->
    ``/usr/bin/env``, ``${interpreter}`` -> ``python``, ``${program}`` -> ``program:``,
    ``${args}`` -> ``--name=value`` each, ``${args_no_equals}`` -> ``--name value``,
    ``${args_no_hyphens}`` -> ``name=value``, ``${args_json}`` -> one JSON argument. Nested
    parameters are named with dots (``opt.beta``). Other text is kept as written.
    """
    import json

    command = config.get("command", DEFAULT_COMMAND)
    if not isinstance(command, (list, tuple)) or not all(isinstance(c, str) for c in command):
        raise SweepError("command must be a list of strings")
    program = config.get("program")
    items = _flat(point)
    expansions: dict[str, list[str]] = {
        "${env}": ["/usr/bin/env"],
        "${interpreter}": ["python"],
        "${args}": [f"--{k}={_text(v)}" for k, v in items],
        "${args_no_equals}": [part for k, v in items for part in (f"--{k}", _text(v))],
        "${args_no_hyphens}": [f"{k}={_text(v)}" for k, v in items],
        "${args_json}": [json.dumps(dict(point), default=str)],
    }
    argv: list[str] = []
    for word in command:
        if word in expansions:
            argv.extend(expansions[word])
        elif word == "${program}":
            if not isinstance(program, str) or not program:
                raise SweepError("the command uses ${program} but the sweep has no program:")
            argv.append(program)
        else:
            argv.append(word)
    return argv
