# shellcheck shell=bash
# Loaded by every .bats file (by each test again): bats-support, bats-assert, and the repository
# root. Without a process where bash alone does it: a fork of the test's shell and a program
# cost milliseconds, and this runs before every one of over a thousand tests.
# The root exported by the file's setup_file (or the suite) is kept when it is this one.
if [[ -z ${HPC_ROOT:-} || ! $HPC_ROOT/tests/helpers/common.bash -ef ${BASH_SOURCE[0]} ]]; then
  HPC_ROOT=$(cd "${BASH_SOURCE[0]%/*}/../.." && pwd)
fi
export HPC_ROOT
# How long a test lets a command run before it calls it a hang: a bound, never a measure of
# speed. In a whole run the unit files share 2 CPUs with lint, pytest and the integration jobs,
# and a refusal that takes 0.1 s alone took over 20 s there (CI, 5920d72).
HPC_TEST_HANG_S=${HPC_TEST_HANG_S:-300}

# hpc_test_load_library DIR: sources the files that DIR/load.bash sources. Their load.bash runs
# `dirname` (a process) for each of them, 15 per test; a load.bash of another form is loaded as
# it is.
hpc_test_load_library() {
  local line re='^source "\$\(dirname "\$\{BASH_SOURCE\[0\]\}"\)/([A-Za-z0-9_/.-]+)"$'
  local -a files=()
  while IFS= read -r line || [[ -n $line ]]; do
    [[ -n $line && $line != '#'* ]] || continue
    if [[ ! $line =~ $re ]]; then
      load "$1/load"
      return
    fi
    files+=("$1/${BASH_REMATCH[1]}")
  done <"$1/load.bash"
  for line in "${files[@]}"; do
    # shellcheck source=/dev/null # bats-support's and bats-assert's own files
    source "$line"
  done
}
# Outside bats' DEBUG trap (see hpc_test_untraced): it would cost more than the processes saved.
if [[ -o functrace ]]; then
  set +T
  hpc_test_load_library "$HPC_ROOT/node_modules/bats-support"
  hpc_test_load_library "$HPC_ROOT/node_modules/bats-assert"
  set -T
else
  hpc_test_load_library "$HPC_ROOT/node_modules/bats-support"
  hpc_test_load_library "$HPC_ROOT/node_modules/bats-assert"
fi

# Unit tests reach no cluster: every SLURM client they might call is tests/helpers/unplanned_slurm
# (one line naming the call, exit 1), on PATH just before the first folder outside the checkout
# and bats' temporary folders, so that the stubs and fixtures' stand-ins a test puts first still
# answer. Each call is recorded in HPC_UNPLANNED_LOG, and the test's teardown (the file's own,
# run first as hpc_test_file_teardown) fails the test naming it, even where the code under test
# swallowed the failure.
if [[ ${BATS_TEST_FILENAME:-} == */tests/unit/* ]]; then
  # The tests that run tests/run.sh inside would copy their runs' reports into the outer run's.
  unset HPC_TEST_KEEP_REPORTS
  # Unit tests run the libraries in the test's own shell, where bats' DEBUG trap (inherited by
  # every function: set -T) records the stack before each command: a tenth of the unit tests'
  # CPU time. Here it records it only at the test's own lines (bats' copy of the test file,
  # BATS_TEST_SOURCE), so that a failure is still named at the test's line that made it, and the
  # toolkit's code and the helpers run at their own pace.
  if [[ -n ${BATS_TEST_SOURCE:-} ]] && declare -F bats_debug_trap >/dev/null; then
    # shellcheck disable=SC2016 # expanded when the trap runs
    trap '[[ ${BASH_SOURCE[0]} != "$BATS_TEST_SOURCE" ]] || bats_debug_trap "$BASH_SOURCE"' DEBUG
  fi
  # hpc_test_unplanned_path: puts unplanned_slurm into PATH (above), in this shell: no command
  # substitution, a process before each test.
  hpc_test_unplanned_path() {
    local dir new='' placed=0 deny=$HPC_ROOT/tests/helpers/unplanned_slurm
    local -a dirs
    IFS=: read -ra dirs <<<"$PATH"
    for dir in "${dirs[@]}"; do
      [[ $dir != "$deny" ]] || continue
      if ((! placed)) && [[ $dir != "$HPC_ROOT"/* && $dir != "${BATS_RUN_TMPDIR:-/nonexistent}"/* ]]; then
        new+=${new:+:}$deny
        placed=1
      fi
      new+=${new:+:}$dir
    done
    ((placed)) || new+=${new:+:}$deny
    PATH=$new
  }
  hpc_test_unplanned_path
  export PATH HPC_UNPLANNED_LOG=${BATS_TEST_TMPDIR:-${BATS_FILE_TMPDIR:-/nonexistent}}/unplanned-slurm-calls
  if [[ -n ${BATS_TEST_TMPDIR:-} && -z ${hpc_test_teardown_wrapped:-} ]]; then
    hpc_test_teardown_wrapped=1
    if declare -F teardown >/dev/null; then
      # The file's own teardown, under another name: renamed by bash itself, not by a sed in a
      # process substitution (two processes before each test), in a file beside the test's
      # temporary folder (not in it: tests list it).
      declare -f teardown >"$BATS_TEST_TMPDIR.teardown"
      mapfile -t hpc_test_def <"$BATS_TEST_TMPDIR.teardown"
      hpc_test_def[0]=${hpc_test_def[0]/#teardown /hpc_test_file_teardown }
      printf '%s\n' "${hpc_test_def[@]}" >"$BATS_TEST_TMPDIR.teardown"
      unset hpc_test_def
      # shellcheck source=/dev/null # the file's own teardown, under another name
      source "$BATS_TEST_TMPDIR.teardown"
    fi
    # teardown: the file's own teardown, then the check of unplanned SLURM calls.
    teardown() {
      local status=0 log=$HPC_UNPLANNED_LOG
      if declare -F hpc_test_file_teardown >/dev/null; then hpc_test_file_teardown || status=$?; fi
      if [[ -s $log ]]; then
        printf 'unplanned SLURM call in this test: %s\n' "$(<"$log")" >&2
        return 1
      fi
      return "$status"
    }
  fi
fi

# hpc_test_untraced COMMAND [ARGS...]: runs COMMAND in this shell with the functions it calls
# outside bats' DEBUG trap (inherited by functions under set -T, it runs before each of their
# commands: reading a 3000-word configs line took 11.7 s with it, 0.24 s without); returns its
# status. A failure is still named at the line that called hpc_test_untraced. Its own status has
# a name of its own: bats' run, called by COMMAND, sets the caller's 'status'.
hpc_test_untraced() {
  local hpc_test_untraced_rc=0
  set +T
  "$@" || hpc_test_untraced_rc=$?
  set -T
  return "$hpc_test_untraced_rc"
}

# hpc_test_tmp: a fresh temporary folder whose path contains a space, so every test also
# proves that paths with spaces work. (Made once: a setup asks for it several times.)
hpc_test_tmp() {
  local dir
  hpc_test_tmp_path dir
  [[ -d $dir ]] || mkdir -p "$dir"
  printf '%s\n' "$dir"
}

# hpc_test_tmp_path VAR: sets VAR to hpc_test_tmp's folder, not made, without a process (for a
# setup that makes it with its other folders).
hpc_test_tmp_path() {
  printf -v "$1" '%s' "$BATS_TEST_TMPDIR/with space"
}

# hpc_test_profile_names: the names of the cluster profiles in hpc_files/clusters/, in the order
# and form a refusal of an unknown one lists them (space-separated).
hpc_test_profile_names() {
  local file names=()
  for file in "$HPC_ROOT"/hpc_files/clusters/*.yaml; do
    file=${file##*/}
    names+=("${file%.yaml}")
  done
  printf '%s\n' "${names[*]}"
}

