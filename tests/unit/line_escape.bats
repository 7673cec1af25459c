#!/usr/bin/env bats
# One escape for a field of a line (hpc_manifest_escape, hpc_manifest.bash): a manifest's value
# holding a backslash, newline, tab, CR or unit separator stays on its one line and reads back
# exact (printf %b, as the status index's fields do).
# shellcheck disable=SC2016 # the bash -c script is in single quotes on purpose: its own shell expands it

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  TMP=$(hpc_test_tmp)
}

@test "a manifest value holding \\ newline tab CR or the unit separator is one line, read back exact" {
  cd "$TMP"
  run --separate-stderr bash -c '
    set -euo pipefail
    source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
    source "$HPC_ROOT/hpc_files/lib/hpc_manifest.bash"
    printf -v odd "a\\\\b\nc\td\re\037f\\\\"
    hpc_manifest_text=""
    hpc_manifest_put format 1
    hpc_manifest_put job_id 4242
    hpc_manifest_put note "$odd"
    hpc_manifest_put argv plain "$odd" "x\\y"
    hpc_manifest_commit "$PWD/m.manifest"
    grep -c "" m.manifest
    hpc_manifest_read "$PWD/m.manifest"
    [[ ${hpc_mf[note]} == "$odd" ]] && echo note-exact
    [[ ${hpc_mf_argv[1]} == "$odd" && ${hpc_mf_argv[2]} == "x\\y" && ${#hpc_mf_argv[@]} == 3 ]] && echo argv-exact
    grep -c $'"'"'\x1f'"'"' m.manifest || true
  '
  assert_success
  assert_equal "$stderr" ""
  # format, job_id, note, argv x3, end: one line each; no raw unit separator.
  assert_output $'7\nnote-exact\nargv-exact\n0'
}
