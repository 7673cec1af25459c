#!/usr/bin/env bats
# Where a job's files land, on the local cluster: --workdir for venv jobs (the program's relative
# files land there, the project's program is still found), each job's own checkpoints_dir (plain,
# array tasks, torchrun workers, lightning ranks, containers), and W&B's files under the
# experiment's folder on scratch (each array task its own), found by wandb sync. The programs
# are users' programs: tests/fixtures/project/files_land.py and wandb_offline.py.

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "land project"
  # The venv: a copy of the shared build (the first job would build it inside a test's time).
  hpc_venv_seed "$PROJECT"
  cp "$HPC_ROOT/tests/fixtures/project/"{files_land.py,wandb_offline.py} "$PROJECT/"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  unset WANDB_DIR WANDB_MODE
  exp_root="$SCRATCH/land project"
  # Set by hpc_submit_job and hpc_run_job (helpers/cluster.bash).
  job_id='' job_out='' job_state=''
}

# array_states ID: every task's final state, one per line, sorted.
array_states() {
  scontrol show job "$1" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | sort
}

@test "--workdir: each experiment's relative files land in its own folder; the project's program is found; a resubmission resumes its own" {
  hpc_configs "$PROJECT" 'python files_land.py 3'
  # Relative to the folder the command is typed in.
  mkdir -p "$BATS_FILE_TMPDIR/typed here"
  cd "$BATS_FILE_TMPDIR/typed here"
  hpc_run_job "$PROJECT" -g 0 -e exp_a --workdir runs/a
  assert_equal "$job_state" "COMPLETED 0:0"
  work_a="$BATS_FILE_TMPDIR/typed here/runs/a"
  run grep -E '^(TRAINED|RESUMED)' "$job_out"
  assert_output "TRAINED rank=0 epochs=3 cwd=$work_a checkpoints_dir=$exp_root/exp_a/checkpoints"
  assert_equal "$(cat "$work_a/snapshot.pt")" 3
  # Another experiment, its own folder: it does not resume the first one's snapshot.
  hpc_run_job "$PROJECT" -g 0 -e exp_b --workdir "$BATS_FILE_TMPDIR/runs/b"
  assert_equal "$job_state" "COMPLETED 0:0"
  run grep -E '^(TRAINED|RESUMED)' "$job_out"
  assert_output "TRAINED rank=0 epochs=3 cwd=$BATS_FILE_TMPDIR/runs/b checkpoints_dir=$exp_root/exp_b/checkpoints"
  # The first experiment again, longer: it resumes its own snapshot.
  hpc_configs "$PROJECT" 'python files_land.py 5'
  hpc_run_job "$PROJECT" -g 0 -e exp_a --workdir "$work_a"
  assert_equal "$job_state" "COMPLETED 0:0"
  run grep -E '^(TRAINED|RESUMED)' "$job_out"
  assert_output "RESUMED at 3
TRAINED rank=0 epochs=2 cwd=$work_a checkpoints_dir=$exp_root/exp_a/checkpoints"
  # A module of the project, run with -m, is found from the working folder too.
  hpc_configs "$PROJECT" 'python -m files_land 1'
  hpc_run_job "$PROJECT" -g 0 -e exp_m --workdir "$BATS_FILE_TMPDIR/runs/m"
  assert_equal "$job_state" "COMPLETED 0:0"
  run grep '^TRAINED' "$job_out"
  assert_output "TRAINED rank=0 epochs=1 cwd=$BATS_FILE_TMPDIR/runs/m checkpoints_dir=$exp_root/exp_m/checkpoints"
  # Nothing of theirs in the project.
  [ ! -e "$PROJECT/snapshot.pt" ]
  # Without --workdir the program starts in the project, as before.
  hpc_configs "$PROJECT" 'python files_land.py 1'
  hpc_run_job "$PROJECT" -g 0 -e exp_c
  assert_equal "$job_state" "COMPLETED 0:0"
  run grep '^TRAINED' "$job_out"
  assert_output "TRAINED rank=0 epochs=1 cwd=$PROJECT checkpoints_dir=$exp_root/exp_c/checkpoints"
  rm -f "$PROJECT/snapshot.pt"
}

