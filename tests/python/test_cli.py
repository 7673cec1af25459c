"""python -m hpc_helpers, run as the Bash scripts run it: a fresh interpreter, PYTHONPATH only."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hpc_helpers import ports
from test_profile import CEDAR, CEDAR_SHELL
from test_sweeps import NESTED, RANDOM, SIMPLE


@pytest.fixture
def weird_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "a \"dir\" with 'quotes' $(x) and spaces"
    folder.mkdir()
    return folder


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


# --- hostlist ------------------------------------------------------------------------------


def test_hostlist(cli) -> None:
    r = cli("hostlist", "n[01-03,7],gpu-a[1-2]")
    assert (r.status, r.stdout, r.stderr) == (0, "n01\nn02\nn03\nn7\ngpu-a1\ngpu-a2\n", "")


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("n[3-1]", "invalid hostlist 'n[3-1]': bad range '3-1' (start > end)"),
        ("", "invalid hostlist '': no host names"),
        ("n[1-2", "invalid hostlist 'n[1-2': '[' without ']'"),
        (
            "a'b[x]",
            "invalid hostlist \"a'b[x]\": bad range 'x' (expected N or N-M with digits only)",
        ),
    ],
)
def test_hostlist_bad(cli, expr: str, message: str) -> None:
    r = cli("hostlist", expr)
    assert (r.status, r.stdout, r.stderr) == (2, "", f"hpc_helpers hostlist: {message}\n")


def test_hostlist_leading_dash_is_an_expression(cli) -> None:
    r = cli("hostlist", "--", "-a[1-2]")
    assert (r.status, r.stdout) == (0, "-a1\n-a2\n")


def test_hostlist_missing_argument(cli) -> None:
    r = cli("hostlist")
    assert r.status == 2
    assert r.stdout == ""
    assert r.stderr.startswith("usage: hpc_helpers hostlist [-h] EXPR\n")
    assert r.stderr.endswith(
        "hpc_helpers hostlist: error: the following arguments are required: EXPR\n"
    )


def test_broken_pipe_is_quiet(child_env) -> None:
    proc = subprocess.run(
        f"{sys.executable} -m hpc_helpers hostlist 'n[1-65536]' | head -n 1",
        shell=True,
        env=child_env(None),
        capture_output=True,
        text=True,
        check=False,
    )
    assert (proc.stdout, proc.stderr) == ("n1\n", "")


# --- port ----------------------------------------------------------------------------------


def test_port_derived(cli) -> None:
    assert cli("port", "--job-id", "123456").stdout == "28544\n"
    assert cli("port", "--job-id", "0").stdout == "20000\n"


def test_port_job_id_from_env(cli) -> None:
    r = cli("port", env={"SLURM_JOB_ID": "7"})
    assert (r.status, r.stdout, r.stderr) == (0, "20007\n", "")


def test_port_preset_wins(cli) -> None:
    r = cli("port", "--job-id", "5", "--check-free", env={"MASTER_PORT": "31000"})
    assert (r.status, r.stdout) == (0, "31000\n")


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ((), {}, "no --job-id given and SLURM_JOB_ID is not set"),
        (("--job-id", "-3"), {}, "job id must be >= 0, got -3"),
        ((), {"SLURM_JOB_ID": "12x"}, "SLURM_JOB_ID must be an integer >= 0, got '12x'"),
        (
            ("--job-id", "1"),
            {"MASTER_PORT": "abc"},
            "MASTER_PORT must be a port number 1..65535, got 'abc'",
        ),
        (
            ("--job-id", "1", "--check-free", "--tries", "0"),
            {},
            "tries must be an int in 1..12768, got 0",
        ),
    ],
)
def test_port_bad_input(cli, args: tuple[str, ...], env: dict[str, str], message: str) -> None:
    r = cli("port", *args, env=env)
    assert (r.status, r.stdout, r.stderr) == (2, "", f"hpc_helpers port: {message}\n")


def test_port_bad_int(cli) -> None:
    r = cli("port", "--job-id", "x")
    assert r.status == 2
    assert r.stderr.endswith("hpc_helpers port: error: argument --job-id: invalid int value: 'x'\n")


def test_port_check_free_skips_a_busy_port(cli) -> None:
    for job_id in range(9000, 20000, 89):
        start = ports.derive_port(job_id)
        if ports.is_free(start) and ports.is_free(start + 1):
            break
    else:
        pytest.skip("no free ports")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", start))
        sock.listen()
        r = cli("port", "--job-id", str(job_id), "--check-free")
        assert (r.status, r.stdout) == (0, f"{start + 1}\n")
        r = cli("port", "--job-id", str(job_id))
        assert r.stdout == f"{start}\n"  # no check: the rule alone


def test_port_unbindable_host_is_a_failure(cli) -> None:
    r = cli("port", "--job-id", "1", "--check-free", "--host", "192.0.2.1")
    assert r.status == 1
    assert r.stderr.startswith("hpc_helpers port: cannot bind on host '192.0.2.1': ")
    assert r.stderr.count("\n") == 1


# --- profile -------------------------------------------------------------------------------


def test_profile(cli, weird_dir: Path) -> None:
    r = cli("profile", str(write(weird_dir, "cedar.yaml", CEDAR)))
    assert (r.status, r.stdout, r.stderr) == (0, CEDAR_SHELL, "")


def test_profile_errors(cli, weird_dir: Path) -> None:
    missing = weird_dir / "nope.yaml"
    r = cli("profile", str(missing))
    assert (r.status, r.stdout) == (2, "")
    assert (
        r.stderr
        == f"hpc_helpers profile: {str(missing)!r}: cannot read: No such file or directory\n"
    )
    bad = write(weird_dir, "x.yaml", "name: x\ngpu: {count: 2}\n")
    r = cli("profile", str(bad))
    assert r.status == 2
    assert r.stderr == f"hpc_helpers profile: {str(bad)!r}, key 'gpu.count': unknown key\n"
    wrong = write(weird_dir, "y.yaml", "name: x\n")
    r = cli("profile", str(wrong))
    assert r.stderr == (
        f"hpc_helpers profile: {str(wrong)!r}, key 'name': "
        "must equal the file's stem 'y', got 'x'\n"
    )


def test_profile_output_sources_in_bash(cli, weird_dir: Path) -> None:
    path = write(weird_dir, "cedar.yaml", CEDAR)
    script = (
        'eval "$(PYTHONPATH="$2" "$3" -m hpc_helpers profile "$1")" && '
        'printf "%s|" "$hpc_profile_name" "${hpc_profile_gpu_types[1]}" "$hpc_profile_tmpdir_root"'
    )
    src = str(Path(__file__).resolve().parents[2] / "python_helpers" / "src")
    proc = subprocess.run(
        ["bash", "-c", script, "bash", str(path), src, sys.executable],
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout == "cedar|p100|${SLURM_TMPDIR:-/tmp}|"


# --- sweeps --------------------------------------------------------------------------------


def test_count_sweeps(cli, weird_dir: Path) -> None:
    r = cli("count-sweeps", str(write(weird_dir, "sweeper.yml", SIMPLE)))
    assert (r.status, r.stdout, r.stderr) == (0, "6\n", "")
    r = cli("count-sweeps", str(write(weird_dir, "nested.yml", NESTED)))
    assert r.stdout == "24\n"


def test_count_sweeps_random(cli, weird_dir: Path) -> None:
    path = write(weird_dir, "sweeper.yml", RANDOM)
    r = cli("count-sweeps", str(path))
    assert (r.status, r.stdout) == (2, "")
    assert r.stderr == (
        f"hpc_helpers count-sweeps: {str(path)!r}: method random has no finite grid (it samples "
        "until stopped); use method: grid, or allow non-grid sweeps (--allow-nongrid)\n"
    )
    r = cli("count-sweeps", str(path), "--allow-nongrid")
    assert (r.status, r.stdout, r.stderr) == (0, "", "")


def test_count_sweeps_missing_file(cli, weird_dir: Path) -> None:
    path = weird_dir / "none.yml"
    r = cli("count-sweeps", str(path))
    assert (r.status, r.stderr) == (
        2,
        f"hpc_helpers count-sweeps: {str(path)!r}: cannot read: No such file or directory\n",
    )


def test_grid_config(cli, weird_dir: Path) -> None:
    path = write(weird_dir, "sweeper.yml", SIMPLE)
    r = cli("grid-config", str(path), "1")
    assert (r.status, r.stdout, r.stderr) == (
        0,
        '{"lr": 0.1, "batch_size": 64, "epochs": 10}\n',
        "",
    )
    nested = write(weird_dir, "nested.yml", NESTED)
    r = cli("grid-config", str(nested), "23")
    assert json.loads(r.stdout) == {
        "model": {"depth": 4, "act": "relu", "head": {"width": 256}},
        "lr": 0.01,
        "layers": [128],
    }


def test_grid_config_errors(cli, weird_dir: Path) -> None:
    path = write(weird_dir, "sweeper.yml", SIMPLE)
    r = cli("grid-config", str(path), "6")
    assert (r.status, r.stdout) == (2, "")
    assert r.stderr == (
        f"hpc_helpers grid-config: {str(path)!r}: index 6 is out of range: the grid has 6 points "
        "(0..5)\n"
    )
    r = cli("grid-config", str(path), "-1")
    assert r.status == 2
    assert "index -1 is out of range" in r.stderr
    r = cli("grid-config", str(path), "one")
    assert r.status == 2
    assert r.stderr.endswith(
        "hpc_helpers grid-config: error: argument I: invalid int value: 'one'\n"
    )


# --- paths, dist ---------------------------------------------------------------------------


def test_paths_outside_a_job(cli) -> None:
    r = cli("paths")
    assert (r.status, r.stdout) == (2, "")
    assert r.stderr == (
        "hpc_helpers paths: source_dir is not set (not inside a toolkit job?): "
        'submit with hpc_files/job_submitter.sh, or export source_dir="$PWD"\n'
    )


def test_paths(cli, weird_dir: Path) -> None:
    env = {
        "source_dir": str(weird_dir / "proj"),
        "scratch_dir": str(weird_dir / "scratch"),
        "SLURM_TMPDIR": "/tmp/job 1",
        "exp_name": "run 1",
        "num_nodes": "2",
        "gpus_per_node": "4",
    }
    r = cli("paths", env=env)
    assert r.status == 0
    assert r.stdout == (
        f"source_dir={weird_dir}/proj\n"
        "project_name=proj\n"
        f"scratch_dir={weird_dir}/scratch\n"
        "exp_name=run 1\n"
        "slurm_tmpdir=/tmp/job 1\n"
        f"checkpoints={weird_dir}/scratch/run 1/checkpoints\n"
        f"outputs={weird_dir}/scratch/hpc_outputs\n"
        "num_nodes=2\n"
        "gpus_per_node=4\n"
    )
    shell = cli("paths", "--shell", env=env).stdout
    proc = subprocess.run(
        ["bash", "-c", 'eval "$1"; printf "%s|" "$checkpoints" "$exp_name"', "bash", shell],
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout == f"{weird_dir}/scratch/run 1/checkpoints|run 1|"


def test_dist(cli) -> None:
    env = {
        "SLURM_JOB_ID": "42",
        "SLURM_PROCID": "3",
        "SLURM_LOCALID": "1",
        "SLURM_NTASKS": "4",
        "SLURM_NODEID": "1",
        "SLURM_STEP_TASKS_PER_NODE": "2(x2)",
        "SLURM_STEP_NODELIST": "n[1-2]",
    }
    r = cli("dist", env=env)
    assert (r.status, r.stderr) == (0, "")
    assert r.stdout == (
        "source=slurm\nrank=3\nlocal_rank=1\nworld_size=4\nlocal_world_size=2\nnode_rank=1\n"
        "master_addr=n1\nmaster_port=20042\n"
    )
    r = cli("dist", env={"RANK": "1"})
    assert (r.status, r.stderr) == (
        2,
        "hpc_helpers dist: RANK is set but WORLD_SIZE is not (torchrun sets both)\n",
    )


# --- the command line itself ---------------------------------------------------------------


def test_no_command(cli) -> None:
    r = cli()
    assert r.status == 2
    assert r.stderr.endswith("hpc_helpers: error: the following arguments are required: COMMAND\n")


def test_unknown_command(cli) -> None:
    r = cli("frobnicate")
    assert r.status == 2
    assert "invalid choice: 'frobnicate'" in r.stderr


def test_version_and_help(cli) -> None:
    assert cli("--version").stdout == "hpc_helpers 0.2.0\n"
    r = cli("--help")
    assert r.status == 0
    for command in ("profile", "hostlist", "port", "count-sweeps", "grid-config", "paths", "dist"):
        assert command in r.stdout


def test_light_commands_import_neither_yaml_nor_torch(child_env) -> None:
    code = (
        "import sys\n"
        "from hpc_helpers.cli import main\n"
        "main(['hostlist', 'n1']); main(['port', '--job-id', '1'])\n"
        "main(['dist'])\n"
        "print(sorted(m for m in ('yaml', 'torch', 'hpc_helpers.profile') if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=child_env(None),
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.splitlines()[-1] == "[]"


def test_package_imports_without_torch(child_env) -> None:
    code = (
        "import sys\n"
        "sys.modules['torch'] = None  # import torch now fails\n"
        "import hpc_helpers, hpc_helpers.distributed, hpc_helpers.job, hpc_helpers.signals\n"
        "import hpc_helpers.hostlist, hpc_helpers.ports, hpc_helpers.slurm_env\n"
        "import hpc_helpers.profile, hpc_helpers.sweeps, hpc_helpers.cli\n"
        "d = hpc_helpers.distributed.resolve({})\n"
        "try:\n"
        "    hpc_helpers.distributed.init()\n"
        "except RuntimeError as exc:\n"
        "    print(exc)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=child_env(None),
        capture_output=True,
        text=True,
        check=True,
    )
    assert "hpc_helpers.distributed.init needs torch" in proc.stdout
    assert "install hpc-helpers[torch]" in proc.stdout
