#!/usr/bin/env bats
# job_submitter.sh's rebuilds of the virtual environment, without SLURM (split from
# job_submitter.bats, whose header says how): a rebuild goes beside the old build, and an old
# build is removed only when no queued or running job names it (the squeue and scontrol stubs'
# jobs, HPC_STUB_SQUEUE_JOBS and HPC_STUB_SCRIPTS). The builds themselves: job_submitter_venv.bats.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/submitter'
  hpc_test_warm_profiles
}

setup() {
  load '../helpers/common'
  load '../helpers/stub'
  # shellcheck source=tests/helpers/job_submitter.bash
  source "$BATS_TEST_DIRNAME/../helpers/job_submitter.bash"
  unset name
  hpc_test_submitter_setup scratch
}

# job_venv SCRIPT: the venv a job script runs from (its plan's hpc_plan_venv line, as written).
job_venv() {
  job_plan "$1" | sed -n 's/^hpc_plan_venv=//p'
}

# live_job ID SCRIPT_FILE: makes the stubs of squeue and scontrol report a queued or running job
# ID of the project whose job script is SCRIPT_FILE (added to those already reported).
live_job() {
  mkdir -p "$BATS_TEST_TMPDIR/scripts"
  export HPC_STUB_SCRIPTS=$BATS_TEST_TMPDIR/scripts
  cp -- "$2" "$HPC_STUB_SCRIPTS/$1"
  HPC_STUB_SQUEUE_JOBS+=${HPC_STUB_SQUEUE_JOBS:+$'\n'}$1\|$1\|$project
  export HPC_STUB_SQUEUE_JOBS
}

@test "a rebuild goes beside the old build: virtual_env switches to it, job scripts name their build, unused builds go" {
  printf 'numpy\n' >"$project/requirements.txt"
  HPC_STUB_JOB_ID=4242 submit -y
  assert_equal "$status" 0
  assert_equal "$(readlink "$project/virtual_env")" .virtual_env_builds/venv-4242
  assert_equal "$(job_venv "$outputs/default_venv-none_4243.sh")" "$(printf %q "$project/.virtual_env_builds/venv-4242")"
  # --dry-run shows the same.
  submit --dry-run
  assert_line "hpc_plan_venv=$(printf %q "$project/.virtual_env_builds/venv-4242")"
  refute_output --partial "would be built first"
  # The running job of the first build keeps it; a second build is made beside it.
  live_job 4243 "$outputs/default_venv-none_4243.sh"
  printf 'numpy\nscipy\n' >"$project/requirements.txt"
  forget_calls
  HPC_STUB_JOB_ID=4300 submit -y -e second
  assert_equal "$status" 0
  assert_equal "${stderr_lines[0]}" "job_submitter.sh: requirements.txt changed since $project/virtual_env was built: building it again"
  argv_of venv-python 2
  assert_equal "${argv[*]}" "-m venv --system-site-packages $project/.virtual_env_builds/venv-4300"
  assert_equal "$(readlink "$project/virtual_env")" .virtual_env_builds/venv-4300
  assert_equal "$(job_venv "$outputs/second_venv-none_4301.sh")" "$(printf %q "$project/.virtual_env_builds/venv-4300")"
  assert_equal "$(<"$project/.virtual_env_builds/venv-4242/.hpc_deps")" "requirements.txt
numpy"
  # SLURM was asked which jobs of the project are queued or running, and for their scripts: by
  # the install job, which switched virtual_env at its end.
  argv_of squeue 1
  assert_equal "${argv[*]}" "-h --all -o %A|%F|%Z"
  argv_of scontrol 1
  assert_equal "${argv[*]}" "write batch_script 4243 -"

  # That job is over: the next build removes the first one, not the one in use, nor what
  # the toolkit did not make. Two running tasks of an array and its pending rest: one script.
  mkdir "$project/.virtual_env_builds/venv-mine" "$project/.virtual_env_builds/other"
  unset HPC_STUB_SQUEUE_JOBS
  live_job 4301 "$outputs/second_venv-none_4301.sh"
  HPC_STUB_SQUEUE_JOBS+=$'\n'"4302|4301|$project"$'\n'"4303|4301|$project"$'\n'"9999|9999|/elsewhere"
  printf 'numpy\nscipy\npandas\n' >"$project/requirements.txt"
  forget_calls
  HPC_STUB_JOB_ID=4400 submit -y -e third
  assert_equal "$status" 0
  assert_equal "$(cd "$project/.virtual_env_builds" && echo *)" "other venv-4300 venv-4400 venv-mine"
  assert_equal "$(readlink "$project/virtual_env")" .virtual_env_builds/venv-4400
  assert_equal "$(calls scontrol)" 1
}

