#!/usr/bin/env bats
# A new user's first hour (issue 29), replayed on a fresh project, in order: the cluster's own
# 'env' line (not the helpers' exports), install.sh, the user's own small programs
# (tests/fixtures/journey: plain print, the system's torch, no requirements.txt), submissions
# from PROJECT/hpc_files as the README does, with no terminal (stdin /dev/null) and no -y: the
# submitter must submit without asking. Each test builds on the ones before (the ids it needs
# are kept in files); the last one lowers this cluster's MinJobAge, restored in teardown_file.
# shellcheck disable=SC2016 # configs lines are single-quoted on purpose

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_cluster_require
  # The user's shell: only what the cluster's own env line sets.
  unset HPC_CLUSTER SLURM_CONF
  local line
  line=$(bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$HPC_CLUSTER_DIR" --port-base "${HPC_CLUSTER_PORT_BASE:-17817}" env) ||
    fail "local_cluster.sh env failed: $line"
  eval "$line"
  [[ ${HPC_CLUSTER:-} == local ]] || fail "the env line did not set HPC_CLUSTER=local: $line"
  [[ ${SLURM_CONF:-} == "$HPC_CLUSTER_DIR/etc/slurm.conf" ]] || fail "the env line did not set SLURM_CONF to this cluster's: $line"
  export PROJECT="$BATS_FILE_TMPDIR/my first project" SCRATCH="$BATS_FILE_TMPDIR/scratch"
  export JOURNEY_STATE=$BATS_FILE_TMPDIR/state
  mkdir -p "$PROJECT" "$SCRATCH" "$JOURNEY_STATE"
  cp "$HPC_ROOT/tests/fixtures/journey/"*.py "$PROJECT/"
  bash "$HPC_ROOT/hpc_files/install.sh" "$PROJECT" >/dev/null || fail "install.sh failed"
}

teardown_file() {
  # Whatever happened: this cluster keeps ended jobs for 600 s again.
  if [[ -n ${SLURM_CONF:-} && -f $SLURM_CONF ]] && ! grep -qx 'MinJobAge=600' "$SLURM_CONF"; then
    sed -i 's/^MinJobAge=.*/MinJobAge=600/' "$SLURM_CONF"
    scontrol reconfigure || true
  fi
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
}

# configs LINE: the user's command, in the project's configs file.
configs() {
  printf '%s\n' "$1" >"$PROJECT/hpc_files/experiment_configurations.txt"
}

# submit ARGS...: job_submitter.sh ARGS from the project's hpc_files, no terminal, no -y; sets
# out, job_id and job_out (an array's: task 0's; empty where the submission prints none, as a
# scaling study); fails the test when it fails or when it asked anything.
submit() {
  out=$(cd "$PROJECT/hpc_files" && bash job_submitter.sh "$@" </dev/null 2>&1) || fail "job_submitter.sh $* failed: $out"
  job_id=$(sed -n 's/^Submitted job \([0-9][0-9]*\).*/\1/p' <<<"$out" | head -n 1)
  job_out=$(sed -n '/^Output: */{s///;s/ (task 0; .*//;p;}' <<<"$out" | head -n 1)
  ! grep -qiE '\[y/n\]|submit\?|proceed\?' <<<"$out" || fail "it asked, with no terminal: $out"
}

# toolkit ARGS...: a command of job_submitter.sh from the project's hpc_files (run's output).
toolkit() {
  cd "$PROJECT/hpc_files" && bash job_submitter.sh "$@" </dev/null
}

