#!/usr/bin/env bats
# Attacks on the scaling test's submission (hpc_scaling.bash) with the PATH stubs of
# tests/fixtures/submitter/bin (no SLURM): a failure midway removes only the study folder it
# made, never a folder that existed nor anything reached through a link; no secret in a bash -x
# trace of a whole scaling submission, nor in what it writes.

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
  outputs="$SCRATCH/my project/hpc_outputs"
  hpc_test_venv_built "$project"
}

# scontrol_refusing_update: a scontrol before the stub on PATH that refuses 'update' (the report
# job's dependency), so that the submission fails after the study folder was made.
scontrol_refusing_update() {
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  # shellcheck disable=SC2016 # the stand-in's own $1 and $@
  printf '#!/usr/bin/env bash\n[[ ${1-} != update ]] || { echo "scontrol: refused" >&2; exit 1; }\nexec %q "$@"\n' \
    "$fixtures/bin/scontrol" >"$BATS_TEST_TMPDIR/bin/scontrol"
  chmod +x "$BATS_TEST_TMPDIR/bin/scontrol"
  export PATH=$BATS_TEST_TMPDIR/bin:$PATH
}

# calls COMMAND: how many times the stub COMMAND was called.
calls() {
  local n=0
  while [[ -e $stub_log/$1.$((n + 1)).args ]]; do n=$((n + 1)); done
  printf '%s\n' "$n"
}

# listing DIR: every path under DIR with its type and size, sorted (links not followed).
listing() {
  find "$1" -printf '%P %y %s\n' | LC_ALL=C sort
}

@test "scaling: a failure midway removes the study folder it made and cancels the jobs; folders that were there stay" {
  scontrol_refusing_update
  run --separate-stderr bash "$submitter" --scaling-test --scale-gpus 1,2 -e probe -y </dev/null
  assert_equal "$status" 1
  [[ $stderr == *"cannot make the report job wait for the runs: scontrol: refused; the study's jobs (4242 4243 4244) were cancelled"* ]] || fail "$stderr"
  run find "$outputs/scaling/probe" -mindepth 1 -maxdepth 1
  assert_output ''
  # A study folder of that name already there (the same second and id): kept as it was.
  local stamp s
  mkdir -p "$outputs/scaling/probe"
  for s in 0 1 2 3; do
    printf -v stamp '%(%Y%m%d-%H%M%S)T' "$((EPOCHSECONDS + s))"
    mkdir -p "$outputs/scaling/probe/$stamp-4245"
    printf 'mine\n' >"$outputs/scaling/probe/$stamp-4245/notes.txt"
  done
  local before
  before=$(listing "$outputs/scaling")
  run --separate-stderr bash "$submitter" --scaling-test --scale-gpus 1,2 -e probe -y </dev/null
  assert_equal "$status" 1
  [[ $stderr == *"cannot make "*"-4245: it exists; the study's jobs (4245) were cancelled"* ]] || fail "$stderr"
  assert_equal "$(listing "$outputs/scaling")" "$before"
}

@test "scaling: scaling/<exp> or scaling/ a symbolic link -> refused before anything is submitted, the link's target untouched" {
  local target="$BATS_TEST_TMPDIR/elsewhere" before
  mkdir -p "$target" "$outputs/scaling"
  printf 'mine\n' >"$target/notes.txt"
  ln -s "$target" "$outputs/scaling/probe"
  before=$(listing "$target")
  run --separate-stderr bash "$submitter" --scaling-test --scale-gpus 1,2 -e probe -y </dev/null
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: $outputs/scaling/probe is a symbolic link; the scaling study's folders are made in a folder of their own, never through a link: nothing was submitted"
  assert_equal "$(calls sbatch)" 0
  assert_equal "$(listing "$target")" "$before"
  rm -- "$outputs/scaling/probe"
  rmdir -- "$outputs/scaling"
  ln -s "$target" "$outputs/scaling"
  run --separate-stderr bash "$submitter" --scaling-test --scale-gpus 1,2 -e probe -y </dev/null
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: $outputs/scaling is a symbolic link; the scaling study's folders are made in a folder of their own, never through a link: nothing was submitted"
  assert_equal "$(calls sbatch)" 0
  assert_equal "$(listing "$target")" "$before"
}