@test "a rebuild while a job of the project that the toolkit did not write runs (its own 'source virtual_env/bin/activate'): virtual_env and every build stay" {
  printf 'numpy\n' >"$project/requirements.txt"
  HPC_STUB_JOB_ID=4242 submit -y
  assert_equal "$status" 0
  printf '#!/bin/bash\nsource virtual_env/bin/activate\nsleep 90\npython train.py\n' >"$tmp/user_job.sh"
  live_job 4243 "$tmp/user_job.sh"
  printf 'scipy\n' >"$project/requirements.txt"
  forget_calls
  HPC_STUB_JOB_ID=4300 submit -y -e b
  assert_equal "$status" 0
  assert_equal "$(readlink "$project/virtual_env")" .virtual_env_builds/venv-4242
  assert_equal "$(cd "$project/.virtual_env_builds" && echo *)" "venv-4242 venv-4300"
  [[ $stderr == *"job(s) 4243 of the project, not the toolkit's, are queued or running and may use $project/virtual_env: it and every build stay as they are"* ]] ||
    fail "$stderr"
  # The new job runs from the new build all the same.
  assert_equal "$(job_venv "$outputs/b_venv-none_4301.sh")" "$(printf %q "$project/.virtual_env_builds/venv-4300")"
  grep -qF "job(s) 4243 of the project, not the toolkit's" "$outputs/venv_install_4300.out"
}

@test "a rebuild removes only the builds an install job recorded: planted venv-N folders stay" {
  printf 'numpy\n' >"$project/requirements.txt"
  HPC_STUB_JOB_ID=4242 submit -y
  assert_equal "$status" 0
  # The install job recorded that it made its build.
  assert_equal "$(<"$project/.virtual_env_builds/venv-4242/.hpc_build")" venv-4242
  local builds=$project/.virtual_env_builds
  # No record; a record of another build; a record that is a symbolic link; one that is a folder.
  mkdir "$builds/venv-998" "$builds/venv-997" "$builds/venv-996" "$builds/venv-995"
  echo mine >"$builds/venv-998/mine"
  echo venv-4242 >"$builds/venv-997/.hpc_build"
  echo venv-996 >"$tmp/record"
  ln -s -- "$tmp/record" "$builds/venv-996/.hpc_build"
  mkdir "$builds/venv-995/.hpc_build"
  printf 'scipy\n' >"$project/requirements.txt"
  forget_calls
  HPC_STUB_JOB_ID=4300 submit -y -e b
  assert_equal "$status" 0
  assert_equal "$(cd "$builds" && echo *)" "venv-4300 venv-995 venv-996 venv-997 venv-998"
  assert_equal "$(<"$builds/venv-998/mine")" mine
  assert_equal "$(<"$tmp/record")" venv-996
  [[ -L $builds/venv-996/.hpc_build ]]
  assert_equal "$(readlink "$project/virtual_env")" .virtual_env_builds/venv-4300
  # Said once, by the install job that removed the others (in its log).
  assert_equal "$(grep -c 'no record that the toolkit made' "$outputs/venv_install_4300.out")" 1
}

@test "an install job never removes a planted folder of its own id that it did not record" {
  printf 'numpy\n' >"$project/requirements.txt"
  mkdir -p "$project/.virtual_env_builds/venv-4242"
  echo mine >"$project/.virtual_env_builds/venv-4242/mine"
  submit -y
  assert_equal "$status" 1
  assert_equal "$(<"$project/.virtual_env_builds/venv-4242/mine")" mine
  grep -qF "[hpc node1] venv: FAILED: $project/.virtual_env_builds/venv-4242 exists already" "$outputs/venv_install_4242.out"

  # What an earlier run of the same job (requeued) made and recorded is made again.
  forget_calls
  rm -f -- "$project/.virtual_env_builds/venv-4242/mine"
  echo venv-4242 >"$project/.virtual_env_builds/venv-4242/.hpc_build"
  submit -y
  assert_equal "$status" 0
  grep -qF "[hpc node1] venv: removing what an earlier run of this job left in $project/.virtual_env_builds/venv-4242" "$outputs/venv_install_4242.out"
  assert_equal "$(readlink "$project/virtual_env")" .virtual_env_builds/venv-4242
}