@test "--repeat 2 --workdir: each task starts in WORKDIR/task_N with its own checkpoints_dir" {
  hpc_configs "$PROJECT" 'python files_land.py 2'
  hpc_submit_job "$PROJECT" -g 0 --repeat 2 -e rep --workdir "$BATS_FILE_TMPDIR/rep"
  hpc_wait_job "$job_id" 120
  assert_equal "$(array_states "$job_id")" "COMPLETED
COMPLETED"
  for task in 0 1; do
    out="$exp_root/hpc_outputs/rep_venv-none_${job_id}_$task.out"
    run grep -E '^(TRAINED|RESUMED)' "$out"
    assert_output "TRAINED rank=0 epochs=2 cwd=$BATS_FILE_TMPDIR/rep/task_$task checkpoints_dir=$exp_root/rep/checkpoints/task_$task"
    [ -f "$BATS_FILE_TMPDIR/rep/task_$task/snapshot.pt" ]
    [ -f "$exp_root/rep/checkpoints/task_$task/last.0.txt" ]
    # The task's log names its own variables: the seed, where its files land.
    run grep -F '] task variables:' "$out"
    assert_output --regexp "task variables: seed=$task checkpoints_dir=$exp_root/rep/checkpoints/task_$task WANDB_DIR=$exp_root/rep/task_$task HPC_WORKDIR=$BATS_FILE_TMPDIR/rep/task_$task$"
  done
}

@test "checkpoints_dir reaches every process: torchrun workers (in a working folder) and lightning ranks" {
  hpc_configs "$PROJECT" 'python files_land.py 1'
  hpc_run_job "$PROJECT" -W torchrun -g 2 -e ddp --workdir "$BATS_FILE_TMPDIR/ddp"
  assert_equal "$job_state" "COMPLETED 0:0"
  run bash -c "grep -o 'TRAINED rank=[01] .*' '$job_out' | sort"
  assert_output "TRAINED rank=0 epochs=1 cwd=$BATS_FILE_TMPDIR/ddp checkpoints_dir=$exp_root/ddp/checkpoints
TRAINED rank=1 epochs=1 cwd=$BATS_FILE_TMPDIR/ddp checkpoints_dir=$exp_root/ddp/checkpoints"
  hpc_run_job "$PROJECT" -W lightning -g 2 -e light
  assert_equal "$job_state" "COMPLETED 0:0"
  run bash -c "grep -o 'TRAINED rank=[01] .*' '$job_out' | sort"
  assert_output "TRAINED rank=0 epochs=1 cwd=$PROJECT checkpoints_dir=$exp_root/light/checkpoints
TRAINED rank=1 epochs=1 cwd=$PROJECT checkpoints_dir=$exp_root/light/checkpoints"
  [ -f "$exp_root/light/checkpoints/last.1.txt" ]
  rm -f "$PROJECT/snapshot.pt"
}

@test "a container job sees its checkpoints_dir as /checkpoints, and what it writes there stays on scratch" {
  # As in container.bats: not under /tmp (the container has its own), the stand-in first on PATH.
  local work
  work=$(mktemp -d /var/tmp/hpc-files-land.XXXXXX)
  export SCRATCH="$work/scratch" HOME="$work/home"
  export PATH="$HPC_ROOT/tests/fixtures/apptainer/bin:$PATH"
  APPTAINERENV_PREPEND_PATH=$(dirname "$(python3 -c 'import sys; print(sys.executable)')")
  export APPTAINERENV_PREPEND_PATH
  mkdir -p "$SCRATCH" "$HOME"
  hpc_project_make "$work/box"
  cp "$HPC_ROOT/tests/fixtures/project/files_land.py" "$work/box/"
  bash "$HPC_ROOT/tests/fixtures/apptainer/make_sif.sh" "$work/box/app.sif"
  hpc_configs "$work/box" "python3 '$work/box/files_land.py' 1"
  hpc_run_job "$work/box" -s "$work/box/app.sif" --repeat 1 -g 0 -e boxed
  local state
  state=$(hpc_job_state "${job_id}_0")
  out="$SCRATCH/box/hpc_outputs/boxed_singularity-none_${job_id}_0.out"
  [[ $state == "COMPLETED 0:0" ]] || fail "job $job_id ended $state: $(cat "$out")"
  run grep '^TRAINED' "$out"
  assert_output "TRAINED rank=0 epochs=1 cwd=/hpc_workdir checkpoints_dir=/checkpoints"
  [ -f "$SCRATCH/box/boxed/checkpoints/task_0/last.0.txt" ]
  rm -rf -- "${work:?}"
}

