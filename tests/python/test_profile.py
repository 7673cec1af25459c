"""Cluster profiles: validation, errors quoting file and key, and shell-safe rendering."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hpc_helpers.profile import (
    DEFAULTS,
    Profile,
    ProfileError,
    load_profile,
    render_shell,
    validate,
)

CEDAR = """\
name: cedar
description: Compute Canada Cedar
hostname_pattern: '^cdr[0-9]+'
account: {default: def-someone, allowed: [def-someone, rrg-other]}
partition: null
gpu:
  types: [v100l, p100]
  default_type: v100l
  max_per_node: 4
  gres_name: gpu
tmpdir: {provided: true, root: '${SLURM_TMPDIR:-/tmp}'}
modules: [StdEnv/2023, cuda/12.2, python/3.11]
venv: {system_site_packages: true}
array_throttle: 50
signal: {name: USR1, lead_seconds: 600}
defaults:
  time: 3:00:00
  mem_per_gpu: 32G
  mem_no_gpu: 8G
  cpus: 6
  gpus: 1
"""

CEDAR_SHELL = """\
hpc_profile_name=cedar
hpc_profile_description='Compute Canada Cedar'
hpc_profile_hostname_pattern='^cdr[0-9]+'
hpc_profile_account_default=def-someone
hpc_profile_account_allowed=(def-someone rrg-other)
hpc_profile_partition=''
hpc_profile_partition_routed=false
hpc_profile_gpu_types=(v100l p100)
hpc_profile_gpu_default_type=v100l
hpc_profile_gpu_max_per_node=4
hpc_profile_gpu_gres_name=gpu
hpc_profile_tmpdir_provided=true
hpc_profile_tmpdir_root='${SLURM_TMPDIR:-/tmp}'
hpc_profile_modules=(StdEnv/2023 cuda/12.2 python/3.11)
hpc_profile_venv_system_site_packages=true
hpc_profile_array_throttle=50
hpc_profile_signal_name=USR1
hpc_profile_signal_lead_seconds=600
hpc_profile_defaults_time=3:00:00
hpc_profile_defaults_mem_per_gpu=32G
hpc_profile_defaults_mem_no_gpu=8G
hpc_profile_defaults_cpus=6
hpc_profile_defaults_gpus=1
"""

MINIMAL_SHELL = """\
hpc_profile_name=local
hpc_profile_description=''
hpc_profile_hostname_pattern=''
hpc_profile_account_default=''
hpc_profile_account_allowed=()
hpc_profile_partition=''
hpc_profile_partition_routed=false
hpc_profile_gpu_types=()
hpc_profile_gpu_default_type=''
hpc_profile_gpu_max_per_node=''
hpc_profile_gpu_gres_name=gpu
hpc_profile_tmpdir_provided=auto
hpc_profile_tmpdir_root='${TMPDIR:-/tmp}'
hpc_profile_modules=()
hpc_profile_venv_system_site_packages=false
hpc_profile_array_throttle=''
hpc_profile_signal_name=USR1
hpc_profile_signal_lead_seconds=300
hpc_profile_defaults_time=01:00:00
hpc_profile_defaults_mem_per_gpu=''
hpc_profile_defaults_mem_no_gpu=''
hpc_profile_defaults_cpus=1
hpc_profile_defaults_gpus=0
"""


@pytest.fixture
def weird_dir(tmp_path: Path) -> Path:
    """A folder whose path contains spaces and both kinds of quotes."""
    folder = tmp_path / 'cluster "profiles" it\'s here'
    folder.mkdir()
    return folder


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_full_profile(weird_dir: Path) -> None:
    profile = load_profile(write(weird_dir, "cedar.yaml", CEDAR))
    assert profile.name == "cedar"
    assert profile.path == weird_dir / "cedar.yaml"
    assert profile["gpu.types"] == ("v100l", "p100")
    assert profile.get("tmpdir.provided") is True
    assert profile["defaults.time"] == "3:00:00"  # not 10800: no base-60 numbers
    assert render_shell(profile) == CEDAR_SHELL


def test_memory_may_be_null_and_partition_routed_is_a_bool(tmp_path: Path) -> None:
    """A profile for a cluster whose nodes are unknown asks SLURM for no memory."""
    text = "name: x\npartition_routed: true\ndefaults: {mem_per_gpu: null, mem_no_gpu: null}\n"
    profile = load_profile(write(tmp_path, "x.yaml", text))
    assert profile["defaults.mem_per_gpu"] is None
    assert profile["defaults.mem_no_gpu"] is None
    assert profile["partition_routed"] is True
    shell = render_shell(profile)
    assert "hpc_profile_defaults_mem_per_gpu=''\n" in shell
    assert "hpc_profile_partition_routed=true\n" in shell
    with pytest.raises(ProfileError, match="partition_routed"):
        validate({"name": "x", "partition_routed": "yes"})


def test_shipped_generic_profile_asks_for_no_memory() -> None:
    generic = Path(__file__).resolve().parents[2] / "hpc_files" / "clusters" / "generic.yaml"
    profile = load_profile(generic)
    assert profile["defaults.mem_per_gpu"] is None
    assert profile["defaults.mem_no_gpu"] is None


def test_minimal_profile_gets_every_default(tmp_path: Path) -> None:
    profile = load_profile(write(tmp_path, "local.yml", "name: local\n"))
    assert dict(profile.values) == {**DEFAULTS, "name": "local"}
    assert render_shell(profile) == MINIMAL_SHELL


def test_null_section_takes_defaults(tmp_path: Path) -> None:
    profile = load_profile(write(tmp_path, "x.yaml", "name: x\ngpu:\nsignal: {}\n"))
    assert profile["gpu.gres_name"] == "gpu"
    assert profile["signal.name"] == "USR1"


def test_profile_get_unknown_key() -> None:
    with pytest.raises(KeyError, match=r"no profile key 'gpu\.count'"):
        validate({"name": "x"}).get("gpu.count")


@pytest.mark.parametrize(
    ("value", "expected"),
    [("90", "90"), ("'2-00:00:00'", "2-00:00:00"), ("1:30", "1:30"), ("2-12", "2-12")],
)
def test_time_forms(tmp_path: Path, value: str, expected: str) -> None:
    path = write(tmp_path, "t.yaml", f"name: t\ndefaults: {{time: {value}}}\n")
    assert load_profile(path)["defaults.time"] == expected


GRAMMAR = Path(__file__).resolve().parents[1] / "fixtures" / "grammar"


def grammar_rows(table: str) -> list[tuple[str, str]]:
    """(verdict, value) rows of tests/fixtures/grammar/TABLE, the options' table too."""
    rows = []
    for line in (GRAMMAR / table).read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            verdict, value = line.split(" ", 1)
            rows.append((verdict, value))
    return rows


