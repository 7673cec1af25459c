#!/usr/bin/env bats
# Data loss on the job side, on the local cluster: a SLURM_TMPDIR inherited from the submitting
# shell is never used (nor anything in it deleted), node-local scratch that fills up during
# staging fails the job before the program and leaves nothing behind, and a results folder that
# fills up during copy-back leaves no truncated file under a result's name and fails the job.
# Full disks are small tmpfs mounts (root), unmounted in teardown.
# shellcheck disable=SC2016 # configs lines are single-quoted on purpose
# Set by hpc_run_job or hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_out job_state

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "faults project"
  # The venv: a copy of the shared build (the first job would build it inside a test's time).
  hpc_venv_seed "$PROJECT"
  export DATA_ROOT="$SCRATCH/faults project"
  mkdir -p "$DATA_ROOT/data/d1"
  printf 'staged\n' >"$DATA_ROOT/data/d1/s.txt"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  user=$(id -un)
  mounts=()
}

teardown() {
  local m
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  hpc_cluster_mode provided
}

# small_disk DIR OPTIONS: mounts a tmpfs with OPTIONS at DIR (made); skips without one (root).
small_disk() {
  mkdir -p "$1"
  mount -t tmpfs -o "$2" tmpfs "$1" || skip "cannot mount a tmpfs here (not root?)"
  mounts=("$1" "${mounts[@]}")
}

# leftovers NODE [ID]: the emulated SLURM_TMPDIRs of job ID (default: $job_id) still on NODE.
leftovers() {
  find "$HPC_CLUSTER_DIR/scratch/$1" -maxdepth 1 -name "hpc_tmpdir.$user.${2:-$job_id}*"
}

@test "a SLURM_TMPDIR exported in the submitting shell is not used: the job stages into its own, the user's files there survive" {
  local mine="$BATS_TEST_TMPDIR/my tmp" before probe script direct
  mkdir -p "$mine/data/d1"
  printf 'precious\n' >"$mine/data/d1/precious"
  before=$(find "$mine" -printf '%P|%y|%s|%T@\n' | LC_ALL=C sort)
  hpc_configs "$PROJECT" 'python probe.py env'
  for mode in emulated provided; do
    hpc_cluster_mode "$mode"
    SLURM_TMPDIR=$mine hpc_run_job "$PROJECT" -g 0 -e "inherit_$mode" -d data/d1
    assert_equal "$job_state" "COMPLETED 0:0"
    assert_equal "$(find "$mine" -printf '%P|%y|%s|%T@\n' | LC_ALL=C sort)" "$before"
    probe=$(sed -n 's/^PROBE //p' "$job_out")
    [[ $probe == *"\"SLURM_TMPDIR\": \"$HPC_CLUSTER_DIR/scratch/n1/"* && $probe == *'"tmpdir_is_dir": true'* ]] ||
      fail "$mode: the program's SLURM_TMPDIR: $probe"
    [ -z "$(leftovers n1)" ]
  done
  # The kept job script sent straight to sbatch (as by hand), with the variable exported: the job
  # itself refuses a SLURM_TMPDIR that the cluster did not make for it.
  hpc_cluster_mode emulated
  script=${job_out%.out}.sh
  direct=$(SLURM_TMPDIR=$mine hpc_sbatch "$script")
  hpc_wait_job "$direct" 120
  assert_equal "$(hpc_job_state "$direct")" "COMPLETED 0:0"
  run cat "${job_out%_*}_$direct.out"
  assert_line "[hpc n1] ignoring SLURM_TMPDIR=$mine: it was not made by the cluster for job $direct (inherited from the submitting shell?); this job makes its own"
  assert_equal "$(find "$mine" -printf '%P|%y|%s|%T@\n' | LC_ALL=C sort)" "$before"
  [ -z "$(leftovers n1 "$direct")" ]
}