@test "scaling: no secret in a bash -x trace of a whole scaling submission, nor in study.json, the job scripts, the manifests" {
  local sentinel=sentinel-XYZ123456
  # shellcheck disable=SC2016 # expanded on the node, from the job's environment
  printf 'python main.py --wandb-key $WANDB_API_KEY\n' >"$project/hpc_files/experiment_configurations.txt"
  WANDB_API_KEY=$sentinel run --separate-stderr bash -x "$submitter" --scaling-test --scale-gpus 1,2 -e probe -y </dev/null
  assert_equal "$status" 0
  [[ $stderr != *"$sentinel"* && $output != *"$sentinel"* ]] || fail "the key is in the trace: $(grep -m3 -F -- "$sentinel" <<<"$stderr$output")"
  run grep -rlaF -- "$sentinel" "$SCRATCH" "$stub_log"
  assert_output ''
  [ -f "$(echo "$outputs"/scaling/probe/*/study.json)" ]
}

@test "a run's status.json or wall.json planted as a link to a folder: replaced, nothing written into the folder" {
  local run_dir="$BATS_TEST_TMPDIR/runs/1x1-r1" elsewhere="$BATS_TEST_TMPDIR/elsewhere"
  mkdir -p "$run_dir" "$elsewhere"
  ln -s "$elsewhere" "$run_dir/wall.json"
  run bash -c 'set -euo pipefail; source "$1/hpc_files/lib/hpc_followup.bash"; hpc_followup_status_write "$2/wall.json" "wall_s:=1.5" "job_id=7"' _ "$HPC_ROOT" "$run_dir"
  assert_success
  run find "$elsewhere" -mindepth 1
  assert_output ''
  [[ ! -L $run_dir/wall.json ]] || fail "still a link"
  run cat "$run_dir/wall.json"
  assert_output '{"wall_s": 1.5, "job_id": "7"}'
}

# node_calls: how many times sinfo was asked for the nodes and their hosts (sinfo -N).
node_calls() {
  local n=1 count=0 a
  local -a args
  while [[ -e $stub_log/sinfo.$n.args ]]; do
    mapfile -d '' args <"$stub_log/sinfo.$n.args"
    for a in "${args[@]}"; do [[ $a != -N ]] || count=$((count + 1)); done
    n=$((n + 1))
  done
  printf '%s\n' "$count"
}

@test "scaling: the partition's nodes and hosts are asked of sinfo once in 10 minutes (per cluster, SLURM_CONF and partition)" {
  local file
  run --separate-stderr bash "$submitter" --scaling-test --scale-gpus 1,2 -e a -y </dev/null
  assert_success
  assert_equal "$(node_calls)" 1
  grep -q '"shared_host": false' "$outputs/scaling/a/"*/study.json
  run --separate-stderr bash "$submitter" --scaling-test --scale-gpus 1,2 -e b -y </dev/null
  assert_success
  assert_equal "$(node_calls)" 1
  grep -q '"shared_host": false' "$outputs/scaling/b/"*/study.json
  # Another partition, another SLURM configuration: asked again.
  run --separate-stderr bash "$submitter" --scaling-test --scale-gpus 1,2 -p gpu -e c -y </dev/null
  assert_success
  assert_equal "$(node_calls)" 2
  SLURM_CONF=$tmp/other.conf run --separate-stderr bash "$submitter" --scaling-test --scale-gpus 1,2 -p gpu -e d -y </dev/null
  assert_success
  assert_equal "$(node_calls)" 3
  # Older than 10 minutes: asked again.
  for file in "$HPC_CACHE_DIR/slurm/"*.hosts; do
    sed -i "1s/.*/$((EPOCHSECONDS - 601))/" "$file"
  done
  SLURM_CONF=$tmp/other.conf run --separate-stderr bash "$submitter" --scaling-test --scale-gpus 1,2 -p gpu -e e -y </dev/null
  assert_success
  assert_equal "$(node_calls)" 4
}

@test "scaling: -n/--num-nodes equal to the largest of --scale-nodes is accepted (the dry run lists 1 and 2 nodes); another -n is refused naming both" {
  run --separate-stderr bash "$submitter" --scaling-test --scale-nodes 1,2 -n 2 -W torchrun -g 1 -e probe --dry-run </dev/null
  assert_success
  assert_output --partial "1x1-r1: 1 node(s) x 1 GPU(s)"
  assert_output --partial "2x1-r1: 2 node(s) x 1 GPU(s)"
  local before
  before=$(calls sbatch)
  run --separate-stderr bash "$submitter" --scaling-test --scale-nodes 1,2 -n 3 -W torchrun -g 1 -e probe --dry-run </dev/null
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: -n/--num-nodes: 3 with --scale-nodes 1,2, whose largest is 2; accepted: -n/--num-nodes equal to the largest of --scale-nodes, or one of the two alone"
  assert_equal "$(calls sbatch)" "$before"
}

