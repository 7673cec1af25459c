#!/usr/bin/env bats
# Faithful reruns: a job runs the plan it was written with, a resubmission runs what ran.
#   - Each plan file carries a token that its job script carries too: a plan or a kept script
#     renamed into another's name (a group member in a group-writable folder, or the user's own
#     mistake) is refused, by the job (FAILED at step 'plan', naming the experiment the plan was
#     written for) and by resubmit (one line, nothing submitted).
#   - The values the configs file's ${VARS} had at submission are recorded (a secret's never);
#     resubmit gives the job those, says where this shell differs, and refuses without a secret.
#   - A map's submission killed before its release: cancel EXP removes what it made; a plain
#     resubmit of a map is refused, pointing to --failed.
# Without SLURM: the PATH stubs of tests/fixtures/submitter/bin (tests/fixtures/manage/bin for
# the killed map); the other member of the group is a real second Unix user (tests/helpers/mate.bash).

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/submitter'
  hpc_test_warm_profiles
}

setup() {
  load '../helpers/common'
  load '../helpers/mate'
  # shellcheck source=tests/helpers/submitter.bash
  source "$BATS_TEST_DIRNAME/../helpers/submitter.bash"
  # A lab's shared folder, outside bats' own temporary folders (0700), reachable by the mate.
  lab=$(mktemp -d "/tmp/hpc lab.XXXXXX")
  chmod 755 "$lab"
  hpc_test_submitter_project "$(hpc_test_tmp)/cache" "$lab/scratch"
  outputs="$SCRATCH/my project/hpc_outputs"
  hpc_test_venv_built "$project"
  unset EPOCHS HPC_TEST_SECRET_TOKEN
  # An sbatch before the stub that notes what the job's environment would hold of EPOCHS and
  # HPC_TEST_SECRET_TOKEN (sbatch passes its environment on to the job).
  mkdir -p "$lab/bin"
  cat >"$lab/bin/sbatch" <<EOT
#!/usr/bin/env bash
n=1
while [[ -e "\$HPC_STUB_LOG/sbatch.\$n.args" ]]; do n=\$((n + 1)); done
printf '%s|%s\n' "\${EPOCHS-(unset)}" "\${HPC_TEST_SECRET_TOKEN-(unset)}" >"\$HPC_STUB_LOG/sbatch.\$n.env"
exec "$fixtures/bin/sbatch" "\$@"
EOT
  chmod +x "$lab/bin/sbatch"
  export PATH=$lab/bin:$PATH
}

teardown() {
  rm -rf -- "${lab:?}"
}

# submit ARGS...: runs the submitter with umask 002 (a lab's shared folder), stdout and stderr apart.
submit() {
  run --separate-stderr bash -c 'umask 002 && exec bash "$@" </dev/null' _ "$submitter" "$@"
}

# configs TEXT: the project's configs file.
configs() {
  printf '%s\n' "$1" >"$project/hpc_files/experiment_configurations.txt"
}