@pytest.mark.parametrize(
    ("key", "table"),
    [
        ("defaults.time", "time.txt"),
        ("defaults.mem_per_gpu", "mem.txt"),
        ("defaults.mem_no_gpu", "mem.txt"),
    ],
)
def test_profile_values_follow_the_options_grammar(key: str, table: str) -> None:
    """A profile accepts exactly the times and sizes that -t/--time and -m/--mem-per-gpu accept."""
    rows = grammar_rows(table)
    assert len(rows) > 10
    section, leaf = key.split(".")
    wrong = []
    for verdict, value in rows:
        try:
            validate({"name": "x", section: {leaf: value}})
            got = "ok"
        except ProfileError:
            got = "bad"
        if got != verdict:
            wrong.append(f"{value!r} is {got}, expected {verdict}")
    assert wrong == []


MALICIOUS = """\
name: evil
description: "it's \\"quoted\\" $(touch PWNED) `touch PWNED2` ; echo hi > PWNED3 #\\nsecond line"
hostname_pattern: '^(login|gw)[0-9]+\\.example\\.org$'
account: {default: "a b", allowed: ["a b", "c'd", "$(touch PWNED4)"]}
partition: "gpu,debug"
tmpdir: {provided: auto, root: '${TMPDIR:-/tmp}/$USER $(touch PWNED5)'}
modules: ["StdEnv/2023", "name with spaces", "*", "{a,b}", "~", "x;y", "'"]
"""


