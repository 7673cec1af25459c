# shellcheck shell=bash
# scaling-report.bash: the command 'scaling-report' (bash job_submitter.sh scaling-report EXP|PATH
# [--out DIR]): a scaling study's report drawn again (hpc_scaling.bash).

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_common.bash: the library's folder.
declare -g hpc_lib_dir

# shellcheck source=hpc_files/lib/hpc_manage.bash
source "$hpc_lib_dir/hpc_manage.bash"

# shellcheck source=/dev/null # hpc_scaling.bash: linted on its own (see docs/architecture.md)
source "$hpc_lib_dir/hpc_scaling.bash"

# hpc_command_scaling_report EXP|PATH [--out DIR]: the command 'scaling-report'.
hpc_command_scaling_report() {
  hpc_scaling_report_command "$@"
}
