# shellcheck shell=bash
# modes/gather.bash: a map's gather job (submitted by modes/map.bash, never chosen by options):
# one job after the map's array that reads the tasks' status files and runs --gather's command.

# What this mode reads, set by the others: declared here, not set, so that the linter knows each name.
declare -g hpc_lib_dir

# hpc_mode_gather_describe: one line on the mode.
hpc_mode_gather_describe() {
  printf '%s\n' "a map's gather job, after its array"
}

# hpc_mode_gather_job_setup: (the job) the map's status files read, the gather's variables.
hpc_mode_gather_job_setup() {
  # shellcheck source=/dev/null # hpc_map.bash: linted on its own (see docs/architecture.md)
  source "$hpc_lib_dir/hpc_map.bash"
  hpc_map_gather_setup
}
