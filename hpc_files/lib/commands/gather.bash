# shellcheck shell=bash
# Summary: a map's gather job again, or right here (--here)
# Usage: bash job_submitter.sh gather EXP [--here]
#
#   gather EXP          Submits the gather job of experiment EXP's newest map again, now (it
#                       reads the tasks' status files afresh and applies its policy).
#     --here            Runs it right here instead (the login node): the same reading, policy,
#                       variables and venv (a container map's gather runs as a job only); exit
#                       status the command's, 1 when the policy is not met.
#   -h, --help          This text.
#
# It reads the project's manifests (see 'status --help'); SCRATCH must be set as for submitting.
#
# Exit status: 0 submitted, 1 refused or failed, 2 bad input (an unknown experiment is answered
# with the known ones).

# gather.bash: the command 'gather' (bash job_submitter.sh gather EXP [--here]): the gather job of
# the newest map of experiment EXP again, or right here (hpc_map.bash).

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_common.bash: the library's folder.
declare -g hpc_lib_dir

# shellcheck source=hpc_files/lib/hpc_manage.bash
source "$hpc_lib_dir/hpc_manage.bash"
# The gather command is read as the configs file's (hpc_configs_expand).
hpc_submission_load

# hpc_command_gather EXP [--here]: the command 'gather'.
hpc_command_gather() {
  local word
  hpc_manage_begin
  (($# >= 1)) && [[ $1 != -* ]] || hpc_die_usage "gather" "needs one experiment; usage: gather EXP [--here]"
  word=${2-}
  [[ $word != --here ]] || word=${3-}
  [[ $word != -* ]] || hpc_commands_die_unknown_option gather "$word"
  [[ -z $word ]] || hpc_die_usage "gather" "unexpected word '$word'; usage: gather EXP [--here]"
  hpc_manage_target "$1"
  # shellcheck source=/dev/null # hpc_map.bash: linted on its own (see docs/architecture.md)
  source "$hpc_lib_dir/hpc_map.bash"
  if (($# == 2)); then
    hpc_map_gather_here "${hpc_manage_dir%/*}/map/$1" "$1"
  else
    hpc_map_gather_again "${hpc_manage_dir%/*}/map/$1"
  fi
}
