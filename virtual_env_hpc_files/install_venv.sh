#!/usr/bin/env bash
# Usage: sbatch install_venv.sh RUNNER_LIB SOURCE_DIR SYSTEM_SITE  (job_submitter.sh submits it)
#
# The install job of a virtual-environment project: on a compute node (where jobs will run, with
# the cluster's modules), makes the new build SOURCE_DIR/.virtual_env_builds/venv-JOBID with
# python3 -m venv and installs the project's dependency file into it (a Pipfile with pipenv, else
# a requirements.txt with pip, else nothing). Other builds, and SOURCE_DIR/virtual_env, are not
# touched: jobs may be running from them (the submitter switches to the new build). It writes
# BUILD/.hpc_deps last, only when everything succeeded: the dependency file's name and content as
# read when the job started (hpc_venv_expect of RUNNER_LIB, venv_runner.bash: SLURM runs a copy
# of this script, so its own folder is not known here); the submitter compares it to the file.
# BUILD/.hpc_build, written first, records that the toolkit made BUILD (only recorded builds are
# ever removed). A failed install removes the build it made. SYSTEM_SITE (true|false) gives the
# venv the system's packages too (--system-site-packages), as the cluster profile says.
set -euo pipefail
runner_lib=${1:?} source_dir=${2:?} system_site=${3:-false}
# shellcheck source=virtual_env_hpc_files/venv_runner.bash
source "$runner_lib"
# The toolkit's facts (hpc_log, the format of a job's log lines): RUNNER_LIB lies in the toolkit's
# virtual_env_hpc_files/, beside lib/ in an installed project, beside hpc_files/ in the repository.
facts=${runner_lib%/*/*}/lib/hpc_facts.bash
[[ -f $facts ]] || facts=${runner_lib%/*/*}/hpc_files/lib/hpc_facts.bash
# shellcheck source=hpc_files/lib/hpc_facts.bash
source "$facts"
# The dependency file as it is now is what gets installed.
hpc_venv_expect "$source_dir"
deps=$hpc_venv_deps
builds=$source_dir/.virtual_env_builds
build=$builds/venv-${SLURM_JOB_ID:?not in a SLURM job}
made=0

# fail WHY: says why, removes the build this job made, exits 1.
fail() {
  hpc_log "venv: FAILED: $*"
  if ((made)); then
    rm -rf --one-file-system -- "${build:?}"
  fi
  exit 1
}

hpc_log "venv: job $SLURM_JOB_ID: $build from ${deps:-no dependency file}"
command -v python3 >/dev/null || fail "no python3 on the node (load a module in the cluster profile)"
python3 -c 'import venv, ensurepip' 2>/dev/null ||
  fail "python3 has no working venv module (on Debian: apt-get install python3-venv)"

[[ ! -L $builds ]] || fail "$builds is a symbolic link; the toolkit makes that folder itself"
mkdir -p -- "$builds" || fail "cannot create $builds"
if [[ -e $build || -L $build ]]; then
  # Only this job's own earlier run (a requeued install job) made it and recorded so; a finished
  # build stays, and so does anything else of that name.
  hpc_venv_recorded "$build" && [[ ! -e $build/.hpc_deps && ! -L $build/.hpc_deps ]] ||
    fail "$build exists already"
  hpc_log "venv: removing what an earlier run of this job left in $build"
  rm -rf --one-file-system -- "${build:?}"
fi
mkdir -- "$build" || fail "cannot create $build"
made=1
# First of all, the record that this job made the build: only recorded builds are ever removed.
hpc_venv_record "$build" || fail "cannot write $build/.hpc_build"
venv_args=()
[[ $system_site != true ]] || venv_args+=(--system-site-packages)
python3 -m venv "${venv_args[@]}" "$build" || fail "python3 -m venv $build"
[[ -x $build/bin/python ]] || fail "python3 -m venv made no $build/bin/python"
# The venv's python by path, never its activate script (which would run the path as code).
export VIRTUAL_ENV=$build PATH=$build/bin:$PATH
unset PYTHONHOME

case ${deps##*/} in
  '') hpc_log "venv: no Pipfile or requirements.txt: the venv stays empty" ;;
  Pipfile)
    "$build/bin/python" -m pip install -q pipenv || fail "pip install pipenv"
    # --system: into this venv (first on PATH), not a venv of pipenv's own.
    (cd "$(dirname -- "$deps")" && PIPENV_PIPFILE=$deps pipenv install --system --skip-lock) ||
      fail "pipenv install from $deps"
    ;;
  *) "$build/bin/python" -m pip install -r "$deps" || fail "pip install -r $deps" ;;
esac
printf '%s' "$hpc_venv_stamp" >"$build/.hpc_deps.tmp" || fail "writing $build/.hpc_deps.tmp"
mv -f -- "$build/.hpc_deps.tmp" "$build/.hpc_deps" || fail "renaming $build/.hpc_deps.tmp"
hpc_log "venv: ready: $build"

# The build is ready: the project's virtual_env now leads to it (and the builds no queued or
# running job names go), whether or not a submitter still waits for this job: one interrupted by
# Ctrl-C leaves the same project as one that waited. Under .virtual_env.use.lock held
# exclusively, as the submitter does it; when submissions hold it longer than a minute,
# virtual_env stays as it was (the next submissions use this build all the same).
# hpc_say: the messages of venv_build.bash, into this job's log.
hpc_say() {
  hpc_log "venv: $*"
}
# shellcheck source=virtual_env_hpc_files/venv_build.bash
source "${runner_lib%/*}/venv_build.bash"
# HPC_VENV_SWITCH_WAIT: how long to wait for that lock, in seconds (default 60).
if exec {use_fd}>>"$source_dir/.virtual_env.use.lock" && flock -w "${HPC_VENV_SWITCH_WAIT:-60}" -x "$use_fd"; then
  hpc_venv_collect "$source_dir" "venv-$SLURM_JOB_ID"
  [[ $(readlink -- "$source_dir/virtual_env" 2>/dev/null) != ".virtual_env_builds/venv-$SLURM_JOB_ID" ]] ||
    hpc_log "venv: $source_dir/virtual_env leads to it"
else
  msg="venv: other submissions hold $source_dir/.virtual_env.use.lock: $source_dir/virtual_env stays as it was"
  msg+=" (new jobs use this build all the same)"
  hpc_log "$msg"
fi
