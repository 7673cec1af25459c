# shellcheck shell=bash
# hpc_common.bash: messages, usage and small checks shared by every toolkit command.
# Functions here are prefixed hpc_ and never exit the caller's shell unless their name says so.

# hpc_program: the name of the running command, used as the prefix of every message.
hpc_program=${hpc_program:-${0##*/}}

# hpc_say MESSAGE...: prints one line to stderr, prefixed with the program's name.
hpc_say() {
  printf '%s: %s\n' "$hpc_program" "$*" >&2
}

# hpc_die MESSAGE...: prints the message and exits 1 (a runtime failure).
hpc_die() {
  hpc_say "$@"
  exit 1
}

# hpc_die_usage OPTION MESSAGE: bad input; one line naming the option and what it accepts, exit 2.
hpc_die_usage() {
  hpc_say "$1: $2"
  exit 2
}

# hpc_split_option WORD: for a command-line parser: sets the caller's locals opt (WORD's option)
# and have_value, and for --name=value also value: --name=value means the same as --name value.
hpc_split_option() {
  # shellcheck disable=SC2034 # the caller's locals (Bash's dynamic scope)
  opt=$1 have_value=0
  if [[ $opt == --*=* ]]; then
    # shellcheck disable=SC2034
    value=${opt#*=}
    opt=${opt%%=*}
    # shellcheck disable=SC2034
    have_value=1
  fi
}

# hpc_usage FILE: prints the usage comment block at the top of FILE (the lines after the shebang
# that start with '#', up to the first line that does not), without the leading '# '.
hpc_usage() {
  local line
  {
    IFS= read -r line # shebang
    while IFS= read -r line; do
      case $line in
        '#') printf '\n' ;;
        '# '*) printf '%s\n' "${line#\# }" ;;
        *) break ;;
      esac
    done
  } <"$1"
}
