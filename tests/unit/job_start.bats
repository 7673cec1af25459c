#!/usr/bin/env bats
# What a job's start costs, counted (never timed; bench/submit times it): the processes the job
# script starts before the program, and the library files it reads, without SLURM (the PATH stubs
# of tests/fixtures/submitter/bin). The job script is the one a stub submission wrote, run as
# slurmstepd would on a one-node job without data (SLURM_TMPDIR provided by the cluster).

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
  # The venv's python, which the job checks is there (the program is not Python).
  ln -s "$(command -v python3)" "$project/virtual_env/bin/python"
  command -v strace >/dev/null || skip "strace is not installed"
  strace -f -o /dev/null true 2>/dev/null || skip "strace cannot trace here (ptrace not permitted)"
  # The program: a plain command that names itself, so that its start is found in the trace.
  printf 'true hpc-job-start-marker\n' >"$project/hpc_files/experiment_configurations.txt"
  mkdir -p "$BATS_TEST_TMPDIR/slurm_4242"
  export SLURM_JOB_ID=4242 SLURM_JOB_NODELIST=n1 SLURMD_NODENAME=n1 SLURM_JOB_NUM_NODES=1 SLURM_NNODES=1 \
    SLURM_TMPDIR="$BATS_TEST_TMPDIR/slurm_4242" SLURM_CPUS_PER_TASK=1
  unset SLURM_ARRAY_TASK_ID SLURM_ARRAY_JOB_ID SLURM_RESTART_COUNT
}

# job_start_of ARGS...|--submitted: submits with ARGS (stubs; --submitted: already done), runs
# the job script under strace and sets before to the programs started (execve) on the way to the
# program's own start, in order, one word each, and files to the library files read on that way
# (their names, sorted). On the way:
# what the job's processes did before the program's process was forked, and what that process
# (and its children) did before it became the program; not what the batch shell does beside the
# program once it is started (the usage sampler).
job_start_of() {
  local trace="$BATS_TEST_TMPDIR/strace.txt"
  if [[ $1 != --submitted ]]; then
    bash "$submitter" "$@" >"$BATS_TEST_TMPDIR/out" 2>&1 ||
      fail "the submission failed: $(cat "$BATS_TEST_TMPDIR/out")"
  fi
  [[ -f $stub_log/sbatch.1.script ]] || fail "no job script"
  (cd "$project" && strace -f -qq -e trace=execve,openat,open,clone,clone3,fork,vfork -o "$trace" \
    bash "$stub_log/sbatch.1.script") >"$BATS_TEST_TMPDIR/job.out" 2>&1 ||
    fail "the job failed: $(cat "$BATS_TEST_TMPDIR/job.out")"
  # The program's own execve (its argv[0] 'true'), not one that carries its command as arguments.
  grep -q 'execve("[^"]*", \["true", "hpc-job-start-marker"' "$trace" ||
    fail "the program did not start: $(cat "$BATS_TEST_TMPDIR/job.out")"
  awk '
    { pid = $1 }
    NR == 1 { next }
    /execve\("[^"]*", \["true", "hpc-job-start-marker"/ && !program { program = pid; marker = NR }
    /(clone|clone3|fork|vfork)\(|<\.\.\. (clone|clone3|fork|vfork) resumed>/ && / = [0-9]+$/ && !/CLONE_THREAD/ {
      parent[$NF] = pid; forked[$NF] = NR
    }
    { line[NR] = $0; who[NR] = pid }
    END {
      own[program] = 1
      do {
        more = 0
        for (k in parent) if (!(k in own) && (parent[k] in own)) { own[k] = 1; more = 1 }
      } while (more)
      for (n = 2; n < marker; n++) if (n < forked[program] || (who[n] in own)) print line[n]
    }' "$trace" >"$BATS_TEST_TMPDIR/on the way"
  before=$(grep 'execve(' "$BATS_TEST_TMPDIR/on the way" | grep -v ENOENT |
    sed 's/.*execve("\([^"]*\)".*/\1/; s|.*/||' | tr '\n' ' ')
  before=${before% }
  files=$(grep -o '/lib/[a-z_/]*\.bash\|/[a-z_]*_hpc_files/[a-z_]*\.bash' "$BATS_TEST_TMPDIR/on the way" |
    sed 's|.*/||' | sort -u | tr '\n' ' ')
  files=${files% }
}

@test "a one-node job without data starts its program with one process before it, the plan file's stat (writable by nobody else?): no second bash, no dirname, no srun, no mkdir of the folders the submission made" {
  job_start_of -y -g 0 -e start
  assert_equal "$before" "stat"
  run grep -c 'starting after' "$BATS_TEST_TMPDIR/job.out"
  assert_output 1
  run grep -c 'finished successfully' "$BATS_TEST_TMPDIR/job.out"
  assert_output 1
}

@test "a job whose checkpoints folder was removed after the submission makes it again before the program: one mkdir more" {
  bash "$submitter" -y -g 0 -e start >"$BATS_TEST_TMPDIR/out" 2>&1 ||
    fail "the submission failed: $(cat "$BATS_TEST_TMPDIR/out")"
  rm -rf -- "${SCRATCH:?}/my project/start/checkpoints"
  job_start_of --submitted
  assert_equal "$before" "stat mkdir"
  [[ -d $SCRATCH/my\ project/start/checkpoints ]] || fail "no checkpoints folder"
}

@test "a job reads only the libraries its start needs before the program: not the usage sampler's (hpc_usage.bash), a sweep's key (hpc_sweep.bash), data staging (hpc_stage_node.bash), maps, scaling or interactive code" {
  job_start_of -y -g 0 -e start
  local lib
  for lib in hpc_usage hpc_map hpc_scaling hpc_interactive hpc_sweep hpc_stage_node; do
    [[ " $files " != *" $lib.bash "* ]] || fail "libraries read before the program: $files"
  done
}

@test "the usage sampler still starts, beside the program: its srun (the stub) is called once with job_step.sh sample" {
  # A program that ends once the sampler's srun was called (10 s at most), as a real one runs on.
  # shellcheck disable=SC2016 # the program's own text
  printf 'for ((i = 0; i < 200; i++)); do [[ -e $HPC_STUB_LOG/srun.1.args ]] && exit 0; sleep 0.05; done\n' \
    >"$project/wait_sampler.sh"
  printf 'bash wait_sampler.sh\n' >"$project/hpc_files/experiment_configurations.txt"
  bash "$submitter" -y -g 0 -e start >"$BATS_TEST_TMPDIR/out" 2>&1 ||
    fail "the submission failed: $(cat "$BATS_TEST_TMPDIR/out")"
  (cd "$project" && bash "$stub_log/sbatch.1.script") >"$BATS_TEST_TMPDIR/job.out" 2>&1 ||
    fail "the job failed: $(cat "$BATS_TEST_TMPDIR/job.out")"
  [[ -f $stub_log/srun.1.args ]] || fail "no srun for the sampler: $(cat "$BATS_TEST_TMPDIR/job.out")"
  run bash -c 'tr "\0" " " <"$1"' _ "$stub_log/srun.1.args"
  assert_output --partial "job_step.sh sample 4242"
}
