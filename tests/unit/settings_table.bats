#!/usr/bin/env bats
# The table of settings (hpc_opt_table, hpc_files/lib/hpc_options.bash): each option is one row,
# and the parser, the built-in values, the mode triggers and the defaults file's keys are read
# from it, so that a new option is one row (and its check, when it has one of its own).

bats_require_minimum_version 1.5.0
# Set through the table by hpc_opt_defaults and hpc_opt_parse (the row the second test adds).
# shellcheck disable=SC2034 # read by hpc_options.bash through its row (printf -v), not by name
declare -g hpc_opt_chunk

setup() {
  load '../helpers/common'
  source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
  source "$HPC_ROOT/hpc_files/lib/hpc_options.bash"
}

@test "every row: well formed, its spellings find it and no other row, its variable starts at its default" {
  local row word name count=0
  local -A owner=()
  hpc_opt_defaults
  for row in "${hpc_opt_table[@]}"; do
    [[ $row =~ ^[a-z_]+=[^|]*\|-[^|]+\|(value|flag|multi)\|[^|]+\|( -[-A-Za-z0-9_]+)+$ ]] ||
      fail "not a row: '$row'"
    hpc_opt_fields "$row"
    name=$hpc_opt_f_name
    for word in ${row##*|}; do
      [[ ! -v owner[$word] ]] || fail "$word is in two rows: ${owner[$word]} and $name"
      owner[$word]=$name
      hpc_opt_find "$word" || fail "hpc_opt_find $word: not found"
      [[ $hpc_opt_f_name == "$name" ]] || fail "hpc_opt_find $word: $hpc_opt_f_name, expected $name"
      count=$((count + 1))
    done
    hpc_opt_fields "$row"
    local ref="hpc_opt_$hpc_opt_f_var"
    if [[ $hpc_opt_f_kind == multi ]]; then
      [[ $(declare -p "$ref") == "declare -a $ref=()" ]] || fail "$ref: $(declare -p "$ref")"
    else
      [[ ${!ref} == "$hpc_opt_f_default" ]] || fail "$ref is '${!ref}', its default '$hpc_opt_f_default'"
    fi
  done
  ((count > 50)) || fail "only $count spellings"
  run ! hpc_opt_find --no-such-option
}

@test "a new row is all an option needs to parse, to make its mode, and to be a defaults file's key" {
  hpc_opt_table+=('items_per_task=|--items-per-task|value|map,file| --items-per-task -k')
  # Its variable, set through the table (hpc_opt_defaults, printf -v): declared for the linter.
  declare -g hpc_opt_items_per_task
  hpc_opt_defaults
  [[ $hpc_opt_items_per_task == '' ]]
  run ! hpc_opt_asks map
  hpc_opt_parse -k 4 -g 1
  assert_equal "$hpc_opt_items_per_task" 4
  hpc_opt_asks map
  run ! hpc_opt_asks scaling
  # As a key of the defaults file, with its origin.
  hpc_files_dir=$BATS_TEST_TMPDIR
  printf -- '--items-per-task=8\n' >"$BATS_TEST_TMPDIR/defaults"
  hpc_opt_defaults
  hpc_opt_parse -g 1
  hpc_opt_file_apply
  assert_equal "$hpc_opt_items_per_task" 8
  hpc_opt_settings
  assert_equal "${hpc_opt_settings[*]}" "-g/--gpus=1 (command line) --items-per-task=8 (hpc_files/defaults line 1)"
  # Given empty: refused, naming the file's line.
  printf -- '--items-per-task=\n' >"$BATS_TEST_TMPDIR/defaults"
  hpc_opt_defaults
  run hpc_opt_file_apply
  assert_equal "$status" 2
  assert_output --partial ": --items-per-task from hpc_files/defaults line 1: '' is not accepted; accepted: a non-empty value (see --help)"
}
