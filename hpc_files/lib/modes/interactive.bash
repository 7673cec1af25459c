# shellcheck shell=bash
# modes/interactive.bash: bash job_submitter.sh interactive: the plan of one job, run under
# salloc on this terminal, a shell in place of the program (hpc_interactive.bash: both sides).

# What this mode reads, set by the others: declared here, not set, so that the linter knows each name.
declare -g hpc_lib_dir hpc_opt_dry_run

# shellcheck source=hpc_files/lib/hpc_interactive.bash
source "$hpc_lib_dir/hpc_interactive.bash"

# hpc_mode_interactive_describe: one line on the mode.
hpc_mode_interactive_describe() {
  printf '%s\n' "an interactive session: a shell in the allocation (the command interactive)"
}

# hpc_mode_interactive_args ARGS...: --idle-limit taken out (hpc_interactive_options).
hpc_mode_interactive_args() {
  hpc_interactive_options "$@"
  # shellcheck disable=SC2034 # read by hpc_submit_main
  hpc_mode_args=(${hpc_interactive_args[@]+"${hpc_interactive_args[@]}"})
}

# hpc_mode_interactive_help: the command's usage.
hpc_mode_interactive_help() { hpc_commands_usage interactive; }

# hpc_mode_interactive_settings: the options that make no sense in one shell refused, then the
# defaults file's values but those.
hpc_mode_interactive_settings() {
  hpc_interactive_refuse
  hpc_opt_file_apply interactive
}

# hpc_mode_interactive_check: a terminal on the standard input, unless --dry-run.
hpc_mode_interactive_check() {
  ((hpc_opt_dry_run == 0)) && [[ ! -t 0 ]] || return 0
  local msg="interactive needs a terminal on its standard input (not a pipe, a file or a batch job);"
  msg+=" --dry-run shows what it would ask"
  hpc_say "$msg"
  exit 2
}

# hpc_mode_interactive_plan: one job's plan, in this mode.
hpc_mode_interactive_plan() {
  hpc_plan_make
  # shellcheck disable=SC2034 # read by hpc_plan_record and the job
  hpc_plan_mode=interactive
}

# hpc_mode_interactive_fit: the job's fit; salloc's options.
hpc_mode_interactive_fit() {
  hpc_submit_check_fit
  hpc_interactive_salloc_args
}

# hpc_mode_interactive_dry_run: the salloc line, the environment and the summary.
hpc_mode_interactive_dry_run() { hpc_interactive_dry_run; }

# hpc_mode_interactive_confirm: none: the session is what was asked for, on this terminal.
hpc_mode_interactive_confirm() { :; }

# hpc_mode_interactive_submit: the session (hpc_interactive_session).
hpc_mode_interactive_submit() { hpc_interactive_session; }

# hpc_mode_interactive_job_setup: (the job) the first node's name and the allocation's variables.
hpc_mode_interactive_job_setup() { hpc_interactive_setup; }

# hpc_mode_interactive_job_run: (the batch shell) the shell instead of the program; hpc-run
# (job_step.sh run, HPC_INTERACTIVE_STEP) starts the program as a batch job does.
hpc_mode_interactive_job_run() {
  if [[ -n ${HPC_INTERACTIVE_STEP:-} ]]; then
    hpc_job_run_program
    return 0
  fi
  hpc_job_usage_start
  hpc_interactive_shell
}
