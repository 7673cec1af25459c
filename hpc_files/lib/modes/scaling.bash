# shellcheck shell=bash
# modes/scaling.bash: --scaling-test: one job per configuration and repeat, held, then the report
# job (the group workflow). The submission's side is hpc_scaling_submit.bash, the job's
# hpc_scaling.bash; the report job's own mode is modes/scaling_report.bash.

# What this mode reads, set by the others: declared here, not set, so that the linter knows each name.
declare -g hpc_lib_dir hpc_plan_outputs_dir hpc_scaling_runs_text hpc_scaling_order hpc_scaling_workdir \
  hpc_plan_workdir scaling_run_dir hpc_plan_scaling_key hpc_opt_exp_name
declare -ga hpc_scaling_runs

# hpc_mode_scaling_describe: one line on the mode.
hpc_mode_scaling_describe() {
  printf '%s\n' "a scaling study (--scaling-test): one job per configuration, then a report job"
}

# hpc_mode_scaling_check: the scaling options (hpc_scaling_check_options).
hpc_mode_scaling_check() {
  # shellcheck source=/dev/null # hpc_scaling_submit.bash: linted on its own (see docs/architecture.md)
  source "$hpc_lib_dir/hpc_scaling_submit.bash"
  hpc_scaling_check_options
}

# hpc_mode_scaling_plan: the plan of the options, then the study's runs.
hpc_mode_scaling_plan() {
  # shellcheck disable=SC2034 # read by hpc_scaling_dry_run and the study
  hpc_scaling_dir=''
  hpc_plan_make
  hpc_scaling_configurations
}

# hpc_mode_scaling_fit: the largest configuration's fit; the study's folder and order.
hpc_mode_scaling_fit() {
  hpc_scaling_check_fit
  hpc_scaling_root=$hpc_plan_outputs_dir/scaling/${hpc_opt_exp_name:-default}
  hpc_scaling_shared
  hpc_scaling_choose_order
}

# hpc_mode_scaling_dry_run: the runs, their order and the largest run's job (hpc_scaling_dry_run).
hpc_mode_scaling_dry_run() { hpc_scaling_dry_run; }

# hpc_mode_scaling_confirm: asks with the study's summary.
hpc_mode_scaling_confirm() {
  local summary
  hpc_scaling_runs_text
  summary="Scaling test: ${#hpc_scaling_runs[@]} run(s): $hpc_scaling_runs_text, "
  if [[ $hpc_scaling_order == serial ]]; then summary+='one after another'; else summary+='released together'; fi
  hpc_submit_confirm "$summary; and one report job"
}

# hpc_mode_scaling_prepare: the study's root checked, then the preparation of the options' plan.
hpc_mode_scaling_prepare() {
  hpc_group_check_root "$hpc_scaling_root" "scaling study's"
  hpc_plan_make
  hpc_submit_prepare
  trap - EXIT
}

# hpc_mode_scaling_submit: the study (hpc_scaling_submit_study).
hpc_mode_scaling_submit() { hpc_scaling_submit_study; }

# hpc_mode_scaling_tasks: true: each run has folders of its own (task_KEY).
hpc_mode_scaling_tasks() { :; }

# hpc_mode_scaling_job_setup: (the job) the run's variables (hpc_scaling_run_setup).
hpc_mode_scaling_job_setup() {
  # shellcheck source=/dev/null # hpc_scaling.bash: linted on its own (see docs/architecture.md)
  source "$hpc_lib_dir/hpc_scaling.bash"
  hpc_scaling_run_setup
}

# hpc_mode_scaling_job_workdir: (the job) every run starts in a folder of its own, so that
# relative files (a tutorial's snapshot.pt) never pass between runs; the program still comes
# from the project.
hpc_mode_scaling_job_workdir() {
  [[ -z ${hpc_plan_workdir:-} || -d $hpc_plan_workdir ]] ||
    hpc_job_fail "workdir" "the working folder $hpc_plan_workdir (--workdir) is missing"
  hpc_scaling_workdir "${hpc_plan_workdir:-}" "${scaling_run_dir:?}" "${hpc_plan_scaling_key:?}"
  [[ ! -L $hpc_scaling_workdir ]] || hpc_job_fail "workdir" "$hpc_scaling_workdir is a symbolic link"
  export HPC_WORKDIR=$hpc_scaling_workdir
  [[ -d $HPC_WORKDIR ]] || (umask go-w && mkdir -p -- "$HPC_WORKDIR") ||
    hpc_job_fail "workdir" "cannot make $HPC_WORKDIR"
  hpc_job_log "working folder $HPC_WORKDIR (this run's own)"
}

# hpc_mode_scaling_job_run: (the job) the launcher command timed, just before to just after.
hpc_mode_scaling_job_run() {
  hpc_scaling_run_start
  hpc_job_run_program
  hpc_scaling_run_stop
}

# hpc_mode_scaling_job_end STATUS: (the job, cleaned up) the run's record (hpc_scaling_run_end).
hpc_mode_scaling_job_end() { hpc_scaling_run_end "$1"; }
