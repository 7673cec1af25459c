# shellcheck shell=bash
# shellcheck disable=SC2154 # reads hpc_plan_*, hpc_profile_* and hpc_venv_dir of the submitter's libraries
# venv_runner.bash: the virtual-environment runner on the login side: is ${source_dir}/virtual_env
# ready for the project's dependency file, and if not, an install job that builds it on a compute
# node (virtual_env_hpc_files/install_venv.sh), waited for with its progress shown.
# On the nodes the runner is hpc_job_task's 'venv' case (hpc_files/lib/hpc_job.bash).

# hpc_venv_deps_file SOURCE_DIR: prints the dependency file (Pipfile wins over requirements.txt),
# or nothing when there is none.
hpc_venv_deps_file() {
  local f
  for f in "$1/Pipfile" "$1/requirements.txt"; do
    [[ -f $f ]] && printf '%s\n' "$f" && return 0
  done
  return 0
}

# hpc_venv_stamp DEPS_FILE: what .hpc_deps must hold for a venv built from DEPS_FILE now.
hpc_venv_stamp() {
  if [[ -n $1 ]]; then
    printf '%s %s\n' "$(cksum <"$1")" "${1##*/}"
  else
    printf 'none\n'
  fi
}

# hpc_venv_is_ready VENV STAMP: true when VENV was built for exactly STAMP.
hpc_venv_is_ready() {
  [[ -r $1/bin/activate && -r $1/.hpc_deps && $(<"$1/.hpc_deps") == "$2" ]]
}

# hpc_venv_ensure: makes sure the plan's venv is ready, else submits the install job and waits;
# dies with the install log's path when the install fails.
hpc_venv_ensure() {
  local deps stamp id log state last='' start=$SECONDS sbatch_args=()
  deps=$(hpc_venv_deps_file "$hpc_plan_source_dir")
  stamp=$(hpc_venv_stamp "$deps")
  hpc_venv_is_ready "$hpc_plan_venv" "$stamp" && return 0

  if [[ -z $deps ]]; then
    hpc_say "no Pipfile or requirements.txt in $hpc_plan_source_dir: the virtual environment will be empty"
  elif [[ -e $hpc_plan_venv ]]; then
    hpc_say "${deps##*/} changed since $hpc_plan_venv was built: building it again"
  else
    hpc_say "no virtual environment yet: building $hpc_plan_venv from ${deps##*/}"
  fi
  log=$hpc_plan_outputs_dir/venv_install_%j.out
  sbatch_args=(--parsable --job-name="$hpc_plan_project_name-venv-install" --nodes=1 --ntasks=1
    --cpus-per-task=1 --mem="$hpc_profile_defaults_mem_no_gpu" --time=00-01:00:00
    --output="$log" --chdir="$hpc_plan_source_dir")
  [[ -z $hpc_plan_account ]] || sbatch_args+=(--account="$hpc_plan_account")
  [[ -z $hpc_plan_partition ]] || sbatch_args+=(--partition="$hpc_plan_partition")
  id=$(sbatch "${sbatch_args[@]}" "$hpc_venv_dir/install_venv.sh" "$hpc_plan_venv" "$deps" "$stamp" \
    "$hpc_profile_venv_system_site_packages") || hpc_die "sbatch refused the virtual environment's install job"
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
  hpc_venv_is_ready "$hpc_plan_venv" "$stamp" ||
    hpc_die "the virtual environment's install job $id failed; nothing was submitted. Its log: $log"
  hpc_say "install job $id: the virtual environment is ready ($((SECONDS - start)) s)"
}
