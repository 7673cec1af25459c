#!/usr/bin/env bats
# Attacks on the scaling test on the local cluster: a run killed hard (scancel -s KILL: its batch
# shell leaves no final status) is a LOST or CANCELLED row, never a number, and the report job
# still writes the report and ends COMPLETED; a submitter killed while it submits a study leaves
# nothing that status and cancel do not find.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "attack scaling project"
  # The user's program: 1x1 ends at once, 1x2 sleeps until it is killed.
  printf '%s\n' 'import os, time' 'print("config", os.environ["scaling_config"], flush=True)' \
    'time.sleep(1 if os.environ["scaling_config"] == "1x1" else 300)' >"$PROJECT/sleepy.py"
  hpc_warm_venv "$PROJECT" 'python probe.py env' -e warmup
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_configs "$PROJECT" 'python sleepy.py'
}

@test "a run killed hard (scancel -s KILL): its row is LOST or CANCELLED with no number; the report job still writes report.md and ends COMPLETED" {
  local out study_dir report_id start row
  local -a run_ids
  out=$(bash "$PROJECT/hpc_files/job_submitter.sh" -y --scaling-test --scale-gpus 1,2 -e killed 2>&1) || fail "submission failed: $out"
  study_dir=$(sed -n 's/^Folder: //p' <<<"$out")
  report_id=$(sed -n 's/.*report job \([0-9][0-9]*\) after them.*/\1/p' <<<"$out")
  read -r -a run_ids <<<"$(sed -n 's/.*(jobs \([0-9 ]*\)), report job.*/\1/p' <<<"$out")"
  assert_equal "${#run_ids[@]}" 2
  start=$SECONDS
  until grep -qs 'config 1x2' "$study_dir/runs/1x2-r1/job_${run_ids[1]}.out"; do
    ((SECONDS - start < 120)) || fail "run ${run_ids[1]} did not start: $(squeue -h -j "${run_ids[1]}" -o '%T %R')"
    sleep 0.5
  done
  scancel -s KILL "${run_ids[1]}"
  hpc_wait_job "$report_id" 180
  assert_equal "$(hpc_job_state "$report_id")" "COMPLETED 0:0"
  row=$(grep "^[^,]*,1x2," "$study_dir/results.csv")
  [[ $row =~ ^[^,]*,1x2,1,2,2,1,${run_ids[1]},(LOST|CANCELLED), ]] || fail "row: $row"
  [[ $row =~ ,wall_s,, || $row =~ ,samples_per_s,, ]] || fail "the killed run has a number: $row"
  run grep -cE "^\| 1x2 \| 1 \| ${run_ids[1]} \| (LOST|CANCELLED) \|" "$study_dir/report.md"
  assert_output 1
  [[ -s $study_dir/report.md ]]
}

@test "the submitter killed (SIGKILL) at 20 random moments of a scaling study: status EXP names every job each left, cancel EXP leaves none in the queue" {
  hpc_configs "$PROJECT" 'python -c "print(1)"'
  hpc_kill_loop 20 "kstudy$RANDOM-" --scaling-test --scale-gpus 1,2
  hpc_kill_loop_check
}
