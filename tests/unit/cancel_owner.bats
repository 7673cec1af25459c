#!/usr/bin/env bats
# cancel acts only on the user's own jobs: a recorded id that SLURM now gives to another user's
# job (a reset cluster hands ids out again), or to another job of the user's (its name is not the
# recorded one), is not cancelled, even where SLURM would let the caller (root, an operator, an
# account coordinator). Without SLURM: the table-driven stubs of tests/fixtures/manage/bin, and
# plan-style stubs (tests/helpers/stub.bash) for what SLURM says of the ids' owners.
# shellcheck disable=SC2030,SC2031 # make_manifest runs in a subshell: what it sets stays there, on purpose

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/submitter'
  hpc_test_warm_profiles
  export PROJECT="$BATS_FILE_TMPDIR/my project"
  cp -R "$HPC_TEST_PROJECT" "$PROJECT"
  printf 'python main.py --lr 0.1\n' >"$PROJECT/hpc_files/experiment_configurations.txt"
}

setup() {
  load '../helpers/common'
  load '../helpers/stub'
  tmp=$(hpc_test_tmp)
  submitter=$PROJECT/hpc_files/job_submitter.sh
  stub_log="$BATS_TEST_TMPDIR/stub log"
  mkdir -p "$stub_log" "$tmp/scratch"
  cp -R "$HPC_WARM_CACHE" "$tmp/cache"
  unset HPC_STUB_SQUEUE HPC_STUB_SACCT HPC_STUB_SBATCH HPC_STUB_JOB_ID
  export SCRATCH=$tmp/scratch HPC_CLUSTER=local HPC_CACHE_DIR=$tmp/cache HPC_STUB_LOG=$stub_log
  export HPC_STUB_JOBS=$tmp/jobs
  fixtures=$HPC_ROOT/tests/fixtures/manage/bin
  export PATH=$fixtures:$PATH
  outputs="$SCRATCH/my project/hpc_outputs"
  mkdir -p "$outputs"
  me=$(id -un)
}

# manage ARGS...: runs a command of the submitter, stdout and stderr apart.
manage() {
  run --separate-stderr bash "$submitter" "$@" </dev/null
}

# make_manifest EXP ID [ARRAY]: a submission of experiment EXP, job ID (named 'my project-EXP'),
# recorded by the library as the submitter does.
# shellcheck disable=SC2034 # the plan's fields, read by hpc_manifest_write
make_manifest() {
  local exp=$1 id=$2 array=${3-}
  (
    # Without bats' DEBUG trap (set -T hands it to this subshell), which ran before each command of
    # the three libraries and of the writing: 0.45 CPU-s a manifest with it, 0.05 s without. A
    # failure still fails the test, named at the line that called make_manifest.
    trap - DEBUG
    source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
    source "$HPC_ROOT/hpc_files/lib/hpc_manifest.bash"
    source "$HPC_ROOT/hpc_files/lib/hpc_plan.bash"
    hpc_plan_mode=single hpc_plan_requeue=0
    hpc_plan_source_dir=$PROJECT hpc_plan_project_name="my project"
    hpc_plan_scratch_dir="$SCRATCH/my project" hpc_plan_exp_name=$exp hpc_plan_kind=venv-none
    hpc_plan_cluster=local hpc_plan_launcher=none hpc_plan_runner=venv hpc_plan_nodes=1
    hpc_plan_ntasks_per_node=1 hpc_plan_cpus=1 hpc_plan_cpus_per_task=1 hpc_plan_gpus=0
    hpc_plan_mem=1G hpc_plan_time=00-00:10:00 hpc_plan_partition=debug hpc_plan_array=$array
    hpc_plan_job_name="my project-$exp"
    hpc_plan_output=$outputs/${exp}_venv-none_%j.out
    [[ -z $array ]] || hpc_plan_output=$outputs/${exp}_venv-none_%A_%a.out
    hpc_plan_sbatch_args=(--job-name="$hpc_plan_job_name" --nodes=1 --ntasks-per-node=1
      --cpus-per-task=1 --mem=1G --time=00-00:10:00 --output="$hpc_plan_output" --chdir="$PROJECT"
      --signal=B:USR1@30 --no-requeue --open-mode=append --partition=debug)
    [[ -z $array ]] || hpc_plan_sbatch_args+=(--array="$array")
    hpc_plan_command=(python main.py --lr 0.1)
    hpc_submit_argv=(-y -g 0 -e "$exp")
    script=$outputs/${exp}_venv-none_$id.sh
    printf '#!/bin/bash\necho %s\n' "$exp" >"$script"
    hpc_manifest_write "$id" "$script"
  )
}