@test "W&B offline: a plain run and --repeat 3 write under the experiment's folder on scratch, one folder per task, nothing in the project; wandb sync finds every run" {
  hpc_configs "$PROJECT" 'python wandb_offline.py'
  hpc_run_job "$PROJECT" -g 0 -e wb_plain
  assert_equal "$job_state" "COMPLETED 0:0"
  run find "$exp_root/wb_plain/wandb" -maxdepth 1 -name 'offline-run-*'
  assert_equal "${#lines[@]}" 1
  grep -q "^WANDB run=.* dir=$exp_root/wb_plain/wandb/offline-run-" "$job_out" || fail "$(cat "$job_out")"

  hpc_submit_job "$PROJECT" -g 0 --repeat 3 -e wb_rep
  hpc_wait_job "$job_id" 180
  assert_equal "$(array_states "$job_id")" "COMPLETED
COMPLETED
COMPLETED"
  for task in 0 1 2; do
    run find "$exp_root/wb_rep/task_$task/wandb" -maxdepth 1 -name 'offline-run-*'
    assert_equal "${#lines[@]}" 1
    # Each task's own links: no race on a shared latest-run or debug.log.
    [ -L "$exp_root/wb_rep/task_$task/wandb/latest-run" ]
  done
  [ ! -e "$exp_root/wb_rep/wandb" ]
  [ ! -e "$PROJECT/wandb" ]
  # wandb sync, offline (--dry-run: no server), finds all of them in the experiment's folders.
  run env WANDB_MODE=offline timeout 120 wandb sync --dry-run "$exp_root/wb_rep"/task_*/wandb "$exp_root/wb_plain/wandb"
  assert_success
  assert_line --partial "Would sync 4 run(s)"
}

@test "W&B: a WANDB_DIR of the submitting shell is kept, and so is one the configs file's command sets" {
  hpc_configs "$PROJECT" 'python wandb_offline.py'
  mkdir -p "$BATS_FILE_TMPDIR/mine"
  WANDB_DIR="$BATS_FILE_TMPDIR/mine" hpc_run_job "$PROJECT" -g 0 -e wb_mine
  assert_equal "$job_state" "COMPLETED 0:0"
  run find "$BATS_FILE_TMPDIR/mine/wandb" -maxdepth 1 -name 'offline-run-*'
  assert_equal "${#lines[@]}" 1
  run cat "$job_out"
  assert_line "[hpc n1] WANDB_DIR=$BATS_FILE_TMPDIR/mine from the submitting shell is kept"
  [ ! -e "$exp_root/wb_mine/wandb" ]
  mkdir -p "$BATS_FILE_TMPDIR/fromconfigs"
  hpc_configs "$PROJECT" "env WANDB_DIR='$BATS_FILE_TMPDIR/fromconfigs' python wandb_offline.py"
  hpc_run_job "$PROJECT" -g 0 -e wb_configs
  assert_equal "$job_state" "COMPLETED 0:0"
  run find "$BATS_FILE_TMPDIR/fromconfigs/wandb" -maxdepth 1 -name 'offline-run-*'
  assert_equal "${#lines[@]}" 1
  [ ! -e "$exp_root/wb_configs/wandb" ]
  [ ! -e "$PROJECT/wandb" ]
}