# submitted_study: a study of runs 1x1-r1 (job 4243, COMPLETED) and 1x2-r1 (job 4244, FAILED,
# with its wall.json) whose report job is 4242; sets study_dir and empties the stubs' log.
submitted_study() {
  run --separate-stderr bash "$submitter" --scaling-test --scale-gpus 1,2 -e probe -y </dev/null
  assert_success
  study_dir=$(echo "$outputs"/scaling/probe/*-4242)
  [[ -f $study_dir/study.json ]] || fail "no study in $outputs/scaling/probe"
  printf '{"job_id": "4243", "state": "COMPLETED", "exit_code": 0}\n' >"$study_dir/runs/1x1-r1/status.json"
  printf '{"job_id": "4244", "state": "FAILED", "exit_code": 3}\n' >"$study_dir/runs/1x2-r1/status.json"
  printf '{"wall_s": 1.5, "job_id": "4244"}\n' >"$study_dir/runs/1x2-r1/wall.json"
  rm -f "$stub_log"/*
}

@test "resubmit --failed of a study: squeue down, or study.json holding a job id that is not a number ('abc', '4294967295x'): refused with one line, exit 1, nothing submitted or moved (squeue's error was taken for 'nothing runs')" {
  submitted_study
  local before
  before=$(listing "$study_dir")
  hpc_test_squeue_like_slurm fail
  run --separate-stderr bash "$submitter" resubmit probe --failed </dev/null
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: squeue failed: squeue: error: Unable to contact slurm controller (connect failure); nothing was submitted"
  assert_equal "$(calls sbatch)" 0
  assert_equal "$(listing "$study_dir")" "$before"
  # The report job 4242 still pending, its id in study.json edited to a word.
  local id
  for id in abc 4294967295x; do
    python3 -c 'import json,sys; p=sys.argv[1]; d=json.load(open(p)); d["report_job_id"]=sys.argv[2]; json.dump(d, open(p, "w"))' "$study_dir/study.json" "$id"
    before=$(listing "$study_dir")
    HPC_STUB_LIVE_IDS=4242 run --separate-stderr bash "$submitter" resubmit probe --failed </dev/null
    assert_equal "$status" 1
    assert_equal "$stderr" "job_submitter.sh: $study_dir/study.json holds '$id', which is not a job id; nothing was submitted"
    assert_equal "$(calls sbatch)" 0
    assert_equal "$(listing "$study_dir")" "$before"
  done
}

@test "resubmit --failed of a study, a TERM while its new report job is being submitted: the held run and the report are cancelled, never released; the submitter ends by the signal" {
  submitted_study
  hpc_test_slow_sbatch 2
  HPC_STUB_LIVE_IDS='' hpc_test_signal_during_sbatch TERM resubmit probe --failed
  assert_equal "$hpc_test_rc" 143
  assert_equal "$(hpc_test_cancelled)" "4242 4243"
  assert_equal "$(<"$tmp/err")" "job_submitter.sh: stopped by SIGTERM; the resubmission (jobs 4242 4243) was cancelled"
  local n=1
  while [[ -e $stub_log/scontrol.$n.args ]]; do
    mapfile -d '' argv <"$stub_log/scontrol.$n.args"
    [[ ${argv[0]} != release ]] || fail "released: ${argv[*]}"
    n=$((n + 1))
  done
}

@test "resubmit --failed of a study whose report job is still pending: refused, exit 1; once SLURM has forgotten every job of it, the failed run is resubmitted" {
  submitted_study
  hpc_test_squeue_like_slurm 4242
  run --separate-stderr bash "$submitter" resubmit probe --failed </dev/null
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: the study ${study_dir##*/} still has jobs pending or running; resubmit --failed once they have ended"
  assert_equal "$(calls sbatch)" 0
  HPC_STUB_LIVE_IDS='' run --separate-stderr bash "$submitter" resubmit probe --failed </dev/null
  assert_success
  assert_line --index 0 "Resubmitted run(s) 1x2-r1 of study ${study_dir##*/} as job(s) 4242"
  assert_equal "$(calls sbatch)" 2
}

