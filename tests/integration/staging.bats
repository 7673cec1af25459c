#!/usr/bin/env bats
# --data on the local cluster, both SLURM_TMPDIR modes: identical trees on every node, the
# archive cache, concurrent submissions, failures before the program, and an emulated
# SLURM_TMPDIR that is gone however the job ends, with its neighbours untouched.
# shellcheck disable=SC2016 # configs lines are single-quoted on purpose
# Set by hpc_run_job or hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out job_state

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "data project"
  export DATA_ROOT="$SCRATCH/data project"
  mkdir -p "$DATA_ROOT/datasets/d1/sub" "$DATA_ROOT/datasets/with space"
  for i in $(seq 1 40); do head -c $((i * 100)) /dev/urandom >"$DATA_ROOT/datasets/d1/sub/f$i.bin"; done
  printf 'hello\n' >"$DATA_ROOT/datasets/with space/a file.txt"
  printf 'single\n' >"$DATA_ROOT/labels.csv"
  # Eight submissions at once, the first ones of a project: one venv install, the others wait.
  hpc_configs "$PROJECT" 'python probe.py env'
  local i pids=()
  for i in $(seq 1 8); do
    bash "$PROJECT/hpc_files/job_submitter.sh" -y -g 0 -e "venv$i" >"$BATS_FILE_TMPDIR/venv$i" 2>&1 &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || fail "a first submission failed: $(cat "$BATS_FILE_TMPDIR"/venv*)"; done
  [[ $(cat "$BATS_FILE_TMPDIR"/venv* | grep -c 'install job [0-9]* submitted') == 1 ]] ||
    fail "expected one install job: $(cat "$BATS_FILE_TMPDIR"/venv*)"
  # What is asserted is the submissions': their eight jobs need not run.
  for i in $(seq 1 8); do hpc_cancel_submitted "$(cat "$BATS_FILE_TMPDIR/venv$i")"; done
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
}

teardown() {
  hpc_cluster_mode provided
}

# source_digest PATH...: the tree digest of the source data.
source_digest() {
  python3 "$PROJECT/tree_sums.py" "$DATA_ROOT" "$@" | cut -d' ' -f3
}

# job_tmpdirs NODE: the emulated SLURM_TMPDIRs of job $job_id on NODE (hpc_tmpdir.<user>.<id>.<hash>).
job_tmpdirs() {
  find "$HPC_CLUSTER_DIR/scratch/$1" -maxdepth 1 -name "hpc_tmpdir.$(id -un).$job_id.*"
}

# staged_archive: the archive the last staging made (through the cache's symlink).
staged_archive() {
  find "$DATA_ROOT/.staging" -maxdepth 2 -name data.tar -path '*.v*' | head -n 1
}

@test "both modes: a 2-node job sees identical trees on both nodes, equal to the source, a path with a space too" {
  for mode in provided emulated; do
    hpc_cluster_mode "$mode"
    hpc_configs "$PROJECT" 'python tree_sums.py - datasets/d1 "datasets/with space" labels.csv'
    hpc_run_job "$PROJECT" -W lightning --gpus 1 --num-nodes 2 -e "stage$mode" \
      --data datasets/d1 "datasets/with space" labels.csv
    assert_equal "$job_state" "COMPLETED 0:0"
    want=$(source_digest datasets/d1 "datasets/with space" labels.csv)
    run sed -n 's/^TREE //p' "$job_out"
    assert_equal "$(sort <<<"$output")" "n1 $want
n2 $want"
    run grep -E '^\[hpc n[12]\] staging: .* in [0-9.]+ s \(' "$job_out"
    assert_equal "${#lines[@]}" 2
  done
}

@test "unchanged data is not archived again; a changed, an added and a removed file each rebuild it" {
  hpc_configs "$PROJECT" 'python tree_sums.py - datasets/d1'
  hpc_run_job "$PROJECT" -g 0 -e cache1 --data datasets/d1
  archive=$(readlink -f "$(find "$DATA_ROOT/.staging" -maxdepth 1 -type l | head -n 1)/data.tar")
  before=$(stat -c '%i %Y' "$archive")
  hpc_run_job "$PROJECT" -g 0 -e cache2 --data datasets/d1
  assert_equal "$(stat -c '%i %Y' "$archive")" "$before"
  for change in modify add remove; do
    case $change in
      modify) printf 'changed\n' >>"$DATA_ROOT/datasets/d1/sub/f1.bin" ;;
      add) printf 'new\n' >"$DATA_ROOT/datasets/d1/new.txt" ;;
      remove) rm "$DATA_ROOT/datasets/d1/sub/f2.bin" ;;
    esac
    hpc_run_job "$PROJECT" -g 0 -e "cache_$change" --data datasets/d1
    assert_equal "$job_state" "COMPLETED 0:0"
    assert_equal "$(sed -n 's/^TREE n1 //p' "$job_out")" "$(source_digest datasets/d1)"
    link=$(find "$DATA_ROOT/.staging" -maxdepth 1 -type l | head -n 1)
    now=$(stat -c '%i %Y' "$(readlink -f "$link/data.tar")")
    [ "$now" != "$before" ] || fail "$change: the archive was not rebuilt"
    before=$now
  done
}

