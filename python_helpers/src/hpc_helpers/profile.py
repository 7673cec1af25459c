"""Cluster profiles: YAML files under ``hpc_files/clusters/``, validated and flattened for Bash.

Schema (every key optional except ``name``; the value shown is the default)::

    name: cedar                     # required; must equal the file's stem
    description: ''
    hostname_pattern: null          # POSIX ERE matched against the login host's name;
                                    #   null = never chosen automatically
    account: {default: null, allowed: []}        # allowed empty = any account
    partition: null
    partition_routed: false         # true: the cluster puts a job without a partition into
                                    #   one itself (a job_submit plugin), even with no default
    gpu: {types: [], default_type: null, max_per_node: null, gres_name: gpu}
    tmpdir: {provided: auto, root: '${TMPDIR:-/tmp}'}   # provided: true, false or auto;
                                                        #   root is kept literal
    modules: []
    venv: {system_site_packages: false}          # true: the venv also sees the system packages
    array_throttle: null            # int >= 1, or null for no throttle
    signal: {name: USR1, lead_seconds: 300}      # name without the SIG prefix
    defaults: {time: '01:00:00', mem_per_gpu: null, mem_no_gpu: null, cpus: 1, gpus: 0}
                                    # memory null: not asked for; SLURM's own default applies

A section given as ``null`` (``gpu:`` alone) takes all its defaults. Times such as ``1:00:00``
may be written unquoted: they stay strings (YAML 1.1 would read them as base-60 numbers); a
plain integer time is minutes, as for ``sbatch --time``. Duplicate keys are refused.

:func:`render_shell` prints one Bash assignment per leaf, ``hpc_profile_<path joined by _>``,
every leaf present (defaults filled in), values quoted with :func:`shlex.quote`, lists as Bash
arrays, null as ``''`` and booleans as ``true`` / ``false``::

    hpc_profile_name=cedar
    hpc_profile_gpu_types=(v100l p100)
    hpc_profile_tmpdir_root='${TMPDIR:-/tmp}'
"""

from __future__ import annotations

import re
import shlex
import signal
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

__all__ = [
    "DEFAULTS",
    "Profile",
    "ProfileError",
    "is_slurm_mem",
    "is_slurm_time",
    "load_profile",
    "render_shell",
    "validate",
]

Value = Union[str, int, bool, None, tuple[str, ...]]
"""A profile leaf: str, int, bool, None, or a tuple of str (a list)."""


class ProfileError(ValueError):
    """A profile cannot be used; ``.file`` and ``.key`` (dotted, or None) say where."""

    def __init__(self, file: str, key: str | None, problem: str) -> None:
        where = repr(file) if key is None else f"{file!r}, key {key!r}"
        super().__init__(f"{where}: {problem}")
        self.file = file
        self.key = key
        self.problem = problem


@dataclass(frozen=True)
class _Leaf:
    kind: str
    default: Value
    nullable: bool = False
    minimum: int = 0


_Section = dict[str, _Leaf]

_SCHEMA: dict[str, _Leaf | _Section] = {
    "name": _Leaf("name", ""),
    "description": _Leaf("text", ""),
    "hostname_pattern": _Leaf("str", None, nullable=True),
    "account": {
        "default": _Leaf("str", None, nullable=True),
        "allowed": _Leaf("list", ()),
    },
    "partition": _Leaf("str", None, nullable=True),
    "partition_routed": _Leaf("bool", False),
    "gpu": {
        "types": _Leaf("word_list", ()),
        "default_type": _Leaf("word", None, nullable=True),
        "max_per_node": _Leaf("int", None, nullable=True, minimum=0),
        "gres_name": _Leaf("word", "gpu"),
    },
    "tmpdir": {
        "provided": _Leaf("tristate", "auto"),
        "root": _Leaf("str", "${TMPDIR:-/tmp}"),
    },
    "modules": _Leaf("list", ()),
    "venv": {
        "system_site_packages": _Leaf("bool", False),
    },
    "array_throttle": _Leaf("int", None, nullable=True, minimum=1),
    "signal": {
        "name": _Leaf("signal", "USR1"),
        "lead_seconds": _Leaf("int", 300, minimum=0),
    },
    "defaults": {
        "time": _Leaf("time", "01:00:00"),
        "mem_per_gpu": _Leaf("mem", None, nullable=True),
        "mem_no_gpu": _Leaf("mem", None, nullable=True),
        "cpus": _Leaf("int", 1, minimum=1),
        "gpus": _Leaf("int", 0, minimum=0),
    },
}


