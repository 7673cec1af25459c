#!/usr/bin/env bats
# Attacks on issue 40's parts (preemption, usage from sacct, limits on submitted jobs): what a
# garbage, overflowing or foreign answer of SLURM's accounting, or a hanging scontrol, must not do.
# sacctmgr, squeue and sacct are PATH stubs of this file; the rest the stubs of
# tests/fixtures/submitter/bin.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  # The profiles compiled once for the whole bats run, by the first file that asks.
  # shellcheck source=tests/helpers/submitter.bash
  source "$BATS_TEST_DIRNAME/../helpers/submitter.bash"
  hpc_test_warm_profiles
}

setup() {
  load '../helpers/common'
  tmp=$(hpc_test_tmp)
  mkdir -p "$tmp/bin"
}

# map_project: a project with a map's command line, stubs of sacctmgr (assoc.txt, qos.txt:
# NAME|MAX) and squeue (jobs.txt), as tests/unit/map_limits.bats sets them up.
map_project() {
  # shellcheck source=tests/helpers/submitter.bash
  source "$BATS_TEST_DIRNAME/../helpers/submitter.bash"
  # A built venv: no install job.
  hpc_test_submitter_setup scratch --venv
  # shellcheck disable=SC2016 # the reference is for the job to expand
  printf 'python featurize.py --index ${map_index}\n' >"$project/hpc_files/experiment_configurations.txt"
  unset SBATCH_QOS SBATCH_ACCOUNT
  export HPC_STUB_MAX_ARRAY_SIZE=1000
  cat >"$tmp/bin/sacctmgr" <<EOS
#!/usr/bin/env bash
case "\$*" in
  *'show user '*) cat '$tmp/assoc.txt' ;;
  *'show qos '*) awk -F'|' -v q="\$5" '\$1 == q { print \$2 }' '$tmp/qos.txt' ;;
esac
EOS
  cat >"$tmp/bin/squeue" <<EOS
#!/usr/bin/env bash
if [[ "\$*" == *'%q|%a'* ]]; then cat '$tmp/jobs.txt'; exit 0; fi
exec '$HPC_ROOT/tests/fixtures/submitter/bin/squeue' "\$@"
EOS
  chmod +x "$tmp/bin/sacctmgr" "$tmp/bin/squeue"
  printf 'lab|lab|||normal\n' >"$tmp/assoc.txt"
  : >"$tmp/jobs.txt"
  export PATH=$tmp/bin:$PATH
}

@test "limits: a MaxSubmitJobsPerUser that overflows bash's numbers is no limit known (sbatch judges), never a wrapped room" {
  map_project
  printf 'limited|9223372036854775808\n' >"$tmp/qos.txt"
  SBATCH_QOS=limited run --separate-stderr bash "$submitter" --dry-run -g 0 --map-range 0-9 --chunk auto \
    --max-concurrent 10 --gather 'python -c pass' -e a </dev/null
  assert_success
  assert_line --regexp '^10 items in chunks of 1: one array of 10 task\(s\): '
  assert_equal "$stderr" ''
}

@test "limits: a MaxSubmitJobs with a leading zero (08) is read in base 10, never an arithmetic error" {
  map_project
  printf 'lab|lab||08|normal\n' >"$tmp/assoc.txt"
  printf 'normal|\n' >"$tmp/qos.txt"
  run --separate-stderr bash "$submitter" --dry-run -g 0 --map-range 0-9 --chunk auto --max-concurrent 10 \
    --gather 'python -c pass' -e a </dev/null
  assert_success
  # 8 jobs: 7 tasks of 2 items would be 5 tasks; K = ceil(10 / 7) = 2, 5 tasks and the gather.
  assert_line --regexp '^10 items in chunks of 2: one array of 5 task\(s\): '
  assert_equal "$stderr" "job_submitter.sh: note: --chunk auto: 2 items per task, so that the 5 tasks and the gather fit MaxSubmitJobs 8 of account lab, 0 already submitted"
}

@test "preempted run: a hanging scontrol requeue does not hold the batch shell (bounded, said in the log)" {
  printf '#!/bin/sh\nexec sleep 3600\n' >"$tmp/bin/scontrol"
  chmod +x "$tmp/bin/scontrol"
  # The batch shell's end after a preempted run whose program stopped early; a hang detector
  # (HPC_TEST_HANG_S), not a measure of speed: unbounded, scontrol would hold it for an hour.
  # shellcheck disable=SC2016 # expanded by the inner bash
  PATH=$tmp/bin:$PATH SLURM_JOB_ID=4242 SLURMD_NODENAME=n1 scratch_dir=$tmp/scratch SLURM_RESTART_COUNT=0 \
    run timeout "$HPC_TEST_HANG_S" bash -c '
    source "$1/hpc_files/lib/hpc_job.bash"
    hpc_job_warned=1 hpc_job_preempted=1 hpc_job_ended_by_slurm=0 hpc_plan_requeue=0
    hpc_job_maybe_requeue' _ "$HPC_ROOT"
  assert_success
  assert_line --partial 'scontrol requeue 4242 failed'
}

