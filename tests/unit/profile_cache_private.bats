#!/usr/bin/env bats
# The compiled profiles in HPC_CACHE_DIR are shell files that every submission (a --dry-run too)
# sources: one is sourced only as the user's own regular file (not a link) in a folder of the
# user's own (not a link) that the toolkit made private; a folder of another user is refused with
# one line, anything else is compiled again, never sourced. The other member of the group is a
# real second Unix user (tests/helpers/mate.bash; the suite runs as root).

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  load '../helpers/mate'
  hpc_files_dir=$HPC_ROOT/hpc_files hpc_python_helpers_dir=$HPC_ROOT/python_helpers
  # shellcheck source=hpc_files/lib/hpc_common.bash
  source "$hpc_files_dir/lib/hpc_common.bash"
  # shellcheck source=hpc_files/lib/hpc_profile.bash
  source "$hpc_files_dir/lib/hpc_profile.bash"
  export PYTHONDONTWRITEBYTECODE=1
  hpc_profile_description=''
  # The folder the compiled profiles go in, inside HPC_CACHE_DIR, as the toolkit names it.
  HPC_CACHE_DIR=$BATS_TEST_TMPDIR/probe hpc_profile_load local
  sub=$(cd "$BATS_TEST_TMPDIR/probe" && find . -name local.sh -printf '%h\n')
  sub=${sub#./}
  [[ -n $sub ]]
  # A shared folder, outside bats' own temporary folders (0700), so that the other member can
  # reach it, as on a cluster's /project/<group>.
  lab=$(mktemp -d "/tmp/hpc lab.XXXXXX")
  chmod 755 "$lab"
  export SCRATCH=$lab/scratch HPC_CACHE_DIR=$lab/cache
  mkdir -p "$SCRATCH" "$HPC_CACHE_DIR"
  ran=$lab/planted-code-ran
  printf -v planted 'touch %q\nhpc_profile_description=planted\n' "$ran"
}

teardown() {
  rm -rf -- "${lab:?}"
}

# lab_folders: the shared cache is the group's (setgid, group-writable), as SCRATCH is.
lab_folders() {
  mate_ready
  chgrp -R hpc_lab "$HPC_CACHE_DIR"
  chmod 2775 "$HPC_CACHE_DIR"
}

@test "profile cache on a shared folder: the other member's compiled profile is never sourced; their folder is refused with one line naming it, its owner and the fix" {
  lab_folders
  # shellcheck disable=SC2016 # expanded by the other member's shell
  as_mate 'umask 002 && mkdir -p -- "$1" && printf "%s" "$2" >"$1/local.sh"' _ "$HPC_CACHE_DIR/$sub" "$planted"
  run --separate-stderr hpc_profile_load local
  [[ ! -e $ran ]] || fail "the other member's compiled profile was sourced"
  assert_equal "$status" 2
  assert_equal "$stderr" "bats-exec-test: HPC_CACHE_DIR: '$HPC_CACHE_DIR/$sub' (the compiled profiles) is hpc_mate's, not yours, or a link: not used; set HPC_CACHE_DIR to a folder of your own (e.g. export HPC_CACHE_DIR=\$HOME/.cache/hpc_toolkit)"
}

@test "profile cache: the user's own folder made group-writable, the other member's file in it: not sourced, compiled again, the folder made private" {
  lab_folders
  mkdir -p "$HPC_CACHE_DIR/$sub"
  chgrp hpc_lab "$HPC_CACHE_DIR/$sub"
  chmod 2775 "$HPC_CACHE_DIR/$sub"
  # shellcheck disable=SC2016 # expanded by the other member's shell
  as_mate 'printf "%s" "$2" >"$1/local.sh"' _ "$HPC_CACHE_DIR/$sub" "$planted"
  run --separate-stderr hpc_profile_load local
  assert_success
  [[ ! -e $ran ]] || fail "the other member's compiled profile was sourced"
  hpc_profile_load local 2>/dev/null
  [[ $hpc_profile_description != planted && $hpc_profile_name == local ]]
  assert_equal "$(stat -c '%U %a' "$HPC_CACHE_DIR/$sub/local.sh")" "$(id -un) 600"
  assert_equal "$(($(stat -c '0%a' "$HPC_CACHE_DIR/$sub") & 022))" 0
}

@test "profile cache: a compiled profile that is a link (to a file of the user's) is compiled again, not sourced; a folder that is a link is refused" {
  mkdir -p "$HPC_CACHE_DIR/$sub"
  chmod 700 "$HPC_CACHE_DIR/$sub"
  printf '%s' "$planted" >"$lab/elsewhere.sh"
  ln -s "$lab/elsewhere.sh" "$HPC_CACHE_DIR/$sub/local.sh"
  hpc_profile_load local
  [[ ! -e $ran ]] || fail "a link was sourced"
  [[ $hpc_profile_description != planted && $hpc_profile_name == local ]]
  [[ -f $HPC_CACHE_DIR/$sub/local.sh && ! -L $HPC_CACHE_DIR/$sub/local.sh ]]

  rm -rf -- "${HPC_CACHE_DIR:?}/${sub:?}"
  mkdir -p "$lab/other"
  cp "$lab/elsewhere.sh" "$lab/other/local.sh"
  ln -s "$lab/other" "$HPC_CACHE_DIR/$sub"
  run --separate-stderr hpc_profile_load local
  assert_equal "$status" 2
  [[ ! -e $ran ]] || fail "a profile in a linked folder was sourced"
  [[ $stderr == *"HPC_CACHE_DIR: '$HPC_CACHE_DIR/$sub' (the compiled profiles) is "*", not yours, or a link: not used;"* ]] ||
    fail "$stderr"
}

@test "profile cache: made under umask 002, its folder is the user's alone (0700), the compiled profile 0600" {
  (umask 002 && hpc_profile_load local)
  assert_equal "$(stat -c '%a' "$HPC_CACHE_DIR/$sub" "$HPC_CACHE_DIR/$sub/local.sh")" "700
600"
}
