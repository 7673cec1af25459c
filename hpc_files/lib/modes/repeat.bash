# shellcheck shell=bash
# modes/repeat.bash: --repeat K: an array of K tasks running the same command, task i with seed=i
# and folders of its own (hpc_sweep.bash makes the array).

# What this mode reads, set by the others: declared here, not set, so that the linter knows each name.
declare -g hpc_lib_dir hpc_plan_scratch_dir hpc_plan_exp_name hpc_plan_array_count

# hpc_mode_repeat_describe: one line on the mode.
hpc_mode_repeat_describe() {
  printf '%s\n' "the same command K times (--repeat K), task i with seed=i"
}

# hpc_mode_repeat_plan: the plan, then the array of repeats.
hpc_mode_repeat_plan() {
  # shellcheck source=hpc_files/lib/hpc_sweep.bash
  source "$hpc_lib_dir/hpc_sweep.bash"
  hpc_plan_make
  hpc_sweep_plan
}

# hpc_mode_repeat_tasks: true: each task has folders of its own (task_N).
hpc_mode_repeat_tasks() { :; }

# hpc_mode_repeat_defines NAME: true for the variables the job defines for this mode alone.
hpc_mode_repeat_defines() { [[ $1 == seed ]]; }

# hpc_mode_repeat_dry_folders: (--dry-run) the first and last task's seed and checkpoints_dir.
hpc_mode_repeat_dry_folders() {
  local exp=$hpc_plan_scratch_dir/$hpc_plan_exp_name last=$((hpc_plan_array_count - 1))
  if ((last == 0)); then
    printf 'seed=0 (task 0)\ncheckpoints_dir=%s/task_0 (task 0)\n' "$exp/checkpoints"
  else
    printf 'seed=0 (task 0) ... %s (task %s)\ncheckpoints_dir=%s/task_0 (task 0) ... %s/task_%s (task %s)\n' \
      "$last" "$last" "$exp/checkpoints" "$exp/checkpoints" "$last" "$last"
  fi
}

# hpc_mode_repeat_job_setup: (the job) the task's seed is its index.
hpc_mode_repeat_job_setup() {
  export seed=${SLURM_ARRAY_TASK_ID:?}
}

# hpc_mode_repeat_job_folders: (the job) the task's own folders, and a log line naming its variables.
hpc_mode_repeat_job_folders() {
  hpc_job_own_folders
  hpc_job_task_variables_log
}