@test "a failed rebuild keeps the old venv in use, says so, exit 1, and removes what it built" {
  printf 'numpy\n' >"$project/requirements.txt"
  HPC_STUB_JOB_ID=4242 submit -y
  assert_equal "$status" 0
  printf 'numpy\nno-such-package\n' >"$project/requirements.txt"
  forget_calls
  HPC_STUB_JOB_ID=4300 HPC_STUB_INSTALL=fail submit -y
  assert_equal "$status" 1
  assert_equal "$output" ""
  assert_equal "${stderr_lines[${#stderr_lines[@]} - 1]}" "job_submitter.sh: the virtual environment's install job 4300 failed; nothing was submitted, and jobs keep using $project/virtual_env as it was. Its log: $outputs/venv_install_4300.out"
  assert_equal "$(calls sbatch)" 1
  assert_equal "$(readlink "$project/virtual_env")" .virtual_env_builds/venv-4242
  assert_equal "$(cd "$project/.virtual_env_builds" && echo *)" "venv-4242"
  assert_equal "$(<"$project/virtual_env/.hpc_deps")" "requirements.txt
numpy"
}

@test "a plain virtual_env of an older toolkit: reused, kept while a job names it, then replaced by a link" {
  printf 'numpy\n' >"$project/requirements.txt"
  make_ready_venv
  submit -y -e old
  assert_equal "$status" 0
  assert_equal "$(calls sbatch)" 1
  assert_equal "$(job_venv "$outputs/old_venv-none_4242.sh")" "$(printf %q "$project/virtual_env")"

  # A job runs from it: the new build is made beside it and used, virtual_env stays.
  live_job 4242 "$outputs/old_venv-none_4242.sh"
  printf 'scipy\n' >"$project/requirements.txt"
  forget_calls
  HPC_STUB_JOB_ID=4300 submit -y -e new
  assert_equal "$status" 0
  assert_line --index 0 --partial "Submitted job 4301 ("
  assert_equal "${stderr_lines[2]}" "job_submitter.sh: a queued or running job runs from $project/virtual_env: it stays as it is; new jobs use $project/.virtual_env_builds/venv-4300"
  [[ -d $project/virtual_env && ! -L $project/virtual_env ]]
  assert_equal "$(job_venv "$outputs/new_venv-none_4301.sh")" "$(printf %q "$project/.virtual_env_builds/venv-4300")"
  # The new build is found without building again.
  forget_calls
  HPC_STUB_JOB_ID=4400 submit -y -e again
  assert_equal "$status" 0
  assert_equal "$(calls sbatch)" 1
  assert_equal "$(job_venv "$outputs/again_venv-none_4400.sh")" "$(printf %q "$project/.virtual_env_builds/venv-4300")"

  # That job is over: the next build turns virtual_env into a link and removes the old folder.
  unset HPC_STUB_SQUEUE_JOBS
  printf 'pandas\n' >"$project/requirements.txt"
  forget_calls
  HPC_STUB_JOB_ID=4500 submit -y -e newer
  assert_equal "$status" 0
  assert_equal "$(readlink "$project/virtual_env")" .virtual_env_builds/venv-4500
  assert_equal "$(cd "$project/.virtual_env_builds" && echo *)" "venv-4500"
}

@test "when SLURM cannot say which jobs run, no build is removed and virtual_env stays" {
  printf 'numpy\n' >"$project/requirements.txt"
  HPC_STUB_JOB_ID=4242 submit -y
  assert_equal "$status" 0
  printf 'scipy\n' >"$project/requirements.txt"
  forget_calls
  HPC_STUB_SQUEUE_JOBS=fail HPC_STUB_JOB_ID=4300 submit -y -e b
  assert_equal "$status" 0
  assert_equal "${stderr_lines[2]}" "job_submitter.sh: SLURM could not say which jobs use the project's virtual environments: none was removed, and $project/virtual_env was left as it is"
  assert_equal "$(readlink "$project/virtual_env")" .virtual_env_builds/venv-4242
  assert_equal "$(cd "$project/.virtual_env_builds" && echo *)" "venv-4242 venv-4300"
  assert_equal "$(job_venv "$outputs/b_venv-none_4301.sh")" "$(printf %q "$project/.virtual_env_builds/venv-4300")"

  # A job's script that SLURM does not give (scontrol exits 0 with an error) counts as not knowing.
  printf 'pandas\n' >"$project/requirements.txt"
  forget_calls
  HPC_STUB_SQUEUE_JOBS="4301|4301|$project" HPC_STUB_JOB_ID=4400 submit -y -e c
  assert_equal "$status" 0
  assert_equal "$(cd "$project/.virtual_env_builds" && echo *)" "venv-4242 venv-4300 venv-4400"
}