# squeue_owners ANSWER: plans squeue's two calls of a cancel: the states (the fixture answers
# from the table), then the ids' owners and names, answered with ANSWER (printf's format).
squeue_owners() {
  local quoted
  printf -v quoted '%q' "$fixtures/squeue"
  stub squeue "-h -r -j * : exec $quoted \"\$@\"" "-h -j * -o %F|%U|%u|%j : printf '$1'"
}

@test "cancel: a recorded id that SLURM now gives to another user's job is not cancelled, whoever runs cancel; one line says which and why" {
  make_manifest e 500
  make_manifest e 501 1-2
  make_manifest e 502
  cat >"$HPC_STUB_JOBS" <<'EOT'
squeue 500 500 RUNNING -
squeue 501_1 501 PENDING -
squeue 501_2 501 PENDING -
squeue 502 502 RUNNING -
EOT
  # 500 and 501 are someone else's now (uid 4321, bob); 502 is still the user's own.
  squeue_owners "500|4321|bob|bobs-run\n501|4321|bob|bobs-array\n502|$EUID|$me|my project-e\n"
  stub scancel '502'
  manage cancel e
  unstub squeue
  unstub scancel
  assert_equal "$status" 0
  assert_output "cancelled 502 (e, was RUNNING)"
  assert_equal "$stderr" "job_submitter.sh: not cancelled: 500, 501 (e): SLURM gives these ids to jobs of another user (bob) now: the records are older than those jobs (a reset cluster hands ids out again)"

  # None left that is the user's: no scancel at all.
  squeue_owners "500|4321|bob|bobs-run\n"
  stub scancel
  manage cancel 500
  unstub squeue
  unstub scancel
  assert_equal "$status" 0
  assert_output "Nothing to cancel: no recorded job of 500 is pending or running."
  assert_equal "$stderr" "job_submitter.sh: not cancelled: 500 (e): SLURM gives this id to a job of another user (bob) now: the record is older than that job (a reset cluster hands ids out again)"
}

@test "cancel: a recorded id that SLURM now gives to another job of the user's (another name) is not cancelled" {
  make_manifest e 600
  make_manifest e 601
  cat >"$HPC_STUB_JOBS" <<'EOT'
squeue 600 600 RUNNING -
squeue 601 601 PENDING -
EOT
  squeue_owners "600|$EUID|$me|other-project-x\n601|$EUID|$me|my project-e\n"
  stub scancel '601'
  manage cancel e
  unstub squeue
  unstub scancel
  assert_equal "$status" 0
  assert_output "cancelled 601 (e, was PENDING)"
  assert_equal "$stderr" "job_submitter.sh: not cancelled: 600 (e): SLURM gives this id to another job of yours now (named 'other-project-x', recorded 'my project-e'): the record is older than that job (a reset cluster hands ids out again)"
}

@test "cancel: SLURM cannot say whose the jobs are: nothing is cancelled, exit 1 with the reason" {
  make_manifest e 700
  printf 'squeue 700 700 RUNNING -\n' >"$HPC_STUB_JOBS"
  local quoted
  printf -v quoted '%q' "$fixtures/squeue"
  stub squeue "-h -r -j * : exec $quoted \"\$@\"" \
    "-h -j * -o %F|%U|%u|%j : echo 'squeue: error: Unable to contact slurm controller' >&2; exit 1"
  stub scancel
  manage cancel e
  unstub squeue
  unstub scancel
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: squeue failed, so whose jobs 700 are is unknown: nothing was cancelled (squeue: error: Unable to contact slurm controller)"
}
