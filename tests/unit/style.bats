#!/usr/bin/env bats
# The shipped Bash files (hpc_files/, plai_cleanups/, the runners), read as text: no dead
# functions, and none of the banned constructs.

setup() {
  load '../helpers/common'
  cd "$HPC_ROOT" || return 1
}

# shipped_bash: prints the toolkit's shipped Bash files (not tests), one a line.
shipped_bash() {
  git ls-files -- 'hpc_files/*' 'plai_cleanups/*' 'virtual_env_hpc_files/*' 'singularity_hpc_files/*' |
    while IFS= read -r f; do
      [[ $f == *.bash || $f == *.sh ]] || head -n 1 -- "$f" | grep -qE '^#!.*\b(ba)?sh\b' || continue
      printf '%s\n' "$f"
    done
}

# unused_functions FILE...: prints each function defined in FILEs (NAME() {) that no code line
# of FILEs (comments not counted) names besides its definition.
unused_functions() {
  local name code
  code=$(grep -hvE '^[[:space:]]*#' -- "$@")
  grep -hoE '^[a-z_][a-z0-9_]*\(\) \{' -- "$@" | sed 's/() {//' | sort -u | while IFS= read -r name; do
    (($(grep -oE "(^|[^a-z0-9_])$name([^a-z0-9_]|$)" <<<"$code" | wc -l) > 1)) || printf '%s\n' "$name"
  done
}

@test "style: every function of the shipped Bash files is called from them (no dead code)" {
  local -a files
  mapfile -t files < <(shipped_bash)
  ((${#files[@]} > 20))
  run unused_functions "${files[@]}"
  assert_success
  assert_output ''
}

@test "style: the dead-function check finds a function nothing calls" {
  printf 'used() {\n  :\n}\n# dead is named in a comment only\ndead() {\n  used\n}\n' >"$BATS_TEST_TMPDIR/x.bash"
  run unused_functions "$BATS_TEST_TMPDIR/x.bash"
  assert_output dead
}