@test "eight concurrent submissions of the same data: one valid archive, eight jobs with complete data" {
  mkdir -p "$DATA_ROOT/concurrent"
  for i in $(seq 1 30); do head -c 5000 /dev/urandom >"$DATA_ROOT/concurrent/c$i"; done
  hpc_configs "$PROJECT" 'python tree_sums.py - concurrent'
  pids=()
  for i in $(seq 1 8); do
    bash "$PROJECT/hpc_files/job_submitter.sh" -y -g 0 -e "conc$i" --data concurrent >"$BATS_TEST_TMPDIR/sub$i" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || fail "a submission failed: $(cat "$BATS_TEST_TMPDIR"/sub*)"; done
  want=$(source_digest concurrent)
  for i in $(seq 1 8); do
    id=$(sed -n 's/^Submitted job \([0-9]*\).*/\1/p' "$BATS_TEST_TMPDIR/sub$i")
    out=$(sed -n 's/^Output: *//p' "$BATS_TEST_TMPDIR/sub$i")
    hpc_wait_job "$id" 180
    assert_equal "$(hpc_job_state "$id")" "COMPLETED 0:0"
    assert_equal "$(sed -n 's/^TREE n[12] //p' "$out")" "$want"
  done
  # One archive for this set of paths (one version behind its cache link), no temporary left.
  for link in "$DATA_ROOT"/.staging/*; do
    [[ -L $link ]] && grep -qx concurrent "$link/paths" && break
  done
  key=$(basename "$link")
  run find "$DATA_ROOT/.staging" -maxdepth 1 -type d -name "$key.v*"
  assert_equal "${#lines[@]}" 1
  tar -tf "$link/data.tar" >/dev/null
  run find "$DATA_ROOT/.staging" -maxdepth 1 -name '.tmp.*'
  assert_output ""
}

@test "a truncated archive fails the job before the program, leaving no partial tree" {
  hpc_cluster_mode emulated
  mkdir -p "$DATA_ROOT/trunc"
  head -c 200000 /dev/urandom >"$DATA_ROOT/trunc/big.bin"
  hpc_configs "$PROJECT" 'python probe.py env'
  # Submitted held, so the archive can be damaged after the submission checked it.
  hpc_submit_held "$PROJECT" -g 0 -e trunc --data trunc
  for link in "$DATA_ROOT"/.staging/*; do
    [[ -L $link ]] && grep -qx trunc "$link/paths" && break
  done
  truncate -s 100000 "$(readlink -f "$link/data.tar")"
  scontrol release "$job_id"
  hpc_wait_job "$job_id" 120
  assert_equal "$(hpc_job_state "$job_id")" "FAILED 1:0"
  run cat "$job_out"
  refute_output --partial "PROBE"
  assert_output --partial "FAILED at step 'node setup'"
  for node in n1 n2; do
    [ -z "$(job_tmpdirs "$node")" ]
  done
}

@test "a node without enough free space fails the job before the program, leaving no partial tree" {
  hpc_cluster_mode emulated
  mkdir -p "$DATA_ROOT/large"
  head -c 2000000 /dev/urandom >"$DATA_ROOT/large/big.bin"
  hpc_configs "$PROJECT" 'python probe.py env'
  # n1's local scratch becomes a 512 KiB tmpfs for this test.
  n1_scratch="$HPC_CLUSTER_DIR/scratch/n1"
  mount -t tmpfs -o size=512k,mode=1777 tmpfs "$n1_scratch" || skip "cannot mount a tmpfs here (not root?)"
  hpc_run_job "$PROJECT" -W lightning --gpus 1 --num-nodes 2 -e nospace --data large
  leftovers=$(find "$n1_scratch" -mindepth 1 | head -n 5)
  umount "$n1_scratch"
  assert_equal "$job_state" "FAILED 1:0"
  run cat "$job_out"
  refute_output --partial "PROBE"
  assert_output --partial "FAILED at step 'node setup'"
  assert_output --regexp "space|Space"
  assert_equal "$leftovers" ""
  [ -z "$(job_tmpdirs n2)" ]
}

# gone_submit OUTCOME: submits the 2-node job of OUTCOME (success, failure, cancel, timeout).
gone_submit() {
  case $1 in
    success) hpc_configs "$PROJECT" 'python probe.py env' ;;
    failure) hpc_configs "$PROJECT" 'python probe.py exit 4' ;;
    cancel | timeout) hpc_configs "$PROJECT" 'python -c "import time; time.sleep(300)"' ;;
  esac
  local args=(-W lightning --gpus 1 --num-nodes 2 -e "gone_$1")
  [[ $1 != timeout ]] || args+=(--time 00:01:00 --signal-lead 0)
  hpc_submit_job "$PROJECT" "${args[@]}"
}

# gone_check ID OUTCOME: waits for job ID to end; none of its SLURM_TMPDIRs is left on a node.
gone_check() {
  local job_id=$1 node
  hpc_wait_job "$job_id" 200
  for node in n1 n2; do
    [ -z "$(job_tmpdirs "$node")" ] || fail "$2: left on $node"
  done
}

@test "emulated SLURM_TMPDIR is gone on both nodes after success, failure, scancel and the time limit; neighbours untouched" {
  hpc_cluster_mode emulated
  user=$(id -un)
  planted=()
  for node in n1 n2; do
    root="$HPC_CLUSTER_DIR/scratch/$node"
    mkdir -p "$root/hpc_tmpdir.${user}x.1" "$root/hpc_tmpdir.$user.999999" "$root/elsewhere"
    printf '999999\n' >"$root/hpc_tmpdir.$user.999999/.hpc_tmpdir"
    mkdir -p "$root/other-user"
    chown nobody "$root/other-user"
    planted+=("$root/hpc_tmpdir.${user}x.1" "$root/hpc_tmpdir.$user.999999" "$root/other-user" "$root/elsewhere")
  done
  # The time limit's job first: it runs its minute beside the other three (each node has a GPU
  # more), and is waited for last.
  gone_submit timeout
  timeout_id=$job_id
  for outcome in success failure cancel; do
    gone_submit "$outcome"
    if [[ $outcome == cancel ]]; then
      for _ in $(seq 1 100); do
        [[ -n $(job_tmpdirs n2) ]] && break
        sleep 0.2
      done
      # A symlink planted with the name of the job's folder on n2 after it exists is not
      # followed: the guard removes its own folder only.
      scancel "$job_id"
    fi
    gone_check "$job_id" "$outcome"
  done
  gone_check "$timeout_id" timeout
  for path in "${planted[@]}"; do
    [ -d "$path" ] || fail "removed a neighbour: $path"
  done
  rm -rf "${planted[@]}"
}

@test "folders and symlinks planted by another user with the job's predictable names neither stop the job nor are touched" {
  hpc_cluster_mode emulated
  user=$(id -un)
  target="$BATS_TEST_TMPDIR/target"
  mkdir -p "$target"
  printf 'keep\n' >"$target/precious"
  hpc_configs "$PROJECT" 'python probe.py env'
  hpc_submit_held "$PROJECT" -W lightning --gpus 1 --num-nodes 2 -e planted --data labels.csv
  n1_planted="$HPC_CLUSTER_DIR/scratch/n1/hpc_tmpdir.$user.$job_id"
  n2_planted="$HPC_CLUSTER_DIR/scratch/n2/hpc_tmpdir.$user.$job_id"
  # Someone else's folder with the old, predictable name (nobody's, 0777), and a symlink.
  mkdir -m 777 "$n1_planted"
  printf 'theirs\n' >"$n1_planted/labels.csv"
  chown -R nobody "$n1_planted"
  ln -s "$target" "$n2_planted"
  scontrol release "$job_id"
  hpc_wait_job "$job_id" 120
  assert_equal "$(hpc_job_state "$job_id")" "COMPLETED 0:0"
  run sed -n 's/^PROBE //p' "$job_out"
  assert_equal "${#lines[@]}" 2
  [[ $output != *"\"SLURM_TMPDIR\": \"$n1_planted\""* && $output != *"\"SLURM_TMPDIR\": \"$n2_planted\""* ]] || fail "$output"
  assert_equal "$(cat "$n1_planted/labels.csv")" theirs
  assert_equal "$(stat -c '%U %a' "$n1_planted")" "nobody 777"
  [ -L "$n2_planted" ]
  assert_equal "$(ls -A "$target")" precious
  assert_equal "$(cat "$target/precious")" keep
  [ -z "$(job_tmpdirs n1)" ]
  [ -z "$(job_tmpdirs n2)" ]
  rm -rf "$n1_planted" "$n2_planted"
}
