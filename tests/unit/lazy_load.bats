#!/usr/bin/env bats
# What a plain submission loads and runs, counted (never timed; issue 38): the Bash it parses,
# the records of earlier submissions it reads, and the code it leaves unread until it is needed
# (the records of submissions that stopped on the way: hpc_pending_stopped.bash). Without SLURM:
# the PATH stubs of tests/fixtures/submitter/bin.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/submitter'
  hpc_test_warm_profiles
}

setup() {
  load '../helpers/common'
  # shellcheck source=tests/helpers/submitter.bash
  source "$BATS_TEST_DIRNAME/../helpers/submitter.bash"
  hpc_test_submitter_project "$(hpc_test_tmp)/cache" "$(hpc_test_tmp)/scratch"
  hpc_test_venv_built "$project"
  outputs="$SCRATCH/my project/hpc_outputs"
}

# libraries_read ARGS...: runs the submitter with ARGS under strace; sets files to the toolkit's
# library files it opened (their paths, sorted, one a line; BASH_ENV's file of the tests aside).
libraries_read() {
  command -v strace >/dev/null || skip "strace is not installed"
  strace -f -o /dev/null true 2>/dev/null || skip "strace cannot trace here (ptrace not permitted)"
  strace -f -qq -e trace=openat,open -o "$BATS_TEST_TMPDIR/strace.txt" \
    bash "$submitter" "$@" >"$BATS_TEST_TMPDIR/out" 2>&1 || fail "the submission failed: $(cat "$BATS_TEST_TMPDIR/out")"
  files=$(grep -o '"[^"]*\.bash"' "$BATS_TEST_TMPDIR/strace.txt" | tr -d '"' | grep -F "$project/" | sort -u)
}

@test "the records of ended submissions are swept once 4 are there: a submission reads at most 3 of them, however many submissions came before" {
  local i count most=0
  for i in 1 2 3 4 5 6 7 8 9; do
    bash "$submitter" -y -g 0 -e lazy >/dev/null 2>&1 || fail "submission $i failed"
    count=$(find "$outputs/submissions" -type f | wc -l)
    ((count <= most)) || most=$count
    # Every one of them ended (a record of a stopped submission would be kept).
    [[ -z $(find "$outputs/submissions" -type f -size +0 -exec grep -Lx ended {} +) ]] ||
      fail "a record that did not end after submission $i"
  done
  ((most <= 4)) || fail "$most records of ended submissions were kept at once (at most 4: 3 earlier ones and its own)"
}

@test "a plain submission parses at most 4,000 lines of Bash (the files it reads), none of the code for the records of stopped submissions" {
  # The second of two equal submissions, as bench/submit times it (SLURM's facts kept).
  bash "$submitter" -y -g 0 -e lazy >/dev/null 2>&1 || fail "the first submission failed"
  libraries_read -y -g 0 -e lazy
  local lines
  local -a paths
  mapfile -t paths <<<"$files"
  lines=$(cat "${paths[@]}" | wc -l)
  ((lines <= 4000)) || fail "$lines lines of Bash parsed: ${paths[*]##*/}"
  [[ $files != *hpc_pending_stopped.bash* ]] || fail "hpc_pending_stopped.bash was read"
}

@test "a plain submission and a plain dry run read none of the files behind the stubs of hpc_lib_load (hpc_manifest_read.bash, hpc_submit_undoing.bash...)" {
  local lib
  local -a libs
  # The files the stubs load: 'f() { hpc_lib_load FILE && f "$@"; }' in the installed libraries.
  mapfile -t libs < <(grep -ohE '^[a-z_][a-z0-9_]*\(\) \{ hpc_lib_load [a-z_][a-z0-9_]*' "$project"/hpc_files/lib/*.bash |
    sed 's/.* //' | sort -u)
  ((${#libs[@]} >= 5)) || fail "stubs for ${#libs[@]} files found: ${libs[*]}"
  bash "$submitter" -y -g 0 -e lazy >/dev/null 2>&1 || fail "the first submission failed"
  libraries_read -y -g 0 -e lazy
  for lib in "${libs[@]}"; do
    [[ $files != */lib/$lib.bash* ]] || fail "a plain submission read $lib.bash"
  done
  libraries_read --dry-run -g 0 -e lazy
  for lib in "${libs[@]}"; do
    [[ $files != */lib/$lib.bash* ]] || fail "a plain dry run read $lib.bash"
  done
}

@test "a record of a stopped submission is found by the next submission of its experiment, which loads the code for it then: it warns of the job SLURM still holds and keeps the record" {
  mkdir -p "$outputs/submissions"
  chmod 700 "$outputs" "$outputs/submissions"
  # Another host's submission of 'lazy', 20 minutes old: stopped; SLURM holds its held job.
  printf 'exp=lazy\nhost=elsewhere\npid=1\nstart=1\ntime=%s\nheld\n' "$(($(date +%s) - 1200))" >"$outputs/submissions/1.1.1"
  chmod 600 "$outputs/submissions/1.1.1"
  # squeue as the pending records ask it (-o '%F|%i|%T|%r|%k'): that job, tagged with the record.
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  printf '#!/bin/sh\necho "77|77|PENDING|JobHeldUser|hpc-toolkit:1.1.1"\n' >"$BATS_TEST_TMPDIR/bin/squeue"
  chmod +x "$BATS_TEST_TMPDIR/bin/squeue"
  PATH=$BATS_TEST_TMPDIR/bin:$PATH
  libraries_read -y -g 0 -e lazy
  [[ $files == *hpc_pending_stopped.bash* ]] || fail "hpc_pending_stopped.bash was not read: $files"
  run grep -F "warning: an earlier submission of lazy stopped" "$BATS_TEST_TMPDIR/out"
  assert_success
  assert_output --partial "SLURM still holds 77"
  [[ -f $outputs/submissions/1.1.1 ]] || fail "the stopped submission's record was removed"
}
