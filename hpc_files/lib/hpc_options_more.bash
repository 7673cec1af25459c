# shellcheck shell=bash
# hpc_options_more.bash: what a plain submission does not run of hpc_options.bash: an unknown
# option refused, -W's and --runner's names checked, a mode's options refused outside it; loaded
# at the first call of one of them (their stubs in hpc_options.bash, hpc_lib_load).

# What it reads, set by hpc_options.bash (declared, not set): the table and its row's fields
# (hpc_opt_fields), the aliases of -W; hpc_help.bash: the options' spellings.
declare -g hpc_opt_f_name hpc_opt_f_scopes
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