def test_rendered_values_survive_bash(weird_dir: Path) -> None:
    profile = load_profile(write(weird_dir, "evil.yaml", MALICIOUS))
    shell = render_shell(profile)
    out_file = weird_dir / "profile.sh"
    out_file.write_text(shell)
    script = r"""
set -euo pipefail
source "$1"
for v in hpc_profile_description hpc_profile_hostname_pattern hpc_profile_account_default \
         hpc_profile_partition hpc_profile_tmpdir_root hpc_profile_gpu_max_per_node; do
  printf '%s=%s\0' "$v" "${!v}"
done
printf 'allowed=%s\0' "${hpc_profile_account_allowed[@]}"
printf 'modules=%s\0' "${hpc_profile_modules[@]}"
printf 'types=%s\0' "${#hpc_profile_gpu_types[@]}"
"""
    proc = subprocess.run(
        ["bash", "-c", script, "bash", str(out_file)],
        cwd=weird_dir,
        capture_output=True,
        check=True,
    )
    fields = proc.stdout.decode().split("\0")[:-1]
    assert fields == [
        'hpc_profile_description=it\'s "quoted" $(touch PWNED) `touch PWNED2` ; '
        "echo hi > PWNED3 #\nsecond line",
        "hpc_profile_hostname_pattern=^(login|gw)[0-9]+\\.example\\.org$",
        "hpc_profile_account_default=a b",
        "hpc_profile_partition=gpu,debug",
        "hpc_profile_tmpdir_root=${TMPDIR:-/tmp}/$USER $(touch PWNED5)",
        "hpc_profile_gpu_max_per_node=",
        "allowed=a b",
        "allowed=c'd",
        "allowed=$(touch PWNED4)",
        "modules=StdEnv/2023",
        "modules=name with spaces",
        "modules=*",
        "modules={a,b}",
        "modules=~",
        "modules=x;y",
        "modules='",
        "types=0",
    ]
    assert not list(weird_dir.glob("PWNED*"))
    assert proc.stderr == b""


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        ("name: x\ngpus: 2\n", "gpus", "unknown key"),
        ("name: x\ngpu: {count: 2}\n", "gpu.count", "unknown key"),
        ("name: x\n1: 2\n", "1", "unknown key"),
        ("name: x\ngpu: [a]\n", "gpu", "this section must be a mapping, got a list"),
        ("name: x\ndescription: 5\n", "description", "expected a string, got 5"),
        ("name: x\npartition: ''\n", "partition", "expected a non-empty string or null, got ''"),
        (
            "name: x\npartition: [a]\n",
            "partition",
            "expected a non-empty string or null, got a list",
        ),
        ("name: x\ngpu: {max_per_node: four}\n", "gpu.max_per_node", "got 'four'"),
        (
            "name: x\ngpu: {max_per_node: -1}\n",
            "gpu.max_per_node",
            "expected an integer >= 0, got -1",
        ),
        ("name: x\ngpu: {max_per_node: true}\n", "gpu.max_per_node", "got true"),
        ("name: x\ngpu: {max_per_node: 2.5}\n", "gpu.max_per_node", "got 2.5"),
        ("name: x\ngpu: {types: v100}\n", "gpu.types", "expected a list of words"),
        ("name: x\ngpu: {types: [v100, 3]}\n", "gpu.types[1]", "expected a string, got 3"),
        ("name: x\ngpu: {types: ['a b']}\n", "gpu.types[0]", "got 'a b'"),
        ("name: x\ngpu: {gres_name: null}\n", "gpu.gres_name", "got null"),
        ("name: x\ngpu: {types: [a], default_type: b}\n", "gpu.default_type", "'b' is not one of"),
        ("name: x\naccount: {default: z, allowed: [a]}\n", "account.default", "'z' is not one of"),
        ("name: x\ntmpdir: {provided: maybe}\n", "tmpdir.provided", "expected true, false or auto"),
        ("name: x\ntmpdir: {provided: null}\n", "tmpdir.provided", "got null"),
        ("name: x\nmodules: [a, '']\n", "modules[1]", "got ''"),
        (
            "name: x\nvenv: {system_site_packages: auto}\n",
            "venv.system_site_packages",
            "true or false",
        ),
        ("name: x\nvenv: {system_site_packages: null}\n", "venv.system_site_packages", "got null"),
        ("name: x\narray_throttle: 0\n", "array_throttle", "expected an integer >= 1, got 0"),
        ("name: x\nsignal: {name: SIGUSR1}\n", "signal.name", "without the SIG prefix"),
        ("name: x\nsignal: {name: usr1}\n", "signal.name", "got 'usr1'"),
        ("name: x\nsignal: {name: BOGUS}\n", "signal.name", "got 'BOGUS'"),
        ("name: x\nsignal: {name: KILL}\n", "signal.name", "cannot be caught"),
        ("name: x\nsignal: {lead_seconds: -5}\n", "signal.lead_seconds", "got -5"),
        ("name: x\ndefaults: {time: 1 hour}\n", "defaults.time", "got '1 hour'"),
        ("name: x\ndefaults: {time: 1.5}\n", "defaults.time", "got 1.5"),
        ("name: x\ndefaults: {time: UNLIMITED}\n", "defaults.time", "got 'UNLIMITED'"),
        ("name: x\ndefaults: {mem_per_gpu: 16001}\n", "defaults.mem_per_gpu", "got 16001"),
        ("name: x\ndefaults: {mem_per_gpu: '16001'}\n", "defaults.mem_per_gpu", "got '16001'"),
        ("name: x\ndefaults: {mem_per_gpu: 16 GB}\n", "defaults.mem_per_gpu", "got '16 GB'"),
        ("name: x\ndefaults: {mem_no_gpu: 16}\n", "defaults.mem_no_gpu", "got 16"),
        ("name: x\ndefaults: {cpus: 0}\n", "defaults.cpus", "expected an integer >= 1, got 0"),
        ("name: x\ndefaults: {gpus: 5}\ngpu: {max_per_node: 4}\n", "defaults.gpus", "more than"),
        ('name: x\ndescription: "a\\0b"\n', "description", "contains a NUL character"),
        ("name: y\n", "name", "must equal the file's stem 'x', got 'y'"),
        ("name: 5\n", "name", "got 5"),
        ("description: d\n", "name", "missing"),
    ],
)
def test_profile_errors(tmp_path: Path, text: str, key: str, problem: str) -> None:
    path = write(tmp_path, "x.yaml", text)
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    err = info.value
    assert err.file == str(path)
    assert err.key == key
    assert problem in err.problem
    assert str(err).startswith(f"{str(path)!r}, key {key!r}: ")
    assert "\n" not in str(err)


