# shellcheck shell=bash
# venv.bash: the runner of the project's virtual environment (${source_dir}/virtual_env). At
# submission: the checks of --workdir (a folder of the host) and the venv's readiness
# (virtual_env_hpc_files/venv_runner.bash, read only then: an install job builds the venv when no
# build is ready). In a task (hpc_job_task): the venv's environment. The interface of a runner:
# docs/architecture.md.

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# the plan file: hpc_plan_*; the job: source_dir; hpc_common.bash: hpc_lib_dir; hpc_job_resolve_program: the module.
declare -g source_dir hpc_lib_dir hpc_job_python_module hpc_plan_venv hpc_plan_python_helpers
# At submission: hpc_options.bash: the options; hpc_facts_locate: hpc_venv_dir; hpc_plan.bash:
# the plan; venv_runner.bash: the build found.
declare -g hpc_opt_workdir hpc_venv_dir hpc_plan_source_dir hpc_venv_build hpc_venv_stamp

# shellcheck disable=SC2034 # hpc_plan_workdir and hpc_submit_host_workdir are read by hpc_plan_adopt
# hpc_runner_venv_check: (submission, before the plan) --workdir is a folder on the cluster's
# shared file system where the program starts: absolute, or relative to the current folder, '..'
# going up the path as written (as the shell's cd reads it). Sets hpc_submit_host_workdir (which
# the plan copies) and hpc_plan_workdir to it, absolute and clean (left empty without
# --workdir). It need not exist (the submission makes it), but what exists of it must be folders,
# the deepest of them writable, and no name longer than 255 bytes: exit 2 otherwise, having made
# nothing.
hpc_runner_venv_check() {
  local path=$hpc_opt_workdir part dir='' parent=''
  local -a parts clean=()
  [[ -n $path ]] || return 0
  [[ $path == /* ]] || path=$PWD/$path
  IFS=/ read -r -a parts <<<"$path"
  for part in "${parts[@]}"; do
    case $part in
      '' | .) ;;
      ..) ((${#clean[@]} == 0)) || unset 'clean[-1]' ;;
      *) clean+=("$part") ;;
    esac
  done
  if ! ((${#clean[@]})); then
    local msg="'$hpc_opt_workdir' is the root folder; accepted: a folder"
    msg+=" of your own, absolute or relative to the current folder"
    hpc_die_usage "--workdir" "$msg"
  fi
  for part in "${clean[@]}"; do
    # No file system holds a longer name (NAME_MAX): mkdir would fail after the checks.
    if ! ((${#part} <= 255)); then
      local msg="'$hpc_opt_workdir' has a name longer than 255 bytes;"
      msg+=" accepted: a folder path whose names are at most 255 bytes each"
      hpc_die_usage "--workdir" "$msg"
    fi
  done
  for part in "${clean[@]}"; do
    dir+=/$part
    [[ -e $dir || -L $dir ]] || break
    [[ -d $dir ]] ||
      hpc_die_usage "--workdir" \
        "'$hpc_opt_workdir': $dir is not a folder; accepted: a folder, absolute or relative to the current folder"
    parent=$dir
  done
  # The folder itself, or where it is to be made: tasks make their task_N folders in it.
  [[ -z $parent || -w $parent ]] ||
    hpc_die_usage "--workdir" "'$hpc_opt_workdir': $parent is not writable for you; accepted: a folder you can write in"
  printf -v hpc_plan_workdir '/%s' "${clean[@]}"
  hpc_submit_host_workdir=$hpc_plan_workdir
}

# hpc_runner_venv_prepare: (submission, after the confirmation, before the plan file) makes sure
# a build of the venv for the project's dependency file is ready, else submits the install job
# and waits (hpc_venv_ensure); the plan names that build (hpc_plan_venv).
hpc_runner_venv_prepare() {
  # The venv's readiness, read once (a study prepares each run).
  # shellcheck source=virtual_env_hpc_files/venv_runner.bash
  declare -F hpc_venv_ensure >/dev/null || source "$hpc_venv_dir/venv_runner.bash"
  hpc_venv_ensure
}

# shellcheck disable=SC2034 # hpc_runner_* are read by hpc_submit_dry_run
# hpc_runner_venv_preview: (dry run, nothing made) the plan names the build the job would run
# from when one is ready; else hpc_runner_preview says that an install job would build it first.
# Also sets what the dry run says of the program's start: hpc_runner_start_text (where it starts
# without --workdir), hpc_runner_sets_workdir (1: HPC_WORKDIR is always defined) and
# hpc_runner_env_text (added to the PYTHONPATH line).
hpc_runner_venv_preview() {
  # shellcheck source=virtual_env_hpc_files/venv_runner.bash
  declare -F hpc_venv_expect >/dev/null || source "$hpc_venv_dir/venv_runner.bash"
  hpc_runner_preview=''
  # Without --workdir the program starts in the project, and HPC_WORKDIR is not defined.
  hpc_runner_start_text="$hpc_plan_source_dir (the project)" hpc_runner_sets_workdir=0
  hpc_runner_env_text=" and the venv $hpc_plan_venv"
  hpc_venv_expect "$hpc_plan_source_dir"
  if hpc_venv_find "$hpc_plan_source_dir" "$hpc_venv_stamp"; then
    hpc_plan_venv=$hpc_venv_build
  else
    hpc_runner_preview="The virtual environment $hpc_plan_venv would be built first by an install job."
  fi
}

# hpc_runner_venv_plan: (the plan, hpc_plan_make) the venv a venv job runs from
# (hpc_runner_venv_prepare names the build).
hpc_runner_venv_plan() {
  hpc_plan_venv=$hpc_plan_source_dir/virtual_env
}

# shellcheck disable=SC2034 # read by the job (hpc_job.bash) and the dry run
# hpc_runner_venv_folders EXP_DIR [TASK]: (the batch shell, hpc_job_own_folders; and the dry run)
# W&B writes into the experiment's folder on scratch, each array task's its own: sets
# hpc_runner_wandb_dir, hpc_runner_wandb_host (the host folder to make) and hpc_runner_wandb_note
# (what the dry run adds).
hpc_runner_venv_folders() {
  hpc_runner_wandb_dir=$1${2:+/$2} hpc_runner_wandb_host=$1${2:+/$2} hpc_runner_wandb_note=''
}

# shellcheck disable=SC2034 # read by the job (hpc_job.bash) and the dry run
# hpc_runner_venv_python: (the job) sets hpc_runner_python to the Python that runs the toolkit's
# helpers: the venv's, the one sure to be there in a venv job; python3 of the node without one.
hpc_runner_venv_python() {
  hpc_runner_python=python3
  [[ ! -x ${hpc_plan_venv:-}/bin/python ]] || hpc_runner_python=$hpc_plan_venv/bin/python
}

# hpc_runner_venv_node_work: (the job) false: a node needs nothing of the venv before the program
# (it is on the shared file system).
hpc_runner_venv_node_work() {
  return 1
}

# hpc_runner_venv_node_setup PATH: (each node's guard, PATH its SLURM_TMPDIR) nothing to do.
hpc_runner_venv_node_setup() {
  :
}

# shellcheck disable=SC2034 # hpc_runner_here_env and hpc_runner_here_unset: read by the caller
# hpc_runner_venv_here SOURCE_DIR: (the login node: gather EXP --here) the environment that runs a
# command here as a job would: the project's venv when it has one (hpc_runner_here_env: NAME=VALUE
# to export; hpc_runner_here_unset: names to unset). Never false.
hpc_runner_venv_here() {
  hpc_runner_here_env=() hpc_runner_here_unset=()
  [[ -x $1/virtual_env/bin/python ]] || return 0
  hpc_runner_here_env=("VIRTUAL_ENV=$1/virtual_env" "PATH=$1/virtual_env/bin:$PATH") hpc_runner_here_unset=(PYTHONHOME)
}

# hpc_runner_venv_enter TEMPLATE...: enters the venv (without sourcing bin/activate), puts the
# toolkit's scontrol and helpers first, expands the command into hpc_configs_argv and, with
# --workdir, resolves the project's program and enters the working folder.
hpc_runner_venv_enter() {
  [[ -x $hpc_plan_venv/bin/python ]] || hpc_job_fail "venv" "no virtual environment at $hpc_plan_venv"
  hpc_job_enter_venv "$hpc_plan_venv"
  # First on the program's PATH: the scontrol that counts its own requeue against --requeue N.
  export PATH=$hpc_lib_dir/shims:$PATH
  # The toolkit's helpers (hpc_helpers) are importable by the program without installing them.
  export PYTHONPATH=$hpc_plan_python_helpers${PYTHONPATH:+:$PYTHONPATH}
  hpc_configs_expand "$@" || hpc_job_fail "command" "the configs file refers to a variable this job does not define"
  if [[ -n ${HPC_WORKDIR:-} ]]; then
    # The command's program is the project's; the program starts in its working folder.
    hpc_job_resolve_program "$source_dir"
    ((hpc_job_python_module == 0)) || export PYTHONPATH=$PYTHONPATH:$source_dir
    cd -- "$HPC_WORKDIR" || hpc_job_fail "workdir" "cannot enter $HPC_WORKDIR"
  fi
}

# hpc_runner_venv_wrap ARGV...: sets hpc_runner_argv to ARGV as it is (the venv is this process's
# environment).
# shellcheck disable=SC2034 # hpc_runner_argv: read by hpc_job_runner_wrap
hpc_runner_venv_wrap() {
  hpc_runner_argv=("$@")
}
