#!/usr/bin/env bash
# Usage: sbatch install_venv.sh RUNNER_LIB VENV SYSTEM_SITE  (job_submitter.sh submits it)
#
# The install job of a virtual-environment project: on a compute node (where jobs will run, with
# the cluster's modules), makes VENV with python3 -m venv and installs the project's dependency
# file into it (a Pipfile with pipenv, else a requirements.txt with pip, else nothing). It writes
# VENV/.hpc_deps last, only when everything succeeded: the dependency file's name and content as
# read when the job started (hpc_venv_expect of RUNNER_LIB, venv_runner.bash: SLURM runs a copy
# of this script, so its own folder is not known here); the submitter compares it to the file.
# SYSTEM_SITE (true|false) gives the venv the system's packages too (--system-site-packages), as
# the cluster profile says.
set -euo pipefail
runner_lib=${1:?} venv=${2:?} system_site=${3:-false}
# shellcheck source=virtual_env_hpc_files/venv_runner.bash
source "$runner_lib"
# The project is the venv's folder; its dependency file as it is now is what gets installed.
hpc_venv_expect "$(dirname -- "$venv")"
deps=$hpc_venv_deps

fail() {
  echo "[hpc venv] FAILED: $*" >&2
  exit 1
}

echo "[hpc venv] job ${SLURM_JOB_ID:-?} on ${SLURMD_NODENAME:-$(hostname)}: $venv from ${deps:-no dependency file}"
command -v python3 >/dev/null || fail "no python3 on the node (load a module in the cluster profile)"
python3 -c 'import venv, ensurepip' 2>/dev/null ||
  fail "python3 has no working venv module (on Debian: apt-get install python3-venv)"

if [[ -f $venv/.hpc_deps && ! -L $venv ]]; then
  # A venv this toolkit built for older dependencies: build it again from scratch.
  echo "[hpc venv] removing the venv built for the previous dependencies"
  rm -rf --one-file-system -- "${venv:?}"
fi
venv_args=()
[[ $system_site != true ]] || venv_args+=(--system-site-packages)
python3 -m venv "${venv_args[@]}" "$venv" || fail "python3 -m venv $venv"
# shellcheck source=/dev/null
source "$venv/bin/activate" || fail "activating $venv"

case ${deps##*/} in
  '') echo "[hpc venv] no Pipfile or requirements.txt: the venv stays empty" ;;
  Pipfile)
    python -m pip install -q pipenv || fail "pip install pipenv"
    # --system: into the active venv, not a venv of pipenv's own.
    (cd "$(dirname -- "$deps")" && PIPENV_PIPFILE=$deps pipenv install --system --skip-lock) ||
      fail "pipenv install from $deps"
    ;;
  *) python -m pip install -r "$deps" || fail "pip install -r $deps" ;;
esac
printf '%s\n' "$hpc_venv_stamp" >"$venv/.hpc_deps.tmp" && mv -f -- "$venv/.hpc_deps.tmp" "$venv/.hpc_deps"
echo "[hpc venv] ready"
