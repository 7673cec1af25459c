#!/usr/bin/env bats
# The status index's fields (hpc_manage_index_line, hpc_manage.bash) are escaped by the one escape
# for a field of a line (hpc_manifest_escape, hpc_manifest.bash) and read back exact by
# hpc_manage_index_decode.
# shellcheck disable=SC2016 # the bash -c script is in single quotes on purpose: its own shell expands it

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
}

@test "an index line holding \\ newline tab CR or the unit separator is one line, read back exact" {
  run --separate-stderr bash -c '
    set -euo pipefail
    source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
    source "$HPC_ROOT/hpc_files/lib/hpc_manage.bash"
    printf -v odd "a\\\\b\nc\td\re\037f\\\\"
    hpc_manage_row=(4242 "$odd" plain "x\\y" "")
    hpc_manage_index_line
    printf "%s" "$hpc_manage_index_line" | grep -c ""
    IFS=$'"'"'\x1f'"'"' read -r -a hpc_manage_row <<<"$hpc_manage_index_line"
    hpc_manage_index_decode
    [[ ${hpc_manage_row[1]} == "$odd" && ${hpc_manage_row[3]} == "x\\y" ]] && echo exact
    echo "${#hpc_manage_row[@]} ${hpc_manage_row[5]}"
  '
  assert_success
  assert_equal "$stderr" ""
  assert_output $'1\nexact\n6 .'
}

@test "the index escapes its fields with hpc_manifest_escape: one home for the rule" {
  run --separate-stderr bash -c '
    set -euo pipefail
    source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
    source "$HPC_ROOT/hpc_files/lib/hpc_manage.bash"
    hpc_manifest_escape() { printf -v "$1" "<%s>" "${!1}"; }
    hpc_manage_row=(plain $'"'"'a\tb'"'"')
    hpc_manage_index_line
    printf "%s\n" "${hpc_manage_index_line//$'"'"'\x1f'"'"'/|}"
  '
  assert_success
  assert_equal "$stderr" ""
  assert_output $'plain|<a\tb>|.'
}