@test "a preempted map task that holds its array's job id makes only itself requeueable and requeues only itself (ARRAY_TASK: by the array's id SLURM updates and requeues every task)" {
  load '../helpers/stub'
  # shellcheck source=/dev/null # hpc_job.bash is linted on its own (tests/run.sh)
  source "$HPC_ROOT/hpc_files/lib/hpc_job.bash"
  # shellcheck disable=SC2030 # each @test runs in a subshell of its own: its exports stay there
  export SLURM_JOB_ID=4242 SLURM_ARRAY_JOB_ID=4242 SLURM_ARRAY_TASK_ID=2 SLURMD_NODENAME=n1 HPC_WARNING_SIGNAL=USR1
  export scratch_dir=$tmp/scratch SLURM_RESTART_COUNT=0
  mkdir -p "$scratch_dir/hpc_outputs"
  # shellcheck disable=SC2034 # read by hpc_job_signals.bash
  hpc_job_warned=0 hpc_job_ended_by_slurm=0 hpc_plan_requeue=0
  stub scontrol \
    "-o show job 4242_2 : echo 'JobId=4242 ArrayJobId=4242 ArrayTaskId=2 JobState=RUNNING PreemptTime=2026-11-28T11:53:31'" \
    'update JobId=4242_2 Requeue=1 : true' 'requeue 4242_2 : true'
  hpc_job_forward USR1 2>"$tmp/log"
  run cat "$tmp/log"
  assert_line --partial 'preempted by a higher-priority job'
  assert_line --partial 'made requeueable'
  run hpc_job_maybe_requeue
  assert_success
  refute_output --partial failed
  unstub scontrol
}

@test "usage: sacct is asked for the user's own jobs only: another user's job of the same id (ids reused after a reset of the controller) is neither merged nor shown" {
  # shellcheck source=hpc_files/lib/hpc_facts.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_facts.bash"
  # shellcheck source=hpc_files/lib/hpc_slurm.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_slurm.bash"
  # shellcheck source=hpc_files/lib/hpc_usage.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_usage.bash"
  # As sacct does where PrivateData does not hide them: every user's job 17, unless -u USER.
  cat >"$tmp/bin/sacct" <<EOS
#!/usr/bin/env bash
me=''
while ((\$#)); do
  case \$1 in -u | --user) me=\$2; shift ;; --user=*) me=\${1#--user=} ;; esac
  shift
done
if [[ \$me != '$(id -un)' && \$me != '$(id -u)' ]]; then
  printf '%s\n' '17|FAILED|10:00:00||09:59:00' '17.batch|FAILED|10:00:00|99G|09:59:00'
fi
printf '%s\n' '17|COMPLETED|00:00:13||00:05.717' '17.batch|COMPLETED|00:00:13|238354432|00:05.599'
EOS
  chmod +x "$tmp/bin/sacct"
  PATH=$tmp/bin:$PATH hpc_usage_sacct_load 17
  assert_equal "${hpc_usage_acct[17]}" \
    "CPU 5.60 CPU-s (TotalCPU, all its steps); peak memory 227 MiB (MaxRSS, its largest task); elapsed 13 s; COMPLETED"
}

@test "append mode: the first run of a job starts its log afresh (a log of an earlier job of the same name and id ran on into it); a restart's run appends" {
  # shellcheck source=/dev/null # hpc_job.bash is linted on its own (tests/run.sh)
  source "$HPC_ROOT/hpc_files/lib/hpc_job.bash"
  local log="$tmp/exp_venv-none_17.out"
  local script="$tmp/slurm_script"
  printf 'an earlier job 17: HPC_TOKEN=stale\n' >"$log"
  touch -d '-2 minutes' "$log"
  # The batch script, as slurmd writes it when it launches the job.
  : >"$script"
  # As SLURM opens it (--open-mode=append): the batch shell's standard output and error.
  (SLURM_RESTART_COUNT=0 && hpc_job_log_fresh "$script" && echo 'this job, run 0') >>"$log" 2>&1
  assert_equal "$(cat "$log")" 'this job, run 0'
  (SLURM_RESTART_COUNT=1 && hpc_job_log_fresh "$script" && echo 'this job, run 1') >>"$log" 2>&1
  assert_equal "$(cat "$log")" $'this job, run 0\nthis job, run 1'
  # Not SLURM's one file for both (a terminal, a pipe, errors elsewhere): left alone.
  (unset SLURM_RESTART_COUNT && hpc_job_log_fresh "$script" && echo 'again') >>"$log" 2>/dev/null
  assert_equal "$(cat "$log")" $'this job, run 0\nthis job, run 1\nagain'
  # Written after the script (slurmstepd's line before the batch shell started): this job's, kept.
  printf 'slurmstepd: error: cannot chdir\n' >"$log"
  (SLURM_RESTART_COUNT=0 && hpc_job_log_fresh "$script" && echo 'this job') >>"$log" 2>&1
  assert_equal "$(cat "$log")" $'slurmstepd: error: cannot chdir\nthis job'
}
