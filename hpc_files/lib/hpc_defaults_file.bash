# shellcheck shell=bash
# hpc_defaults_file.bash: the lines of the project's defaults file, hpc_files/defaults (see
# hpc_opt_file_apply in hpc_options.bash, which reads the file and loads this library only when
# the file holds a setting): each '--long-option=value' line checked and taken through the table
# of settings, as the command line's options are. Bad input: exit 2, one line naming the file, the
# line and the key.

# What this library reads, set by the others: declared here, not set, so that the linter knows
# each name. hpc_options.bash: the table, the row hpc_opt_find found, the values taken so far;
# hpc_common.bash: the file's text.
declare -g hpc_trusted_text hpc_opt_f_name hpc_opt_f_kind hpc_opt_f_scopes hpc_opt_f_var
declare -ga hpc_opt_table hpc_opt_seen
declare -gA hpc_usage_origin

# hpc_opt_file_lines LABEL [interactive]: takes the settings of the defaults file's text
# (hpc_trusted_text), named LABEL in messages, for the options the command line did not give; a
# value the command line gave is still checked. With interactive, the options interactive refuses
# are left out.
hpc_opt_file_lines() {
  local label=$1 line key value name n=0 ref saved
  local text=$hpc_trusted_text$'\n'
  local -A from_line=() from_cli=()
  for name in ${hpc_opt_seen[@]+"${hpc_opt_seen[@]}"}; do from_cli[$name]=1; done
  while [[ -n $text ]]; do
    line=${text%%$'\n'*} text=${text#*$'\n'} n=$((n + 1))
    # Spaces around the line and around '=' are not part of the key or the value.
    line=${line#"${line%%[![:space:]]*}"}
    [[ -n $line && $line != '#'* ]] || continue
    line=${line%"${line##*[![:space:]]}"}
    [[ $line =~ ^(--[A-Za-z0-9_-]+)[[:space:]]*=[[:space:]]*(.*)$ ]] ||
      hpc_die_usage "$label line $n" \
        "'$line' is not accepted; accepted: --long-option=value, a comment (#) or a blank line"
    key=${BASH_REMATCH[1]} value=${BASH_REMATCH[2]} name=''
    ! hpc_opt_find "$key" || name=$hpc_opt_f_name
    hpc_opt_file_check_key "$label line $n" "$key" "$name"
    if [[ $hpc_opt_f_kind != multi ]]; then
      if [[ -v from_line[$name] ]]; then
        value="$key given twice (line ${from_line[$name]}, then line $n); accepted: once (only --data and"
        hpc_die_usage "$label line $n" "$value --copy-back take several)"
      fi
      from_line[$name]=$n
    fi
    [[ ${2-} != interactive || $hpc_opt_f_scopes != *,noint:* ]] || continue
    # shellcheck disable=SC2034 # read by hpc_die_usage (hpc_common.bash)
    hpc_usage_origin[$name]="$label line $n"
    if [[ $hpc_opt_f_kind == multi ]]; then
      if [[ -v from_cli[$name] ]]; then
        [[ $name != --copy-back ]] || hpc_opt_check_relative "$name" "$value" "\${SLURM_TMPDIR}"
      else
        hpc_opt_set_multi "$name" "$label line $n" "$value"
      fi
    elif [[ -v from_cli[$name] ]]; then
      # Checked all the same (a bad line is refused), then the command line's value back.
      ref=hpc_opt_$hpc_opt_f_var saved=${!ref}
      hpc_opt_set "$name" "$value"
      printf -v "$ref" '%s' "$saved"
    else
      hpc_opt_set "$name" "$value"
      hpc_opt_seen_add "$name" "$label line $n"
    fi
    [[ ! -v from_cli[$name] ]] || unset "hpc_usage_origin[$name]"
  done
}

# hpc_opt_file_check_key WHERE KEY NAME: exit 2 unless KEY (the option NAME, empty when none) is a
# key of the defaults file; names the nearest key when one is near.
hpc_opt_file_check_key() {
  [[ -z $3 || $hpc_opt_f_scopes != *,file,* ]] || return 0
  local keys
  keys=$(hpc_opt_file_keys)
  [[ -z $3 ]] ||
    hpc_die_usage "$1" "$2 is not a setting of the defaults file (it is given on the command line); accepted: $keys"
  # shellcheck source=hpc_files/lib/hpc_help.bash
  source "${BASH_SOURCE[0]%/*}/hpc_help.bash"
  local -a candidates
  IFS=', ' read -r -a candidates <<<"$keys"
  hpc_nearest "$2" "${candidates[@]}"
  [[ -z $hpc_nearest ]] || hpc_die_usage "$1" "unknown key '$2'; did you mean $hpc_nearest?"
  hpc_die_usage "$1" "unknown key '$2'; accepted: $keys"
}

# hpc_opt_file_keys: prints the defaults file's keys (the long names of the rows with scope file),
# sorted, comma-separated, for the refusals.
hpc_opt_file_keys() {
  local row
  local -a keys=()
  for row in "${hpc_opt_table[@]}"; do
    hpc_opt_fields "$row"
    [[ $hpc_opt_f_scopes != *,file,* ]] || keys+=("${hpc_opt_f_name#*/}")
  done
  printf '%s\n' "${keys[@]}" | LC_ALL=C sort | paste -sd, - | sed 's/,/, /g'
}