# plan_named SCRIPT: the plan file that the job script SCRIPT names (the test's paths hold no
# special character but spaces).
plan_named() {
  local line
  line=$(grep '^hpc_job_main ' "$1")
  line=${line#hpc_job_main }
  printf '%s\n' "${line//\\ / }"
}

# manage_stubs: the stubs of tests/fixtures/manage/bin first (a table of jobs for squeue and
# scancel, HPC_STUB_SBATCH_KILL_AT), for a submitter killed on the way.
manage_stubs() {
  export PATH=$HPC_ROOT/tests/fixtures/manage/bin:$PATH HPC_STUB_JOBS=$lab/jobs
  : >"$HPC_STUB_JOBS"
}

# run_job SCRIPT ID: runs the job script SCRIPT as SLURM would start job ID (its batch shell).
run_job() {
  run --separate-stderr env SLURM_JOB_ID="$2" SLURM_JOB_NODELIST=node1 SLURMD_NODENAME=node1 \
    SLURM_JOB_NUM_NODES=1 bash "$1"
}

@test "plans swapped by a group member: each job fails at step 'plan' naming the experiment its plan was written for, and neither command runs" {
  configs 'python train.py --epochs 3'
  submit -y -g 0 -e train
  assert_success
  configs 'python cleanup.py --all'
  submit -y -g 0 -e cleanup
  assert_success
  local train=$outputs/train_venv-none_4242.sh cleanup=$outputs/cleanup_venv-none_4243.sh plan_t plan_c
  plan_t=$(plan_named "$train") plan_c=$(plan_named "$cleanup")
  mate_ready
  # The folder is the group's: the other member may rename the user's files in it.
  # shellcheck disable=SC2016 # expanded by the other member's shell
  as_mate 'mv -- "$1" "$1.x" && mv -- "$2" "$1" && mv -- "$1.x" "$2"' _ "$plan_t" "$plan_c"
  run_job "$train" 4242
  assert_equal "$status" 1
  assert_equal "$stderr" "[hpc node1] FAILED at step 'plan': the plan file '$plan_t' is not this job's (it was written for experiment 'cleanup'): not run"
  run_job "$cleanup" 4243
  assert_equal "$status" 1
  assert_equal "$stderr" "[hpc node1] FAILED at step 'plan': the plan file '$plan_c' is not this job's (it was written for experiment 'train'): not run"
  # Put back (the user's own renames): the job gets past its plan.
  mv -- "$plan_t" "$plan_t.x" && mv -- "$plan_c" "$plan_t" && mv -- "$plan_t.x" "$plan_c"
  run_job "$train" 4242
  [[ $stderr != *"not this job's"* && $stderr == *"job 4242 (venv, launcher none)"* ]] || fail "$stderr"
}

@test "kept scripts swapped by a group member: resubmit refuses with one line naming both jobs' plans, nothing submitted; the plan swapped alone is refused too" {
  configs 'python p.py'
  submit -y -g 0 -e expP
  assert_success
  configs 'python q.py'
  submit -y -g 0 -e expQ
  assert_success
  local p=$outputs/expP_venv-none_4242.sh q=$outputs/expQ_venv-none_4243.sh plan_p plan_q
  plan_p=$(plan_named "$p") plan_q=$(plan_named "$q")
  mate_ready
  # shellcheck disable=SC2016 # expanded by the other member's shell
  as_mate 'mv -- "$1" "$1.x" && mv -- "$2" "$1" && mv -- "$1.x" "$2"' _ "$p" "$q"
  submit resubmit expP
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: the kept job script '$p' of job 4242 is not this job's: it runs the plan '$plan_q', not '$plan_p'; nothing was submitted"
  [[ ! -e $stub_log/sbatch.3.args ]] || fail "sbatch was called"
  # Put back; then the plans alone swapped: the script is this job's, its plan is not.
  # shellcheck disable=SC2016 # expanded by the other member's shell
  as_mate 'mv -- "$1" "$1.x" && mv -- "$2" "$1" && mv -- "$1.x" "$2"' _ "$p" "$q"
  # shellcheck disable=SC2016 # expanded by the other member's shell
  as_mate 'mv -- "$1" "$1.x" && mv -- "$2" "$1" && mv -- "$1.x" "$2"' _ "$plan_p" "$plan_q"
  submit resubmit expP
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: the plan file '$plan_p' of job 4242 is not this job's (it was written for experiment 'expQ'); nothing was submitted"
  [[ ! -e $stub_log/sbatch.3.args ]] || fail "sbatch was called"
  # Put back: resubmitted.
  # shellcheck disable=SC2016 # expanded by the other member's shell
  as_mate 'mv -- "$1" "$1.x" && mv -- "$2" "$1" && mv -- "$1.x" "$2"' _ "$plan_p" "$plan_q"
  submit resubmit expP
  assert_success
}

@test "resubmit runs what ran: the \${VARS} of the command get their values from submission, a shell that differs is named in one line; a secret is never recorded and must be set again" {
  # shellcheck disable=SC2016 # for the job to expand
  configs 'python train.py --epochs ${EPOCHS:-5} --seed ${SEED:-1} --key ${HPC_TEST_SECRET_TOKEN:-none}'
  EPOCHS=12 HPC_TEST_SECRET_TOKEN=s3cr3t-value-123 submit -y -g 0 -e ep
  assert_success
  assert_equal "$(cat "$stub_log/sbatch.1.env")" "12|s3cr3t-value-123"
  run grep -rF s3cr3t-value-123 "$outputs"
  assert_failure
  # A new shell without EPOCHS: the job gets 12, and the resubmission says so.
  HPC_TEST_SECRET_TOKEN=s3cr3t-value-123 submit resubmit ep
  assert_success
  assert_equal "$(cat "$stub_log/sbatch.2.env")" "12|s3cr3t-value-123"
  assert_equal "$stderr" "job_submitter.sh: note: EPOCHS is not set in this shell; the job gets the value it had at submission, '12'"
  # EPOCHS=5 and SEED set here (unset at submission): the job gets 12 and no SEED.
  EPOCHS=5 SEED=9 HPC_TEST_SECRET_TOKEN=s3cr3t-value-123 submit resubmit ep
  assert_success
  assert_equal "$(cat "$stub_log/sbatch.3.env")" "12|s3cr3t-value-123"
  assert_line --index 0 "Resubmitted job 4243 of ep as job 4244"
  assert_equal "$stderr" "job_submitter.sh: note: EPOCHS is '5' in this shell; the job gets the value it had at submission, '12'
job_submitter.sh: note: SEED is '9' in this shell but was not set at submission; the job gets it unset, as then"
  # The secret, not set here: refused with the reason, nothing submitted.
  EPOCHS=12 submit resubmit ep
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: HPC_TEST_SECRET_TOKEN: is not set; the configs file's command uses it and a secret's value is never recorded: set it as at submission (nothing was submitted)"
  [[ ! -e $stub_log/sbatch.4.args ]] || fail "sbatch was called"
  run grep -rF s3cr3t-value-123 "$outputs"
  assert_failure
}

@test "a map's submitter killed before its release: cancel EXP cancels its jobs and removes its plans, kept scripts, manifests and half-made map folder; a plain resubmit of a map is refused, pointing to --failed" {
  manage_stubs
  printf 'item%s\n' 0 1 2 3 4 5 6 7 8 9 >"$lab/items.txt"
  # Three held arrays and a gather: killed once sbatch has accepted the third array (before the release).
  HPC_STUB_MAX_ARRAY_SIZE=4 HPC_STUB_SBATCH_KILL_AT=3 submit -y -g 0 -e m --map-over "$lab/items.txt" \
    --gather 'python gather.py'
  assert_equal "$status: $stderr" "137: "
  [[ -n $(find "$outputs" -name 'm_*.plan') ]] || fail "no plan left by the killed submission"
  [[ -n $(find "$outputs/map/m" -mindepth 1 -maxdepth 1) ]] || fail "no map folder left"
  local tag
  tag=$(tr '\0' '\n' <"$stub_log/sbatch.1.args" | sed -n 's/^--comment=//p')
  cat >"$HPC_STUB_JOBS" <<EOT
squeue 5000_0 5000 PENDING/JobHeldUser - $tag
squeue 5001_0 5001 PENDING/JobHeldUser - $tag
squeue 5002_0 5002 PENDING/JobHeldUser - $tag
EOT
  hpc_pending_settle_s=0 submit cancel m
  assert_success
  assert_line --partial "cancelled 5002_0"
  # Nothing of it is left: no plan, no kept script, no manifest, no map folder, no record.
  assert_equal "$(cd "$outputs" && find . -path ./submissions -prune -o -type f -print)" ""
  assert_equal "$(find "$outputs/map/m" -mindepth 1)" ""
  local f
  for f in "$outputs"/submissions/*; do
    [[ ! -s $f || $(head -n 1 "$f") == ended ]] || fail "its record is left: $f"
  done
  # A map released: a plain resubmit is refused (it would run the array into a new folder without
  # its record), pointing to --failed.
  : >"$HPC_STUB_JOBS"
  HPC_STUB_MAX_ARRAY_SIZE=100 HPC_STUB_JOB_ID=6000 submit -y -g 0 -e m2 --map-over "$lab/items.txt"
  assert_success
  local before
  before=$(find "$stub_log" -name 'sbatch.*.args' | wc -l)
  submit resubmit m2
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: resubmit: m2 is a map: a plain resubmission would run its jobs into a new folder without its record; use 'resubmit m2 --failed' (the indices that did not succeed, in the same folder), or submit the map again; nothing was submitted"
  assert_equal "$(find "$stub_log" -name 'sbatch.*.args' | wc -l)" "$before"
}

@test "a scaling study's submitter killed before its release: cancel EXP cancels its held jobs and removes its plans, kept scripts, manifests and study folder" {
  manage_stubs
  # The report job and two runs, held: killed once sbatch has accepted the second run.
  HPC_STUB_SBATCH_KILL_AT=3 submit --scaling-test --scale-gpus 1,2 -e probe -y
  assert_equal "$status: $stderr" "137: "
  [[ -n $(find "$outputs" -name 'probe_*.plan') ]] || fail "no plan left by the killed submission"
  local study
  study=$(find "$outputs/scaling/probe" -mindepth 1 -maxdepth 1)
  [[ -n $study ]] || fail "no study folder left"
  local tag
  tag=$(tr '\0' '\n' <"$stub_log/sbatch.1.args" | sed -n 's/^--comment=//p')
  cat >"$HPC_STUB_JOBS" <<EOT
squeue 5000 5000 PENDING/JobHeldUser - $tag
squeue 5001 5001 PENDING/JobHeldUser - $tag
squeue 5002 5002 PENDING/JobHeldUser - $tag
EOT
  hpc_pending_settle_s=0 submit cancel probe
  assert_success
  assert_line --partial "cancelled 5002"
  assert_equal "$(cd "$outputs" && find . -path ./submissions -prune -o -type f -print)" ""
  assert_equal "$(find "$outputs/scaling/probe" -mindepth 1)" ""
}
