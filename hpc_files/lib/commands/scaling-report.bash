# shellcheck shell=bash
# Summary: a scaling study's report drawn again
# Usage: bash job_submitter.sh scaling-report EXP|PATH [--out DIR]
#
#   scaling-report EXP  Writes the report of experiment EXP's newest scaling study (submitted
#                       with --scaling-test) again, into the study's folder
#                       ${scratch_dir}/hpc_outputs/scaling/EXP/STUDY/.
#   scaling-report PATH The same for the study folder PATH (a path with a /; a copied one too).
#     --out DIR         Writes it into DIR instead: a new or empty folder, or an earlier report.
#   -h, --help          This text.
#
# Exit status: 0 written, 1 failed, 2 bad input (a folder without study.json, an experiment
# without a study).

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