@test "local scratch fills up during staging (both modes): FAILED before the program, the reason in the log, nothing of the job left, a neighbour untouched" {
  local n1_scratch=$HPC_CLUSTER_DIR/scratch/n1 i after mode
  mkdir -p "$DATA_ROOT/many"
  for i in $(seq 1 120); do printf '%s\n' "$i" >"$DATA_ROOT/many/f$i"; done
  hpc_configs "$PROJECT" 'python probe.py env'
  for mode in emulated provided; do
    hpc_cluster_mode "$mode"
    # Bytes to spare (the free-space check passes), but too few inodes for 120 files: the disk
    # fills up while tar writes.
    small_disk "$n1_scratch" size=64m,nr_inodes=60,mode=1777
    printf 'neighbour\n' >"$n1_scratch/neighbour.txt"
    hpc_run_job "$PROJECT" -W lightning --gpus 1 --num-nodes 2 -e "scratchfull_$mode" --data many
    # (provided: the cluster's Prolog made slurm_tmpdir/job<id> there, and its Epilog removed job<id>)
    after=$(find "$n1_scratch" -mindepth 1 -printf '%P\n' | LC_ALL=C sort)
    assert_equal "$job_state" "FAILED 1:0"
    run cat "$job_out"
    refute_output --partial PROBE
    assert_line --partial "No space left on device"
    assert_line --regexp "^\[hpc n1\] staging: FAILED: extracting .*/data\.tar into $n1_scratch/[^ ]+: the disk of .* is full; nothing was left in "
    assert_output --partial "FAILED at step 'node setup'"
    if [[ $mode == emulated ]]; then
      assert_line --regexp "^\[hpc n1\] staging: FAILED: extracting .* into $n1_scratch/hpc_tmpdir\.$user\.$job_id\.[0-9a-f]{16}: "
      assert_equal "$after" "neighbour.txt"
    else
      assert_equal "$after" "neighbour.txt
slurm_tmpdir"
    fi
    assert_equal "$(cat "$n1_scratch/neighbour.txt")" neighbour
    [ -z "$(leftovers n2)" ]
    umount "$n1_scratch"
    mounts=()
  done
}

@test "the results folder fills up during copy-back: no truncated file under a result's name, the log names what is incomplete, FAILED" {
  hpc_cluster_mode emulated
  local dest="$DATA_ROOT/cbfull" kept
  small_disk "$dest" size=1m
  hpc_configs "$PROJECT" 'python -c "import os; d = os.environ[\"SLURM_TMPDIR\"]; os.makedirs(d + \"/out\"); open(d + \"/out/big.bin\", \"wb\").write(os.urandom(3000000)); open(d + \"/small.txt\", \"w\").write(\"small\")"'
  hpc_run_job "$PROJECT" -g 0 -e cbfull --copy-back small.txt out
  assert_equal "$job_state" "FAILED 1:0"
  run cat "$job_out"
  assert_line --regexp "^\[hpc n1\] copy-back of out FAILED: .*No space left on device.*; $dest/out was not changed$"
  assert_line "[hpc n1] copied back to $dest: small.txt"
  assert_line "[hpc n1] copy-back INCOMPLETE: not copied back to $dest: out"
  assert_line --regexp "^\[hpc n1\] copy-back failed: the complete results stay in $HPC_CLUSTER_DIR/scratch/n1/hpc_tmpdir\.$user\.$job_id\.[0-9a-f]{16} on n1 "
  assert_output --partial "FAILED at step 'copy-back'"
  assert_equal "$(cat "$dest/small.txt")" small
  run find "$dest" -mindepth 1 -not -name small.txt -not -name checkpoints
  assert_output ""
  # The complete copy is still on the node, and only there, until plai_cleanups removes it.
  kept=$(leftovers n1)
  assert_equal "$(stat -c %s "$kept/out/big.bin")" 3000000
  run bash "$HPC_ROOT/plai_cleanups/submit_plai_cleanup" --cluster local --nodes n1 --wait --timeout 120 \
    --reports "$BATS_TEST_TMPDIR/reports"
  assert_success
  run cat "$BATS_TEST_TMPDIR"/reports/hpc_cleanup_n1_*.out
  assert_line --regexp "^removed: ${kept##*/} \(job $job_id ended: FAILED; [0-9]+ bytes freed\)$"
  [ ! -e "$kept" ]
}
