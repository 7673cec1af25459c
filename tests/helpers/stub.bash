# shellcheck shell=bash
# Plan-style stubs of commands for the unit tests, in the manner of bats-mock and pyenv's test
# stubs: a test says which calls it expects, in order, and what each one does.
#
#   stub sbatch '--parsable --job-name=x * : echo 4242' 'show config : cat "$BATS_TEST_TMPDIR/conf"'
#   ... the code under test ...
#   unstub sbatch
#
# stub NAME PLAN...: puts an executable NAME first on PATH (a folder of the test) that checks its
# N-th call against the N-th PLAN: 'PATTERNS : COMMAND'. PATTERNS are words (quoted as in a shell:
# "a b" or 'a b' is one word; read by xargs, never evaluated), each a glob matched against the
# argument at its place; a last word '*' matches whatever arguments remain (none or more);
# otherwise the call must have exactly as many arguments as PATTERNS has words. COMMAND (optional,
# with its ' : ') is run by bash -c with the call's arguments as "$@" and its standard input; its
# status is the call's. A call that no PLAN line expects (one call too many, or arguments that
# do not match) prints a line naming it on stderr, is recorded, and exits 1.
# unstub NAME: fails (status 1, a line for each problem) unless every PLAN line was called and no
# call was unplanned; removes the stub either way.
# A stub with no PLAN at all asserts that NAME is never called. stub_through NAME STANDIN PATTERNS...
# plans calls that a table-driven stand-in answers.

# stub_dir: the folder of the test's stubs (first on PATH) and their plans.
stub_dir() {
  printf '%s\n' "${BATS_TEST_TMPDIR:?stub: only inside a bats test}/stubs"
}

# stub NAME PLAN...: see above.
stub() {
  local name=${1:?stub: NAME PLAN...} dir line
  shift
  [[ $name =~ ^[A-Za-z0-9_.+-]+$ ]] || {
    echo "stub: '$name' is not a command name" >&2
    return 1
  }
  dir=$(stub_dir)
  mkdir -p "$dir/bin" "$dir/plans"
  [[ :$PATH: == *":$dir/bin:"* ]] || export PATH="$dir/bin:$PATH"
  : >"$dir/plans/$name.plan"
  for line in "$@"; do
    [[ $line != *$'\n'* ]] || {
      echo "stub $name: a plan line holds a newline: $line" >&2
      return 1
    }
    printf '%s\n' "$line" >>"$dir/plans/$name.plan"
  done
  printf '0\n' >"$dir/plans/$name.calls"
  : >"$dir/plans/$name.errors"
  printf '#!/usr/bin/env bash\nsource %q\nstub_call %q %q "$@"\n' "${BASH_SOURCE[0]}" "$dir" "$name" >"$dir/bin/$name"
  chmod +x "$dir/bin/$name"
}

# stub_through NAME STANDIN PATTERNS...: stub NAME with one planned call for each PATTERNS (no
# command), each passed with its arguments and stdin to the executable STANDIN (a table-driven
# stand-in of the fixtures), whose output and status are the call's.
stub_through() {
  local name=$1 standin=$2 line quoted
  local -a plan=()
  shift 2
  printf -v quoted '%q' "$standin"
  for line in "$@"; do plan+=("$line : exec $quoted \"\$@\""); done
  stub "$name" ${plan[@]+"${plan[@]}"}
}

# unstub NAME: see above.
unstub() {
  local name=${1:?unstub: NAME} dir planned called errors status=0
  dir=$(stub_dir)
  if [[ ! -f $dir/plans/$name.plan ]]; then
    echo "unstub $name: no stub of $name" >&2
    return 1
  fi
  planned=$(wc -l <"$dir/plans/$name.plan")
  called=$(<"$dir/plans/$name.calls")
  errors=$(<"$dir/plans/$name.errors")
  rm -f -- "$dir/bin/$name" "$dir/plans/$name".{plan,calls,errors}
  if [[ -n $errors ]]; then
    printf '%s\n' "$errors" >&2
    status=1
  fi
  if ((called < planned)); then
    echo "unstub $name: $((planned - called)) planned call(s) did not happen: $called of $planned" >&2
    status=1
  fi
  return "$status"
}

# stub_matches PATTERNS ARGS...: true when ARGS match the pattern words of PATTERNS (see above).
stub_matches() {
  local -a words=() args
  local i n
  if [[ -n ${1//[[:space:]]/} ]]; then
    mapfile -d '' -t words < <(xargs printf '%s\0' <<<"$1") || return 1
  fi
  shift
  args=("$@")
  n=${#words[@]}
  if ((n > 0)) && [[ ${words[n - 1]} == '*' ]]; then
    n=$((n - 1))
    (($# >= n)) || return 1
  else
    (($# == n)) || return 1
  fi
  for ((i = 0; i < n; i++)); do
    # shellcheck disable=SC2053 # the pattern word is a glob, on purpose
    [[ ${args[i]} == ${words[i]} ]] || return 1
  done
}

# stub_call DIR NAME ARGS...: (the stub's executable) checks this call against its plan line and
# runs the line's command.
stub_call() {
  local dir=$1 name=$2 n line patterns command='' message
  shift 2
  exec 9>>"$dir/plans/$name.lock"
  flock 9
  n=$(($(<"$dir/plans/$name.calls") + 1))
  printf '%s\n' "$n" >"$dir/plans/$name.calls"
  line=$(sed -n "${n}p" "$dir/plans/$name.plan")
  flock -u 9
  printf -v message ' %q' "$@"
  if [[ -z $line ]] && (($(wc -l <"$dir/plans/$name.plan") < n)); then
    message="stub $name: unplanned call $n:$message (the plan has $((n - 1)) call(s))"
  else
    line=" $line"
    patterns=${line%% : *}
    [[ $line != *' : '* ]] || command=${line#* : }
    if stub_matches "$patterns" "$@"; then
      [[ -n $command ]] || return 0
      exec bash -c "$command" "$name" "$@"
    fi
    message="stub $name: call $n:$message does not match its plan line '${patterns# }'"
  fi
  printf '%s\n' "$message" >>"$dir/plans/$name.errors"
  printf '%s\n' "$message" >&2
  return 1
}
