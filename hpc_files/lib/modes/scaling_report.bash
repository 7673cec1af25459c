# shellcheck shell=bash
# modes/scaling_report.bash: a scaling study's report job (plan mode scaling-report, submitted by
# modes/scaling.bash, never chosen by options): one job after the runs that writes the report.

# What this mode reads, set by the others: declared here, not set, so that the linter knows each name.
declare -g hpc_lib_dir

# hpc_mode_scaling_report_describe: one line on the mode.
hpc_mode_scaling_report_describe() {
  printf '%s\n' "a scaling study's report job, after its runs"
}

# hpc_mode_scaling_report_job_setup: (the job) the report's command (hpc_scaling_report_run).
hpc_mode_scaling_report_job_setup() {
  # shellcheck source=/dev/null # hpc_scaling.bash: linted on its own (see docs/architecture.md)
  source "$hpc_lib_dir/hpc_scaling.bash"
  hpc_scaling_report_run
}
