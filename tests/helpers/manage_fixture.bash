# shellcheck shell=bash
# Loaded by the unit tests of the management commands on a recorded history (status_scale.bats,
# status_map_scale.bats, attack_issue39.bats): a project installed once per file, SLURM's
# table-driven stand-ins of tests/fixtures/manage/bin (as tests/unit/manage.bats), and
# manifests written by the library itself.

# manage_fixture_project: (setup_file) installs the toolkit into "$BATS_FILE_TMPDIR/my project"
# (exported as PROJECT), whose command is 'python main.py --lr 0.1'.
manage_fixture_project() {
  export PROJECT="$BATS_FILE_TMPDIR/my project"
  mkdir -p "$PROJECT"
  bash "$HPC_ROOT/hpc_files/install.sh" "$PROJECT" >/dev/null
  printf 'python main.py --lr 0.1\n' >"$PROJECT/hpc_files/experiment_configurations.txt"
}

# manage_fixture_setup: (setup) a scratch folder with the project's private outputs folder, the
# stand-ins first on PATH with an empty table of jobs and no sacct; sets tmp, submitter, stub_log,
# outputs and manifests.
manage_fixture_setup() {
  tmp=$(hpc_test_tmp)
  submitter=$PROJECT/hpc_files/job_submitter.sh
  stub_log="$BATS_TEST_TMPDIR/stub log"
  mkdir -p "$stub_log" "$tmp/scratch"
  unset HPC_STUB_SQUEUE HPC_STUB_SACCT HPC_STUB_SBATCH HPC_STUB_JOB_ID
  export SCRATCH=$tmp/scratch HPC_CLUSTER=local HPC_CACHE_DIR=$tmp/cache HPC_STUB_LOG=$stub_log
  export HPC_STUB_JOBS=$tmp/jobs HPC_STUB_SACCT=fail
  export PATH=$HPC_ROOT/tests/fixtures/manage/bin:$PATH
  outputs="$SCRATCH/my project/hpc_outputs"
  # shellcheck disable=SC2034 # read by the tests that load this file
  manifests=$outputs/manifests
  mkdir -p "$outputs"
  chmod 700 "$outputs"
  : >"$HPC_STUB_JOBS"
}

# manage ARGS...: runs a command of the submitter, stdout and stderr apart, at most
# manage_timeout seconds (default 60).
manage() {
  run --separate-stderr timeout "${manage_timeout:-60}" bash "$submitter" "$@" </dev/null
}

# calls COMMAND: how many times the stub COMMAND was called.
calls() {
  local n=0
  while [[ -e $stub_log/$1.$((n + 1)).args ]]; do n=$((n + 1)); done
  printf '%s\n' "$n"
}

# make_manifest EXP ID [ARRAY [MODE]]: a submission of experiment EXP, job ID (an array job when
# ARRAY is given; MODE map for a map's array), recorded by the library as the submitter does.
# shellcheck disable=SC2034 # the plan's fields, read by hpc_manifest_write
make_manifest() {
  local exp=$1 id=$2 array=${3-} mode=${4:-single}
  (
    # Without bats' DEBUG trap (set -T hands it to this subshell), which ran before each command of
    # the three libraries and of the writing: 0.45 CPU-s a manifest with it, 0.05 s without. A
    # failure still fails the test, named at the line that called make_manifest.
    trap - DEBUG
    # shellcheck source=hpc_files/lib/hpc_common.bash
    source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
    # shellcheck source=/dev/null # hpc_manifest.bash and hpc_plan.bash: linted on their own
    source "$HPC_ROOT/hpc_files/lib/hpc_manifest.bash"
    # shellcheck source=/dev/null
    source "$HPC_ROOT/hpc_files/lib/hpc_plan.bash"
    hpc_plan_mode=$mode hpc_plan_requeue=0
    hpc_plan_source_dir=$PROJECT hpc_plan_project_name="my project"
    hpc_plan_scratch_dir="$SCRATCH/my project" hpc_plan_exp_name=$exp hpc_plan_kind=venv-none
    hpc_plan_cluster=local hpc_plan_launcher=none hpc_plan_runner=venv hpc_plan_nodes=1
    hpc_plan_ntasks_per_node=1 hpc_plan_cpus=1 hpc_plan_cpus_per_task=1 hpc_plan_gpus=0
    hpc_plan_mem=1G hpc_plan_time=00-00:10:00 hpc_plan_partition=debug hpc_plan_array=$array
    hpc_plan_job_name="my project-$exp"
    if [[ -n $array ]]; then
      hpc_plan_output=$outputs/${exp}_venv-none_%A_%a.out
    else
      hpc_plan_output=$outputs/${exp}_venv-none_%j.out
    fi
    hpc_plan_sbatch_args=(--job-name="$hpc_plan_job_name" --output="$hpc_plan_output" --partition=debug)
    [[ -z $array ]] || hpc_plan_sbatch_args+=(--array="$array")
    hpc_plan_command=(python main.py --lr 0.1)
    hpc_submit_argv=(-y -g 0 -e "$exp")
    hpc_manifest_write "$id" "$outputs/${exp}_venv-none_$id.sh"
  )
}

# plant_history N FIRST: N single-job submissions, job ids FIRST.., experiments h0..h9 in turn:
# one written by the library (make_manifest), the others its copies with their own id and
# experiment (as fast as a test may be).
plant_history() {
  local n=$1 first=$2 i id exp text t
  make_manifest h0 "$first"
  text=$(<"$manifests/h0_$first.manifest")
  # One subshell with the private umask for all the copies, not one for each.
  (
    umask 077
    for ((i = 1; i < n; i++)); do
      id=$((first + i)) exp=h$((i % 10))
      t=${text//"$first"/"$id"}
      t=${t//$'exp_name\th0'/$'exp_name\t'$exp}
      printf '%s\n' "$t" >"$manifests/${exp}_$id.manifest"
    done
  )
}