# hpc_test_launcher_names: the launchers in hpc_files/lib/launchers/, in the order and form a
# refusal of an unknown -W lists them ('lightning, none, torchrun (alias: script)').
hpc_test_launcher_names() {
  local file name text=''
  for file in "$HPC_ROOT"/hpc_files/lib/launchers/*.bash; do
    name=${file##*/}
    name=${name%.bash}
    text+="$name, "
    [[ $name != torchrun ]] || text="${text%, } (alias: script), "
  done
  printf '%s\n' "${text%, }"
}

# hpc_test_distributed_names: the launchers other than none, as a refusal that needs one names
# them ('-W lightning or -W torchrun').
hpc_test_distributed_names() {
  local file name
  local -a names=()
  for file in "$HPC_ROOT"/hpc_files/lib/launchers/*.bash; do
    name=${file##*/}
    name=${name%.bash}
    [[ $name == none ]] || names+=("-W $name")
  done
  if ((${#names[@]} == 1)); then
    printf '%s\n' "${names[0]}"
    return 0
  fi
  local text
  printf -v text '%s, ' "${names[@]:0:${#names[@]}-1}"
  printf '%s\n' "${text%, } or ${names[*]: -1}"
}

# path_without COMMAND...: prints PATH without COMMANDs (e.g. a dry run on a machine without
# sbatch): each folder of PATH that holds one of them is replaced by a folder of links to
# everything else in it (made under BATS_TEST_TMPDIR), so every other command stays found.
path_without() {
  local dir new='' n=0 command shadow
  local -a dirs excluded=()
  IFS=: read -ra dirs <<<"$PATH"
  for command in "$@"; do excluded+=(! -name "$command"); done
  for dir in "${dirs[@]}"; do
    for command in "$@"; do
      [[ -e $dir/$command || -L $dir/$command ]] || continue
      n=$((n + 1))
      shadow=$BATS_TEST_TMPDIR/path_without.$n
      mkdir -p "$shadow"
      find "$dir" -mindepth 1 -maxdepth 1 "${excluded[@]}" -exec ln -s -t "$shadow" -- {} +
      dir=$shadow
      break
    done
    new+=${new:+:}$dir
  done
  printf '%s\n' "$new"
}

# hpc_test_user_copy USER PATH...: copies PATHs (files or folders, relative to the repository
# root, each kept at its relative place) into a fresh folder under /tmp that every user can read
# (0755) and sets user_copy to it: code a test runs as USER runs from there, never from the
# checkout, whose parents may be private (a clone in a 0700 home folder; mktemp -d). Skips the
# test, saying why, when USER cannot read the copy there. The caller removes the folder.
hpc_test_user_copy() {
  local user=$1 path
  shift
  user_copy=$(mktemp -d /tmp/hpc-test-copy.XXXXXX) || skip "no folder under /tmp for $user's copy"
  chmod 755 "$user_copy"
  for path in "$@"; do
    mkdir -p "$user_copy/$(dirname -- "$path")"
    cp -R -- "$HPC_ROOT/$path" "$user_copy/$path"
  done
  chmod -R a+rX "$user_copy"
  if ! runuser -u "$user" -- test -r "$user_copy/$1"; then
    rm -rf -- "${user_copy:?}"
    skip "$user cannot read a copy under /tmp: /tmp is not open to all users"
  fi
}
