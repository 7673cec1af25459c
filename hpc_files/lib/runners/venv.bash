# shellcheck shell=bash
# venv.bash: the runner of the project's virtual environment (${source_dir}/virtual_env, kept up
# to date by virtual_env_hpc_files/venv_runner.bash at submission). In a task (hpc_job_task).
# The interface of a runner: docs/architecture.md.

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# the plan file: hpc_plan_*; the job: source_dir; hpc_common.bash: hpc_lib_dir; hpc_job_resolve_program: the module.
declare -g source_dir hpc_lib_dir hpc_job_python_module hpc_plan_venv hpc_plan_python_helpers

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
