# shellcheck shell=bash
# shellcheck disable=SC2154 # reads hpc_plan_*, hpc_profile_* and hpc_venv_dir of the submitter's libraries
# venv_runner.bash: the virtual-environment runner on the login side: is ${source_dir}/virtual_env
# ready for the project's dependency file, and if not, an install job that builds it on a compute
# node (virtual_env_hpc_files/install_venv.sh), waited for with its progress shown.
# On the nodes the runner is hpc_job_task's 'venv' case (hpc_files/lib/hpc_job.bash).

# hpc_venv_read FILE: sets hpc_venv_text to FILE's content without its trailing newlines, as
# $(cat FILE) would, but without starting a process.
hpc_venv_read() {
  hpc_venv_text=''
  IFS= read -r -d '' hpc_venv_text <"$1" || true
  while [[ $hpc_venv_text == *$'\n' ]]; do hpc_venv_text=${hpc_venv_text%$'\n'}; done
}

# hpc_venv_expect SOURCE_DIR: sets hpc_venv_deps, the dependency file (Pipfile wins over
# requirements.txt; empty when there is neither), and hpc_venv_stamp, what VENV/.hpc_deps holds
# when the venv was built from that file as it is now: its name and content ('none' without one).
# Starts no process: it runs on every submission.
hpc_venv_expect() {
  local f
  hpc_venv_deps=''
  for f in "$1/Pipfile" "$1/requirements.txt"; do
    if [[ -f $f ]]; then
      hpc_venv_deps=$f
      break
    fi
  done
  hpc_venv_stamp=none
  if [[ -n $hpc_venv_deps ]]; then
    hpc_venv_read "$hpc_venv_deps"
    hpc_venv_stamp=${hpc_venv_deps##*/}$'\n'$hpc_venv_text
  fi
}

# hpc_venv_deps_file SOURCE_DIR: prints the dependency file, or nothing (see hpc_venv_expect).
hpc_venv_deps_file() {
  hpc_venv_expect "$1"
  [[ -z $hpc_venv_deps ]] || printf '%s\n' "$hpc_venv_deps"
}

# hpc_venv_stamp DEPS_FILE: prints what .hpc_deps holds for a venv built from DEPS_FILE now.
hpc_venv_stamp() {
  if [[ -z $1 ]]; then
    printf 'none\n'
  else
    hpc_venv_read "$1"
    printf '%s\n%s\n' "${1##*/}" "$hpc_venv_text"
  fi
}

# hpc_venv_is_ready VENV STAMP: true when VENV was built for exactly STAMP.
hpc_venv_is_ready() {
  [[ -r $1/bin/activate && -r $1/.hpc_deps ]] || return 1
  hpc_venv_read "$1/.hpc_deps"
  [[ $hpc_venv_text == "$2" ]]
}

# hpc_venv_ensure: makes sure the plan's venv is ready, else submits the install job and waits;
# dies with the install log's path when the install fails.
hpc_venv_ensure() {
  local deps id log state last='' start=$SECONDS sbatch_args=() lock_fd
  hpc_venv_expect "$hpc_plan_source_dir"
  deps=$hpc_venv_deps
  hpc_venv_is_ready "$hpc_plan_venv" "$hpc_venv_stamp" && return 0

  # One install at a time per project: concurrent submissions wait for it, then find it ready.
  exec {lock_fd}>>"$hpc_plan_source_dir/.virtual_env.lock" || hpc_die "cannot open $hpc_plan_source_dir/.virtual_env.lock"
  if ! flock -n "$lock_fd"; then
    hpc_say "another submission is building the virtual environment; waiting for it"
    flock "$lock_fd" || hpc_die "cannot lock $hpc_plan_source_dir/.virtual_env.lock"
  fi
  hpc_venv_expect "$hpc_plan_source_dir"
  deps=$hpc_venv_deps
  if hpc_venv_is_ready "$hpc_plan_venv" "$hpc_venv_stamp"; then
    exec {lock_fd}>&-
    return 0
  fi

  if [[ -z $deps ]]; then
    hpc_say "no Pipfile or requirements.txt in $hpc_plan_source_dir: the virtual environment will be empty"
  elif [[ -e $hpc_plan_venv ]]; then
    hpc_say "${deps##*/} changed since $hpc_plan_venv was built: building it again"
  else
    hpc_say "no virtual environment yet: building $hpc_plan_venv from ${deps##*/}"
  fi
  log=$hpc_plan_outputs_dir/venv_install_%j.out
  sbatch_args=(--parsable --job-name="$hpc_plan_project_name-venv-install" --nodes=1 --ntasks=1
    --cpus-per-task=1 --mem=2G --time=00-01:00:00
    --output="$log" --chdir="$hpc_plan_source_dir")
  [[ -z $hpc_plan_account ]] || sbatch_args+=(--account="$hpc_plan_account")
  [[ -z $hpc_plan_partition ]] || sbatch_args+=(--partition="$hpc_plan_partition")
  id=$(sbatch "${sbatch_args[@]}" "$hpc_venv_dir/install_venv.sh" "$hpc_venv_dir/venv_runner.bash" \
    "$hpc_plan_venv" "$hpc_profile_venv_system_site_packages") || hpc_die "sbatch refused the virtual environment's install job"
  id=${id%%;*}
  log=${log//%j/$id}
  hpc_say "install job $id submitted; its log: $log"
  while :; do
    state=$(squeue -h -j "$id" -o '%T' 2>/dev/null) || state=
    [[ -n $state ]] || break
    if [[ $state != "$last" ]]; then
      hpc_say "install job $id: $state ($((SECONDS - start)) s)"
      last=$state
    fi
    sleep 1
  done
  exec {lock_fd}>&-
  hpc_venv_is_ready "$hpc_plan_venv" "$hpc_venv_stamp" ||
    hpc_die "the virtual environment's install job $id failed; nothing was submitted. Its log: $log"
  hpc_say "install job $id: the virtual environment is ready ($((SECONDS - start)) s)"
}