def test_exact_message(tmp_path: Path) -> None:
    path = write(tmp_path, "x.yaml", "name: x\ngpu: {max_per_node: four}\n")
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    assert str(info.value) == (
        f"{str(path)!r}, key 'gpu.max_per_node': expected an integer or null, got 'four'"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("name: x\ngpu: {types: [a\n", "bad YAML at line 3, column 1: expected ',' or ']'"),
        ("name: x\n  bad: indent\n", "bad YAML at line 2, column 6"),
        ("name: x\nname: x\n", "bad YAML at line 2, column 1: duplicate key 'name'"),
        ("", "the profile must be a mapping, got null"),
        ("- a\n- b\n", "the profile must be a mapping, got a list"),
        ("just text\n", "the profile must be a mapping, got 'just text'"),
        ("name: !!python/object:os.system x\n", "bad YAML"),
    ],
)
def test_file_level_errors(weird_dir: Path, text: str, problem: str) -> None:
    path = write(weird_dir, "x.yaml", text)
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    assert info.value.key is None
    assert str(info.value).startswith(repr(str(path)) + ": ")
    assert problem in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_file(weird_dir: Path) -> None:
    path = weird_dir / "nope.yaml"
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    assert str(info.value) == f"{str(path)!r}: cannot read: No such file or directory"


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_bytes(b"name: x\ndescription: \xff\n")
    with pytest.raises(ProfileError, match="not UTF-8 text"):
        load_profile(path)


def test_merge_keys_still_work(tmp_path: Path) -> None:
    text = "name: x\ndefaults: &d {cpus: 2, gpus: 1}\ngpu: {max_per_node: 4}\n"
    assert load_profile(write(tmp_path, "x.yaml", text))["defaults.cpus"] == 2


def test_validate_mapping_directly() -> None:
    profile = validate({"name": "m", "modules": ["a"]}, file="inline")
    assert isinstance(profile, Profile)
    assert profile.path is None
    assert profile["modules"] == ("a",)
    with pytest.raises(ProfileError, match=r"^'inline', key 'modules': "):
        validate({"name": "m", "modules": "a"}, file="inline")


REPO_PROFILES = sorted(
    (Path(__file__).resolve().parents[2] / "hpc_files" / "clusters").glob("*.y*ml")
)


@pytest.mark.skipif(not REPO_PROFILES, reason="no profiles in hpc_files/clusters")
@pytest.mark.parametrize("path", REPO_PROFILES, ids=lambda p: p.name)
def test_repository_profiles_are_valid(path: Path) -> None:
    profile = load_profile(path)
    assert profile.name == path.stem
    assert render_shell(profile).count("\n") == len(DEFAULTS)


def test_a_schema_change_bumps_the_helpers_version() -> None:
    """Compiled profiles in users' caches are keyed by the YAML and ``__version__``
    (hpc_profile.bash): a new key or default with the same version would leave an old cache
    without it. On a schema change, bump ``__version__`` (and pyproject's) and renew this pin."""
    import hashlib

    import hpc_helpers

    schema = render_shell(validate({"name": "x"}))
    fingerprint = hashlib.sha256(schema.encode()).hexdigest()[:16]
    assert (hpc_helpers.__version__, fingerprint) == ("0.2.0", "2a118462c449d13e")