@test "a submission between choosing its build and sbatch holds the old builds: none is removed meanwhile" {
  printf 'numpy\n' >"$project/requirements.txt"
  HPC_STUB_JOB_ID=4242 submit -y
  assert_equal "$status" 0
  # Another submission holds the lock it holds until its job is submitted: a shell that takes it
  # and becomes the sleep, so that the kill below ends the holder itself (a sleep left behind by a
  # killed flock(1) kept bats waiting for its output for the rest of the minute); waited for
  # until it holds it.
  (flock -s 9 && : >"$BATS_TEST_TMPDIR/held" && exec sleep 60) 9>>"$project/.virtual_env.use.lock" &
  local holder=$! i
  for ((i = 0; i < 100; i++)); do
    [[ ! -e $BATS_TEST_TMPDIR/held ]] || break
    sleep 0.05
  done
  [[ -e $BATS_TEST_TMPDIR/held ]] || fail "the other submission's lock was not taken"
  printf 'scipy\n' >"$project/requirements.txt"
  forget_calls
  # The install job waits for it a second (not a minute), then leaves virtual_env as it is.
  HPC_VENV_SWITCH_WAIT=1 HPC_STUB_JOB_ID=4300 submit -y -e b
  kill "$holder"
  assert_equal "$status" 0
  assert_equal "${stderr_lines[2]}" "job_submitter.sh: other submissions are under way: the project's old virtual environments are kept for now"
  assert_equal "$(cd "$project/.virtual_env_builds" && echo *)" "venv-4242 venv-4300"
  assert_equal "$(calls squeue)" 1
  assert_equal "$(job_venv "$outputs/b_venv-none_4301.sh")" "$(printf %q "$project/.virtual_env_builds/venv-4300")"
}

@test "a rebuild keeps the build of a live job whose plan file's path holds a quote (SCRATCH=.../o'brien): its plan is read, or nothing is removed" {
  SCRATCH="$tmp/o'brien scratch"
  mkdir -p "$SCRATCH"
  outputs="$SCRATCH/my project/hpc_outputs"
  printf 'numpy\n' >"$project/requirements.txt"
  HPC_STUB_JOB_ID=4242 submit -y
  assert_equal "$status" 0
  assert_equal "$(job_venv "$outputs/default_venv-none_4243.sh")" "$(printf %q "$project/.virtual_env_builds/venv-4242")"
  # Job 4243 is queued: a rebuild must keep the build its plan names.
  live_job 4243 "$outputs/default_venv-none_4243.sh"
  printf 'numpy\nscipy\n' >"$project/requirements.txt"
  forget_calls
  HPC_STUB_JOB_ID=4300 submit -y -e second
  assert_equal "$status" 0
  assert_equal "$(cd "$project/.virtual_env_builds" && echo *)" "venv-4242 venv-4300"
}

@test "a rebuild while a live job names its plan file in a form that cannot be read (a tab in SCRATCH: \$'...'): no build is removed, as when SLURM cannot say" {
  SCRATCH="$tmp/tab"$'\t'"scratch"
  mkdir -p "$SCRATCH"
  outputs="$SCRATCH/my project/hpc_outputs"
  printf 'numpy\n' >"$project/requirements.txt"
  HPC_STUB_JOB_ID=4242 submit -y
  assert_equal "$status" 0
  live_job 4243 "$outputs/default_venv-none_4243.sh"
  printf 'numpy\nscipy\n' >"$project/requirements.txt"
  forget_calls
  HPC_STUB_JOB_ID=4300 submit -y -e second
  assert_equal "$status" 0
  [[ $stderr == *"SLURM could not say which jobs use the project's virtual environments: none was removed"* ]] || fail "$stderr"
  assert_equal "$(cd "$project/.virtual_env_builds" && echo *)" "venv-4242 venv-4300"
}
