#!/usr/bin/env bats
# The suite's own speed (issue 37): tests/run.sh prints each phase's wall time, and its lint runs
# ShellCheck only on the files whose answer may have changed (tests/shellcheck_keys.py): a change
# to a file, or to anything it follows, lints it again; a change elsewhere does not.

setup() {
  load '../helpers/common'
}

@test "tests/run.sh prints the wall time of each phase it ran, before 'suite:'" {
  run bash "$HPC_ROOT/tests/run.sh" --no-install --no-cluster --no-lint --no-pytest \
    --bats "$HPC_ROOT/tests/fixtures/harness/passing.bats"
  assert_success
  assert_line "== phases (wall time, s)"
  assert_line --regexp '^ +[0-9]+  unit$'
  refute_line --regexp '  (lint|pytest|integration)$'
  assert_line "suite: 1 passed, 0 failed"
}

# keys DIR: the files of the git repository DIR that tests/shellcheck_keys.py lists for linting
# against the cache DIR/.cache, one a line, sorted; they become cached (as run.sh does once the
# lint passed on them).
keys() {
  local dir=$1 key path
  mkdir -p "$dir/.cache"
  (cd "$dir" && printf '%s\0' a.sh lib/b.bash lib/c.bash d.sh e.sh | python3 "$HPC_ROOT/tests/shellcheck_keys.py" .cache) |
    while IFS= read -r -d '' key && IFS= read -r -d '' path; do
      : >"$dir/.cache/$key"
      printf '%s\n' "$path"
    done | sort
}

@test "shellcheck's cache: a file is linted again when it, or a file it may follow (transitively), changed; not for a change elsewhere" {
  local repo=$BATS_TEST_TMPDIR/repo
  mkdir -p "$repo/lib"
  # shellcheck disable=SC2016 # shell code as data
  printf '%s\n' '#!/usr/bin/env bash' '# shellcheck source=lib/b.bash' 'source "$(dirname "$0")/lib/b.bash"' 'b' \
    >"$repo/a.sh"
  # shellcheck disable=SC2016 # shell code as data
  printf '%s\n' '# shellcheck shell=bash' '# shellcheck source=lib/c.bash' 'source "${BASH_SOURCE%/*}/c.bash"' \
    'b() { c; }' >"$repo/lib/b.bash"
  printf '%s\n' '# shellcheck shell=bash' 'c() { echo c; }' >"$repo/lib/c.bash"
  # d.sh names c.bash in a comment only; e.sh sources it with '.'.
  printf '%s\n' '#!/usr/bin/env bash' '# not like lib/c.bash' 'echo d' >"$repo/d.sh"
  printf '%s\n' '#!/usr/bin/env bash' 'true && . lib/c.bash' 'c' >"$repo/e.sh"
  git -C "$repo" init -q
  git -C "$repo" add -A
  run keys "$repo"
  assert_output "$(printf '%s\n' a.sh d.sh e.sh lib/b.bash lib/c.bash)"
  run keys "$repo"
  assert_output ''
  # c.bash: a.sh follows it through b.bash, e.sh directly.
  echo 'c2() { echo c2; }' >>"$repo/lib/c.bash"
  run keys "$repo"
  assert_output "$(printf '%s\n' a.sh e.sh lib/b.bash lib/c.bash)"
  echo 'echo d2' >>"$repo/d.sh"
  run keys "$repo"
  assert_output d.sh
  # A .shellcheckrc changes every file's answer.
  echo 'disable=SC2034' >"$repo/.shellcheckrc"
  run keys "$repo"
  assert_output "$(printf '%s\n' a.sh d.sh e.sh lib/b.bash lib/c.bash)"
}

@test "shellcheck's cache: the options are part of the key (a file that passed with one set of options is linted again with another)" {
  local repo=$BATS_TEST_TMPDIR/repo key path
  mkdir -p "$repo/.cache"
  printf '%s\n' '#!/usr/bin/env bash' 'echo a' >"$repo/a.sh"
  git -C "$repo" init -q
  git -C "$repo" add -A
  for options in -x '-x --extended-analysis=false' -x; do
    (cd "$repo" && printf '%s\0' a.sh | python3 "$HPC_ROOT/tests/shellcheck_keys.py" .cache "$options") |
      while IFS= read -r -d '' key && IFS= read -r -d '' path; do
        : >"$repo/.cache/$key"
        printf '%s\n' "$path"
      done >>"$repo/listed"
  done
  # Listed once per set of options: the third run (-x again) finds the first one's key.
  run cat "$repo/listed"
  assert_output "$(printf '%s\n' a.sh a.sh)"
  # Without OPTIONS the key is that of -x (run.sh before this argument).
  run bash -c 'cd "$1" && printf "%s\0" a.sh | python3 "$2/tests/shellcheck_keys.py" .cache' _ "$repo" "$HPC_ROOT"
  assert_success
  assert_output ''
}
