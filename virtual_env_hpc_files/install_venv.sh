#!/usr/bin/env bash
# Usage: sbatch install_venv.sh VENV DEPS_FILE STAMP SYSTEM_SITE  (job_submitter.sh submits it)
#
# The install job of a virtual-environment project: on a compute node (where jobs will run, with
# the cluster's modules), makes VENV with python3 -m venv and installs DEPS_FILE into it
# (a Pipfile with pipenv, a requirements.txt with pip, nothing when DEPS_FILE is empty). It writes
# VENV/.hpc_deps = STAMP last, only when everything succeeded: the submitter reads that file to
# know the venv is ready and matches the dependency file. SYSTEM_SITE (true|false) gives the venv
# the system's packages too (--system-site-packages), as the cluster profile says.
set -euo pipefail
venv=${1:?} deps=${2-} stamp=${3:?} system_site=${4:-false}

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
printf '%s\n' "$stamp" >"$venv/.hpc_deps.tmp" && mv -f -- "$venv/.hpc_deps.tmp" "$venv/.hpc_deps"
echo "[hpc venv] ready"
