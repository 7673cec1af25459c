# shellcheck shell=bash
# modes/offline.bash: --wandb-offline: one array task per grid point of the sweep file, each with
# its own command and WANDB_MODE=offline (hpc_sweep.bash expands the grid).

# What this mode reads, set by the others: declared here, not set, so that the linter knows each name.
declare -g hpc_lib_dir hpc_plan_scratch_dir hpc_plan_exp_name
declare -ga hpc_plan_offline_commands

# hpc_mode_offline_describe: one line on the mode.
hpc_mode_offline_describe() {
  printf '%s\n' "an offline grid sweep (--wandb-offline), one array task per grid point"
}

# hpc_mode_offline_plan: one GPU per task, the plan, the grid's array.
hpc_mode_offline_plan() {
  # shellcheck source=hpc_files/lib/hpc_sweep.bash
  source "$hpc_lib_dir/hpc_sweep.bash"
  hpc_sweep_before_plan
  hpc_plan_make
  hpc_sweep_plan
}

# hpc_mode_offline_tasks: true: each grid point has folders of its own (task_N).
hpc_mode_offline_tasks() { :; }

# hpc_mode_offline_submitted: (after 'Submitted job') where the offline runs go, and how to
# upload them.
hpc_mode_offline_submitted() {
  local exp=$hpc_plan_scratch_dir/$hpc_plan_exp_name
  if [[ -n ${WANDB_DIR:-} ]]; then
    printf 'Offline runs go to %s/wandb (WANDB_DIR of this shell); ' "$WANDB_DIR"
    printf 'when the array has ended, upload them from a machine with internet:\n  wandb sync %q/wandb\n' "$WANDB_DIR"
  else
    printf 'Offline runs go to %s/task_N/wandb; ' "$exp"
    printf 'when the array has ended, upload them from a machine with internet:\n  wandb sync %q/task_*/wandb\n' "$exp"
  fi
}

# hpc_mode_offline_job_setup: (the job) the task's grid point's command, W&B offline.
hpc_mode_offline_job_setup() {
  local i=${SLURM_ARRAY_TASK_ID:?}
  [[ -n ${hpc_plan_offline_commands[i]:-} ]] || hpc_job_fail "sweep" "no grid point $i in this job"
  # shellcheck disable=SC2034 # hpc_job_command: read by hpc_job_main
  IFS=$'\x1f' read -r -a hpc_job_command <<<"${hpc_plan_offline_commands[i]}"
  export WANDB_MODE=offline
  hpc_job_log "grid point $i of ${#hpc_plan_offline_commands[@]}, offline"
}

# hpc_mode_offline_job_folders: (the job) the task's own folders, and a log line naming its variables.
hpc_mode_offline_job_folders() {
  hpc_job_own_folders
  hpc_job_task_variables_log
}
