# shellcheck shell=bash
# Summary: the usage of a command (help COMMAND), or of the submitter (help)
# Usage: bash job_submitter.sh help [COMMAND]
#
#   help COMMAND        Prints the usage of COMMAND, as 'bash job_submitter.sh COMMAND --help'
#                       does; a command that does not exist is answered with the nearest one.
#   help                The submitter's own usage, as 'bash job_submitter.sh --help' prints it.
#   -h, --help          This text.
#
# Exit status: 0 printed, 2 bad input.

# help.bash: the command 'help': each command's usage is its file's first comment block
# (hpc_commands_usage, hpc_help.bash, which job_submitter.sh loads for every command).

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# job_submitter.sh: its own path; hpc_common.bash: the library's folder.
declare -g hpc_submitter hpc_lib_dir
# The submission's options (hpc_opt_help) are in the libraries a command does not load by itself.
hpc_submission_load

# hpc_command_help [COMMAND]: the command 'help'.
hpc_command_help() {
  (($# <= 1)) || hpc_die_usage "help" "unexpected word '$2'; usage: help [COMMAND]"
  if (($# == 0)); then
    hpc_opt_help "$hpc_submitter"
    return 0
  fi
  [[ $1 != -* ]] || hpc_commands_die_unknown_option help "$1"
  if [[ $1 =~ ^[a-z][a-z-]*$ && -f $hpc_lib_dir/commands/$1.bash ]]; then
    hpc_commands_usage "$1"
    return 0
  fi
  hpc_commands_check_word "$1"
  hpc_die_usage "help" "'$1' is not a command; see --help"
}