def _flat_defaults() -> dict[str, Value]:
    out: dict[str, Value] = {}
    for key, spec in _SCHEMA.items():
        if isinstance(spec, _Leaf):
            out[key] = spec.default
        else:
            for sub, leaf in spec.items():
                out[f"{key}.{sub}"] = leaf.default
    return out


DEFAULTS: Mapping[str, Value] = _flat_defaults()
"""Every leaf's default, by dotted key, in schema (and rendering) order."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_WORD = re.compile(r"[A-Za-z0-9_.+-]+")
# One grammar with the options (hpc_opt_check_time / hpc_opt_check_mem in hpc_options.bash; the
# cases both sides are tested on are in tests/fixtures/grammar/). A SLURM time: M, M:S, H:M:S,
# D-H, D-H:M or D-H:M:S; minutes and seconds < 60 (a leading minutes or hours field is free:
# SLURM takes 48:00:00), hours < 24 after a day count, not zero; no UNLIMITED: the warning signal
# is timed from the limit.
_TIME_MINUTES = re.compile(r"([0-9]{1,6})(?::([0-9]{1,2}))?")
_TIME_HOURS = re.compile(
    r"(?:([0-9]{1,3})-([0-9]{1,2})|([0-9]{1,5}))(?::([0-9]{1,2}))?(?::([0-9]{1,2}))?"
)
# A SLURM memory size with its unit (a bare number would be MB, too easily meant as GB).
_MEM = re.compile(r"([0-9]{1,7})[KMGTkmgt]")


def is_slurm_time(value: str) -> bool:
    """True for a time limit as -t/--time accepts it (see tests/fixtures/grammar/time.txt)."""
    minutes = _TIME_MINUTES.fullmatch(value)
    if minutes:
        seconds = int(minutes.group(2) or 0)
        return seconds < 60 and int(minutes.group(1)) * 60 + seconds > 0
    hours = _TIME_HOURS.fullmatch(value)
    if hours is None:
        return False
    days, day_hours, plain_hours, mins, secs = hours.groups()
    if plain_hours is not None and (mins is None or secs is None):
        return False  # H alone is minutes, H:M is M:S: both matched above
    fields = [int(days or 0), int(day_hours or plain_hours), int(mins or 0), int(secs or 0)]
    # Hours are free in H:M:S (SLURM takes 48:00:00), below 24 after a day count.
    hours_ok = plain_hours is not None or fields[1] < 24
    return hours_ok and fields[2] < 60 and fields[3] < 60 and sum(fields) > 0


def is_slurm_mem(value: str) -> bool:
    """True for a memory size as -m/--mem-per-gpu accepts it (tests/fixtures/grammar/mem.txt)."""
    match = _MEM.fullmatch(value)
    return match is not None and int(match.group(1)) > 0


_PATTERNS = {
    "name": _NAME,
    "word": _WORD,
}
_CHECKS = {"time": is_slurm_time, "mem": is_slurm_mem}
_KIND_TEXT = {
    "name": "a profile name (letters, digits, '.', '_', '-')",
    "text": "a string",
    "str": "a non-empty string",
    "word": "a word (letters, digits, '_', '.', '+', '-')",
    "list": "a list of non-empty strings",
    "word_list": "a list of words (letters, digits, '_', '.', '+', '-')",
    "int": "an integer",
    "tristate": "true, false or auto",
    "bool": "true or false",
    "signal": "a signal name without the SIG prefix (USR1, USR2, TERM, ...)",
    "time": "a SLURM time: M, M:S, H:M:S, D-H, D-H:M or D-H:M:S (minutes and seconds < 60, "
    "hours < 24 after a day count), not zero",
    "mem": "a SLURM memory size: a whole amount with a unit K, M, G or T, e.g. 10G or 512M",
}


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return f"a {'mapping' if isinstance(value, dict) else 'list'}"
    return repr(value)


def _check_str(file: str, key: str, value: str, kind: str, expected: str) -> str:
    if "\0" in value:
        raise ProfileError(file, key, "contains a NUL character")
    pattern, check = _PATTERNS.get(kind), _CHECKS.get(kind)
    if check is not None:
        ok = check(value)
    else:
        ok = value != "" if pattern is None else pattern.fullmatch(value) is not None
    if kind != "text" and not ok:
        raise ProfileError(file, key, f"expected {expected}, got {value!r}")
    return value


def _leaf(file: str, key: str, spec: _Leaf, value: object) -> Value:
    expected = _KIND_TEXT[spec.kind] + (" or null" if spec.nullable else "")
    if value is None:
        if spec.nullable:
            return None
        raise ProfileError(file, key, f"expected {expected}, got null")
    if spec.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ProfileError(file, key, f"expected {expected}, got {_describe(value)}")
        if value < spec.minimum:
            raise ProfileError(file, key, f"expected an integer >= {spec.minimum}, got {value!r}")
        return value
    if spec.kind == "bool":
        if isinstance(value, bool):
            return value
        raise ProfileError(file, key, f"expected {expected}, got {_describe(value)}")
    if spec.kind == "tristate":
        if isinstance(value, bool) or value == "auto":
            return value if isinstance(value, bool) else "auto"
        raise ProfileError(file, key, f"expected {expected}, got {_describe(value)}")
    if spec.kind in ("list", "word_list"):
        if not isinstance(value, list):
            raise ProfileError(file, key, f"expected {expected}, got {_describe(value)}")
        items: list[str] = []
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise ProfileError(file, f"{key}[{i}]", f"expected a string, got {_describe(item)}")
            item_kind = "word" if spec.kind == "word_list" else "str"
            items.append(_check_str(file, f"{key}[{i}]", item, item_kind, _KIND_TEXT[item_kind]))
        return tuple(items)
    if spec.kind == "signal":
        if not isinstance(value, str):
            raise ProfileError(file, key, f"expected {expected}, got {_describe(value)}")
        return _check_signal(file, key, value)
    if spec.kind == "time" and isinstance(value, int) and not isinstance(value, bool):
        value = str(value)  # plain minutes
    if not isinstance(value, str):
        raise ProfileError(file, key, f"expected {expected}, got {_describe(value)}")
    return _check_str(file, key, value, spec.kind, expected)


def _check_signal(file: str, key: str, value: str) -> str:
    if value.upper().startswith("SIG"):
        raise ProfileError(file, key, f"write the signal without the SIG prefix, got {value!r}")
    sig = getattr(signal.Signals, "SIG" + value, None) if value.isupper() else None
    if sig is None:
        raise ProfileError(file, key, f"expected {_KIND_TEXT['signal']}, got {value!r}")
    if sig in (signal.SIGKILL, signal.SIGSTOP):
        raise ProfileError(file, key, f"signal {value!r} cannot be caught")
    return value


@dataclass(frozen=True)
class Profile:
    """A validated profile: every leaf by dotted key (``"gpu.types"``), defaults filled in."""

    name: str
    values: Mapping[str, Value]
    path: Path | None = field(default=None, compare=False)

    def __getitem__(self, key: str) -> Value:
        return self.values[key]

    def get(self, key: str) -> Value:
        """The leaf KEY (dotted); KeyError for a key outside the schema."""
        if key not in self.values:
            raise KeyError(f"no profile key {key!r}")
        return self.values[key]


def _mapping(file: str, key: str | None, value: object) -> dict[Any, Any]:
    if not isinstance(value, dict):
        what = "the profile" if key is None else "this section"
        raise ProfileError(file, key, f"{what} must be a mapping, got {_describe(value)}")
    return value


def validate(data: object, *, file: str = "<profile>", stem: str | None = None) -> Profile:
    """Validates parsed YAML DATA; STEM (the file's stem) must then equal ``name``.

    Raises ProfileError quoting FILE and the key on any unknown key or wrong type.
    """
    top = _mapping(file, None, data)
    values: dict[str, Value] = dict(DEFAULTS)
    for key, raw in top.items():
        spec = _SCHEMA.get(key) if isinstance(key, str) else None
        if spec is None:
            raise ProfileError(file, str(key), "unknown key")
        if isinstance(spec, _Leaf):
            values[key] = _leaf(file, key, spec, raw)
            continue
        section = {} if raw is None else _mapping(file, key, raw)
        for sub, sub_raw in section.items():
            leaf = spec.get(sub) if isinstance(sub, str) else None
            if leaf is None:
                raise ProfileError(file, f"{key}.{sub}", "unknown key")
            values[f"{key}.{sub}"] = _leaf(file, f"{key}.{sub}", leaf, sub_raw)
    if "name" not in top:
        raise ProfileError(file, "name", "missing (the profile's name, equal to the file's stem)")
    name = values["name"]
    assert isinstance(name, str)
    if stem is not None and name != stem:
        raise ProfileError(file, "name", f"must equal the file's stem {stem!r}, got {name!r}")
    _cross_checks(file, values)
    return Profile(name=name, values=values)


def _cross_checks(file: str, values: Mapping[str, Value]) -> None:
    for choice, among in (
        ("gpu.default_type", "gpu.types"),
        ("account.default", "account.allowed"),
    ):
        chosen, options = values[choice], values[among]
        if not (isinstance(chosen, str) and isinstance(options, tuple)):
            continue
        if options and chosen not in options:
            raise ProfileError(file, choice, f"{chosen!r} is not one of {among} {list(options)}")
    max_gpus = values["gpu.max_per_node"]
    gpus = values["defaults.gpus"]
    if isinstance(max_gpus, int) and isinstance(gpus, int) and gpus > max_gpus:
        raise ProfileError(
            file, "defaults.gpus", f"{gpus} is more than gpu.max_per_node {max_gpus}"
        )


def _yaml_loader() -> type[Any]:
    import yaml

    class Loader(yaml.SafeLoader):
        """SafeLoader without base-60 numbers and with duplicate keys refused."""

        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Hashable, Any]:
            seen: set[object] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                if isinstance(key, Hashable):
                    if key in seen:
                        raise yaml.constructor.ConstructorError(
                            None, None, f"duplicate key {key!r}", key_node.start_mark
                        )
                    seen.add(key)
            return super().construct_mapping(node, deep)

    sexagesimal = re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$")
    resolvers = {k: list(v) for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    for ch in "+-0123456789":
        resolvers.setdefault(ch, []).insert(0, ("tag:yaml.org,2002:str", sexagesimal))
    Loader.yaml_implicit_resolvers = resolvers
    return Loader


def load_profile(path: str | Path) -> Profile:
    """Reads and validates the profile at PATH; ProfileError quoting PATH (and key) otherwise."""
    import yaml

    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ProfileError(file, None, f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ProfileError(file, None, "not UTF-8 text") from None
    try:
        data = yaml.load(text, Loader=_yaml_loader())  # a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = "" if mark is None else f" at line {mark.line + 1}, column {mark.column + 1}"
        problem = " ".join(str(exc.problem or exc.context or "syntax error").split())
        raise ProfileError(file, None, f"bad YAML{where}: {problem}") from None
    except yaml.YAMLError as exc:
        raise ProfileError(file, None, f"bad YAML: {' '.join(str(exc).split())}") from None
    profile = validate(data, file=file, stem=Path(path).stem)
    return Profile(name=profile.name, values=profile.values, path=Path(path))


def _shell_value(value: Value) -> str:
    if value is None:
        return "''"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, tuple):
        return "(" + " ".join(shlex.quote(item) for item in value) + ")"
    return shlex.quote(value)


def render_shell(profile: Profile) -> str:
    """Bash assignments ``hpc_profile_<key>=<value>``, one per line, for every schema leaf."""
    lines = []
    for key in DEFAULTS:
        value = profile.values.get(key, DEFAULTS[key])
        lines.append(f"hpc_profile_{key.replace('.', '_')}={_shell_value(value)}")
    return "\n".join(lines) + "\n"