@test "resubmit --failed of a study with a planted wall.attempt1.json (a link to a folder) and metrics.attempt1.json (a FIFO): the earlier files become *.attempt2.json; nothing moved into the folder, the planted files stay" {
  submitted_study
  local run_dir=$study_dir/runs/1x2-r1 elsewhere=$BATS_TEST_TMPDIR/elsewhere
  mkdir -p "$elsewhere"
  ln -s "$elsewhere" "$run_dir/wall.attempt1.json"
  mkfifo "$run_dir/metrics.attempt1.json"
  printf '{"throughput": 1}\n' >"$run_dir/metrics.json"
  hpc_test_squeue_like_slurm ''
  run --separate-stderr bash "$submitter" resubmit probe --failed </dev/null
  assert_success
  run find "$elsewhere" -mindepth 1
  assert_output ''
  [[ -L $run_dir/wall.attempt1.json && -p $run_dir/metrics.attempt1.json ]] || fail "a planted file was replaced: $(ls -l "$run_dir")"
  run cat "$run_dir/status.attempt2.json" "$run_dir/wall.attempt2.json" "$run_dir/metrics.attempt2.json"
  assert_output $'{"job_id": "4244", "state": "FAILED", "exit_code": 3}\n{"wall_s": 1.5, "job_id": "4244"}\n{"throughput": 1}'
  [[ ! -e $run_dir/status.json && ! -e $run_dir/wall.json && ! -e $run_dir/metrics.json ]] || fail "not moved: $(ls "$run_dir")"
}

@test "resubmit --failed of a study whose runs/ folder was replaced by a link: refused with one line naming it, nothing submitted, nothing moved in the link's target" {
  submitted_study
  local elsewhere=$BATS_TEST_TMPDIR/elsewhere before
  mv "$study_dir/runs" "$elsewhere"
  ln -s "$elsewhere" "$study_dir/runs"
  before=$(listing "$elsewhere")
  hpc_test_squeue_like_slurm ''
  run --separate-stderr bash "$submitter" resubmit probe --failed </dev/null
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: $study_dir/runs is a symbolic link: a study's runs are never followed; nothing was submitted"
  assert_equal "$(calls sbatch)" 0
  assert_equal "$(listing "$elsewhere")" "$before"
}

@test "resubmit --failed of a study whose report job's plan file others can write (a group member appended code): refused with one line naming it, nothing left submitted, no new plan file (its text was copied into a new 0600 file that the job would trust)" {
  submitted_study
  local plan plans_before
  plan=$(sed -n 's/^hpc_job_main //p' "$study_dir/report.sh")
  plan=${plan//\\ / }
  [[ -f $plan ]] || fail "no plan file of the report job: $plan"
  printf 'touch %q\n' "$BATS_TEST_TMPDIR/ran" >>"$plan"
  chmod 664 "$plan"
  plans_before=$(find "$outputs" -name '*.plan' | sort)
  hpc_test_squeue_like_slurm ''
  # New job ids, not the study's own (the stub counts from 4242 again).
  HPC_STUB_JOB_ID=5000 run --separate-stderr bash "$submitter" resubmit probe --failed </dev/null
  assert_equal "$status" 1
  [[ $stderr == *"the plan file '$plan' of the report job 4242 can be changed by others (mode 664): not read; the resubmission (jobs 5000) was cancelled" ]] || fail "$stderr"
  assert_equal "$(find "$outputs" -name '*.plan' | sort)" "$plans_before"
}

@test "resubmit --failed of a study undone (scontrol release failed): study.json is as it was, so the next resubmit --failed works; the same for a map's manifest.json" {
  submitted_study
  local record
  record=$(<"$study_dir/study.json")
  HPC_STUB_LIVE_IDS='' HPC_STUB_RELEASE=fail run --separate-stderr bash "$submitter" resubmit probe --failed </dev/null
  assert_equal "$status" 1
  [[ $stderr == *"scontrol release 4242 failed: "*"; the resubmission (jobs 4242 4243) was cancelled" ]] || fail "$stderr"
  assert_equal "$(<"$study_dir/study.json")" "$record"
  HPC_STUB_LIVE_IDS='' run --separate-stderr bash "$submitter" resubmit probe --failed </dev/null
  assert_success
  assert_line --index 0 "Resubmitted run(s) 1x2-r1 of study ${study_dir##*/} as job(s) 4244"
  # A map.
  rm -f "$stub_log"/*
  HPC_STUB_MAX_ARRAY_SIZE=1001 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-1 --gather "python -c pass" \
    -e relmap </dev/null
  assert_success
  local map_dir
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$output")
  mkdir -p "$map_dir/tasks/1"
  printf '{"index": 1, "array_job_id": "4242", "task_id": "1", "state": "FAILED", "exit_code": 1, "attempt": 1}\n' \
    >"$map_dir/tasks/1/status.json"
  record=$(<"$map_dir/manifest.json")
  HPC_STUB_MAX_ARRAY_SIZE=1001 HPC_STUB_LIVE_IDS='' HPC_STUB_RELEASE=fail run --separate-stderr \
    bash "$submitter" resubmit relmap --failed </dev/null
  assert_equal "$status" 1
  assert_equal "$(<"$map_dir/manifest.json")" "$record"
}