@test "1. one node: the program imports the system's torch and prints its version (the first job builds the venv)" {
  configs 'python hello_torch.py'
  submit -e hello
  [[ -n $job_id && -n $job_out ]] || fail "no output file named: $out"
  printf '%s\n' "$job_id" >"$JOURNEY_STATE/hello.id"
  hpc_wait_job "$job_id" 300
  assert_equal "$(hpc_job_state "$job_id")" "COMPLETED 0:0"
  # torch.__version__ is torch/version.py's, read without importing torch (3 CPU-s).
  version=$(python3 -c 'import importlib.util as u, os, runpy
print(runpy.run_path(os.path.join(u.find_spec("torch").submodule_search_locations[0], "version.py"))["__version__"])')
  run grep -cxF "hello from torch $version" "$job_out"
  assert_output 1
}

@test "2. -W torchrun -g 2 -n 2: a tiny all-reduce on 2 nodes x 2 GPUs, 4 ranks' lines" {
  configs 'python allreduce.py'
  submit -W torchrun -g 2 -n 2 -e ddp
  printf '%s\n' "$job_id" >"$JOURNEY_STATE/ddp.id"
  hpc_wait_job "$job_id" 180
  assert_equal "$(hpc_job_state "$job_id")" "COMPLETED 0:0"
  for rank in 0 1 2 3; do
    run grep -cE "^(\[rank $rank\] )?rank $rank/4 on n[12]: sum of ranks = 6$" "$job_out"
    assert_output 1
  done
  # Both nodes took part.
  run grep -oE ' on n[12]:' "$job_out"
  assert_output --partial ' on n1:'
  assert_output --partial ' on n2:'
}

@test "3. --data datasets: a file under \$SCRATCH/<project>/datasets is read from \$SLURM_TMPDIR/datasets" {
  mkdir -p "$SCRATCH/my first project/datasets"
  printf 'hello from my data set\n' >"$SCRATCH/my first project/datasets/greeting.txt"
  configs 'python read_data.py'
  submit -g 0 --data datasets -e staged
  hpc_wait_job "$job_id" 180
  assert_equal "$(hpc_job_state "$job_id")" "COMPLETED 0:0"
  run grep -E '^read from .*/datasets/greeting.txt: hello from my data set$' "$job_out"
  assert_success
  # Read from the node's local disk, not from scratch.
  refute_output --partial "$SCRATCH"
}

@test "4. --map-range 0-2 where item 1 fails; once fixed, resubmit --failed re-runs only it: COMPLETED in status" {
  configs 'python flaky.py ${map_index}'
  submit -g 0 --map-range 0-2 -e items
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$out")
  [[ -d $map_dir ]] || fail "no map folder in: $out"
  hpc_wait_job "$job_id" 180
  run toolkit status items
  assert_line --regexp "^${job_id}_1 +items +[^ ]+ +FAILED +3 "
  # The user fixes item 1, then re-runs what failed.
  touch "$SCRATCH/my first project/fixed"
  run toolkit resubmit items --failed
  assert_success
  rerun_id=$(sed -n 's/^Resubmitted task(s) 1 of map [^ ]* as job \([0-9][0-9]*\) .*/\1/p' <<<"$output")
  [[ -n $rerun_id ]] || fail "no job id in: $output"
  hpc_wait_job "$rerun_id" 180
  assert_equal "$(hpc_job_state "$rerun_id" | cut -d' ' -f1)" COMPLETED
  run python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["state"])' "$map_dir/tasks/1/status.json"
  assert_output COMPLETED
  # The re-run's row; the first attempt's row stays, as it ended.
  run toolkit status items
  assert_success
  assert_line --regexp "^${rerun_id}_1 +items +[^ ]+ +COMPLETED +0 "
  assert_line --regexp "^${job_id}_0 +items +[^ ]+ +COMPLETED +0 "
  assert_line --regexp "^${job_id}_2 +items +[^ ]+ +COMPLETED +0 "
  refute_output --partial UNKNOWN
}

@test "5. --scaling-test --scale-gpus 1,2 -W torchrun with no terminal and no -y: submitted, report COMPLETED, report.md opens with the verdict" {
  configs 'python allreduce.py'
  submit --scaling-test --scale-gpus 1,2 -W torchrun -e study
  study_dir=$(sed -n 's/^Folder: //p' <<<"$out")
  report_id=$(sed -n 's/.*report job \([0-9][0-9]*\) after them.*/\1/p' <<<"$out")
  [[ -n $report_id && -d $study_dir ]] || fail "no report job or study folder in: $out"
  read -r -a run_ids <<<"$(sed -n 's/.*(jobs \([0-9 ]*\)), report job.*/\1/p' <<<"$out")"
  assert_equal "${#run_ids[@]}" 2
  hpc_wait_job "$report_id" 300
  assert_equal "$(hpc_job_state "$report_id")" "COMPLETED 0:0"
  # Both runs succeeded, so the report opens with the verdict (not the failed-baseline notice).
  assert_equal "$(hpc_job_state "${run_ids[0]}")" "COMPLETED 0:0"
  assert_equal "$(hpc_job_state "${run_ids[1]}")" "COMPLETED 0:0"
  run head -n 1 "$study_dir/report.md"
  assert_output --regexp '^\*\*Verdict: '
}

@test "6. --repeat 3: each task's log shows its own seed, the program's and the toolkit's line" {
  configs 'python seeds.py'
  submit -g 0 --repeat 3 -e seeds
  hpc_wait_job "$job_id" 180
  run toolkit logs seeds
  assert_success
  local seed
  for seed in 0 1 2; do
    assert_line "my seed is $seed"
    assert_line --regexp "task variables: seed=$seed( |$)"
  done
  # One seed per task's log.
  [[ $job_out == *_"${job_id}"_0.out ]] || fail "task 0's output is not named: $out"
  for seed in 0 1 2; do
    run grep -E '^my seed is [0-9]+$|task variables: seed=' "${job_out%_0.out}_$seed.out"
    assert_line "my seed is $seed"
    assert_line --regexp "task variables: seed=$seed( |$)"
    assert_equal "${#lines[@]}" 2
  done
}

@test "7. status of jobs SLURM has forgotten (MinJobAge lowered): their state from their logs, never UNKNOWN" {
  local exp id start=$SECONDS
  sed -i 's/^MinJobAge=.*/MinJobAge=2/' "$SLURM_CONF"
  scontrol reconfigure
  # The jobs of steps 1 and 2 (one node; two nodes with torchrun), on which status never ran.
  for exp in hello ddp; do
    id=$(cat "$JOURNEY_STATE/$exp.id")
    while scontrol show job "$id" >/dev/null 2>&1; do
      ((SECONDS - start < 150)) || fail "SLURM still knows job $id after 150 s"
      sleep 2
    done
    run toolkit status "$exp"
    assert_success
    assert_line --regexp "^$id +$exp +[^ ]+ +COMPLETED \(from its log; SLURM has forgotten it\) "
    refute_output --partial UNKNOWN
  done
}
