# shellcheck shell=bash
# hpc_options_more.bash: what a plain submission does not run of hpc_options.bash: an unknown
# option refused, -W's and --runner's names checked, a mode's options refused outside it, the
# paths of -d/--data and --copy-back taken, an option's value compared with its built-in one;
# loaded at the first call of one of them (their stubs in hpc_options.bash, hpc_lib_load).

# What it reads, set by hpc_options.bash (declared, not set): the table and its row's fields
# (hpc_opt_fields), the aliases of -W; hpc_help.bash: the options' spellings.
declare -g hpc_opt_f_name hpc_opt_f_scopes hpc_opt_f_var hpc_opt_f_default
declare -ga hpc_opt_table hpc_opt_names
declare -gA hpc_opt_launcher_alias_why

# hpc_opt_refuse_outside SCOPE MODE WITH: exit 2 naming the first option of SCOPE that is set,
# except WITH itself: it 'is for MODE; accepted with WITH'.
hpc_opt_refuse_outside() {
  local row
  for row in "${hpc_opt_table[@]}"; do
    [[ $row == *[\|,]"$1"[,\|]* ]] || continue
    hpc_opt_fields "$row"
    [[ $hpc_opt_f_name != "$3" && $hpc_opt_f_scopes == *",$1,"* ]] || continue
    ! hpc_opt_f_is_set || hpc_die_usage "$hpc_opt_f_name" "is for $2; accepted with $3"
  done
}

# hpc_opt_die_unknown OPTION: bad input: OPTION is none of hpc_opt_parse's; names the nearest
# one (hpc_nearest, hpc_help.bash) when one is near. Exit 2.
hpc_opt_die_unknown() {
  # shellcheck source=hpc_files/lib/hpc_help.bash
  source "${BASH_SOURCE[0]%/*}/hpc_help.bash"
  hpc_opt_names
  hpc_nearest "$1" "${hpc_opt_names[@]}"
  [[ -z $hpc_nearest ]] || hpc_die_usage "$1" "unknown option; did you mean $hpc_nearest? (see --help)"
  hpc_die_usage "$1" "unknown option; see 'bash job_submitter.sh --help'"
}

# hpc_opt_launcher_check: (in hpc_opt_set) -W's value: an old name becomes its launcher, with a
# note; else one of the files in hpc_files/lib/launchers/.
hpc_opt_launcher_check() {
  if [[ -n ${hpc_opt_launcher_aliases[$value]+x} ]]; then
    hpc_say "note: -W $value is the old name of -W ${hpc_opt_launcher_aliases[$value]}" \
      "(${hpc_opt_launcher_alias_why[$value]})"
    value=${hpc_opt_launcher_aliases[$value]}
  fi
  hpc_launcher_list
  # shellcheck disable=SC2154 # hpc_launcher_names: set by hpc_launcher_list
  [[ " ${hpc_launcher_names[*]} " == *" $value "* && $value != *" "* ]] && return 0
  # shellcheck source=hpc_files/lib/hpc_help.bash
  source "${BASH_SOURCE[0]%/*}/hpc_help.bash"
  # shellcheck disable=SC2034 # a local of the caller, hpc_opt_set
  accepted=$(hpc_opt_launchers_text)
}

# hpc_opt_runners_text: prints the runners --runner accepts (the files in hpc_files/lib/runners/),
# comma-separated.
hpc_opt_runners_text() {
  local text
  local -a names
  hpc_module_list "${BASH_SOURCE[0]%/*}/runners" names
  printf -v text '%s, ' "${names[@]}"
  printf '%s\n' "${text%, }"
}

# hpc_opt_set_multi NAME WHERE VALUE...: checks and adds the paths of -d/--data or --copy-back,
# from WHERE.
hpc_opt_set_multi() {
  local name=$1 where=$2 value
  shift 2
  if [[ $name == -d/--data ]]; then
    (($#)) || hpc_die_usage "$name" "needs at least one path relative to \${SCRATCH}/\${project_name}"
  else
    (($#)) || hpc_die_usage "$name" "needs at least one path relative to \${SLURM_TMPDIR}"
    for value in "$@"; do hpc_opt_check_relative "$name" "$value" "\${SLURM_TMPDIR}"; done
  fi
  if [[ $name == -d/--data ]]; then hpc_opt_data+=("$@"); else hpc_opt_copy_back+=("$@"); fi
  for value in "$@"; do hpc_opt_seen_add "$name" "$where" "$value"; done
}

# hpc_opt_check_relative NAME PATH BASE: PATH must be a relative path that stays inside BASE.
hpc_opt_check_relative() {
  case /$2/ in
    //) hpc_die_usage "$1" "'' is not accepted; accepted: a path relative to $3" ;;
    //*) hpc_die_usage "$1" "'$2' is absolute; accepted: a path relative to $3" ;;
    */../*) hpc_die_usage "$1" "'$2' leaves $3 (..); accepted: a path inside it" ;;
  esac
  # Only . and / (., ./, ./.): the folder itself, which is not something to copy into itself.
  [[ $2 == *[!./]* ]] || hpc_die_usage "$1" "'$2' is $3 itself; accepted: a path inside it"
  [[ $2 != *$'\n'* ]] || hpc_die_usage "$1" "a path with a newline is not accepted"
}

# hpc_opt_f_is_set: (after hpc_opt_fields) true when that option's value is not its built-in one.
hpc_opt_f_is_set() {
  local ref=hpc_opt_$hpc_opt_f_var
  [[ ${!ref} != "$hpc_opt_f_default" ]]
}
