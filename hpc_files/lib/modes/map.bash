# shellcheck shell=bash
# modes/map.bash: --map-range/--map-over (or --repeat K with a gather): one array task per item,
# K per task when chunked, then the gather job (the group workflow). The submission's side is
# hpc_map_submit.bash, the job's hpc_map.bash; the gather job's own mode is modes/gather.bash.

# What this mode reads, set by the others: declared here, not set, so that the linter knows each name.
declare -g hpc_lib_dir hpc_map_chunked

# hpc_mode_map_describe: one line on the mode.
hpc_mode_map_describe() {
  printf '%s\n' "one array task per item of a map (--map-range, --map-over), then a gather"
}

# hpc_mode_map_check: the map's and the gather's options (hpc_map_check_options).
hpc_mode_map_check() {
  # shellcheck source=/dev/null # hpc_map_submit.bash: linted on its own (see docs/architecture.md)
  source "$hpc_lib_dir/hpc_map_submit.bash"
  hpc_map_check_options
}

# hpc_mode_map_plan: the plan, then the map's array (hpc_map_plan; the array is submitted held).
hpc_mode_map_plan() {
  hpc_plan_make
  hpc_map_plan
}

# hpc_mode_map_fit: the tasks' fit, then the gather's.
hpc_mode_map_fit() {
  hpc_submit_check_fit
  hpc_map_check_gather_fit
}

# hpc_mode_map_dry_run: the tasks' dry run, then the map's and the gather's; the former's status.
hpc_mode_map_dry_run() {
  # A name no configs file uses: the dry run lists the command's ${VARS}.
  local _hpc_map_rc=0
  hpc_submit_dry_run || _hpc_map_rc=$?
  hpc_map_dry_run
  return "$_hpc_map_rc"
}

# hpc_mode_map_release ID: (the held array accepted) the map's folder, the gather, the manifest,
# then the release (hpc_map_after_submit).
hpc_mode_map_release() { hpc_map_after_submit "$1"; }

# hpc_mode_map_tasks: true: each item has folders of its own (task_N).
hpc_mode_map_tasks() { :; }

# hpc_mode_map_defines NAME: true for the variables the job defines for a map's tasks alone.
hpc_mode_map_defines() {
  case $1 in map_index | map_item | map_count | map_dir | task_dir) return 0 ;; esac
  return 1
}

# hpc_mode_map_job_setup: (the job) the task's item (hpc_map_task_setup).
hpc_mode_map_job_setup() {
  # shellcheck source=/dev/null # hpc_map.bash: linted on its own (see docs/architecture.md)
  source "$hpc_lib_dir/hpc_map.bash"
  hpc_map_task_setup
}

# hpc_mode_map_job_folders: (the job) the task's own folders and a log line naming its variables;
# a chunk's items get theirs one by one, as each starts (hpc_map_chunk_run).
hpc_mode_map_job_folders() {
  ((${hpc_map_chunked:-0} == 0)) || return 0
  hpc_job_own_folders
  hpc_job_task_variables_log
}

# hpc_mode_map_job_run: (the job) a chunked task runs its items one after the other.
hpc_mode_map_job_run() {
  if ((${hpc_map_chunked:-0})); then hpc_map_chunk_run; else hpc_job_run_program; fi
}

# hpc_mode_map_job_end STATUS: (the job, cleaned up) the task's final status file, for the gather
# (a chunk's items wrote theirs as each ended); its failure is the job's.
hpc_mode_map_job_end() {
  # shellcheck disable=SC2034 # hpc_job_status: the job's, read by hpc_job_main
  ((${hpc_map_chunked:-0})) || hpc_map_task_end "$1" || hpc_job_status=$?
}
