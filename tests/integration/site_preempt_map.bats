#!/usr/bin/env bats
# A map task preempted on the site configuration (local_cluster.sh --config site): a map submitted
# without --requeue, one of its tasks preempted by a job of partition 'high'. The task's program
# (tests/fixtures/map/resumable.py) stops and saves at SLURM's notice and exits 0, as a program
# that stops cleanly does; the task must be re-run (requeued, resumed from its save), never
# counted as done for the stopped run nor as failed, and the gather must find every task done.
# shellcheck disable=SC2016 # configs lines are single-quoted on purpose: the job expands them
bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/site'
  hpc_site_cluster_use
  hpc_test_project "site map project"
  cp "$HPC_ROOT/tests/fixtures/map/"{resumable.py,gather.py} "$PROJECT/"
  hpc_warm_venv "$PROJECT" 'python probe.py exit 0' -e warm
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/site'
  submitter=$PROJECT/hpc_files/job_submitter.sh
  outputs="$SCRATCH/site map project/hpc_outputs"
}

teardown() {
  [[ -z ${high:-} ]] || scancel "$high" 2>/dev/null || true
  [[ -z ${map:-} ]] || scancel "$map" 2>/dev/null || true
}

@test "site: a map task preempted (no --requeue): it stops at the notice, is requeued, resumes and is re-run; its log keeps both runs; the gather finds every task done" {
  hpc_site_lock preempt
  local out gather victim='' log task start
  hpc_configs "$PROJECT" \
    'python resumable.py --index ${map_index} --item "${map_item}" --steps 20 --ckpt ${checkpoints_dir}'
  out=$(bash "$submitter" -y -g 2 --map-range 0-1 --gather 'python gather.py' -e pmap 2>&1) ||
    fail "map submission failed: $out"
  map=$(sed -n 's/^Submitted job \([0-9][0-9]*\).*/\1/p' <<<"$out")
  gather=$(sed -n 's/^Gather job \([0-9][0-9]*\):.*/\1/p' <<<"$out")
  [[ -n $map && -n $gather ]] || fail "no array or gather id in: $out"
  # Both tasks train (one on each node, both GPUs of it), then a job of 'high' takes a GPU.
  for task in 0 1; do
    hpc_site_wait_line "${map}_$task" "$outputs/pmap_venv-none_${map}_$task.out" "^STEP $task 3\$" 240
  done
  high=$(hpc_site_preempt)
  start=$SECONDS
  until [[ -n $victim ]]; do
    for task in 0 1; do
      ! grep -q '^\[hpc n[0-9]\] preempted by a higher-priority job' "$outputs/pmap_venv-none_${map}_$task.out" ||
        victim=$task
    done
    ((SECONDS - start < 120)) || fail "no task of map $map was preempted within 120 s"
    sleep 0.5
  done
  log=$outputs/pmap_venv-none_${map}_$victim.out
  # Run 2 of the preempted task resumes and finishes.
  hpc_site_wait_line "${map}_$victim" "$log" "^DONE index=$victim\$" 300
  hpc_wait_job "$map" 180
  hpc_wait_job "$gather" 180
  run sacct -n -P -X -j "$gather" -o State,ExitCode
  assert_output "COMPLETED|0:0"
  run cat "$(find "$outputs/map/pmap" -name "gather_$gather.out")"
  assert_line --partial "GATHER sum=40 n_ok=2 "
  assert_line "GATHER none_at="
  # The preempted task: two runs in one log, the second from the first's save; every step once.
  run grep -E '^(START|STOPPED|DONE)' "$log"
  assert_line --index 0 "START index=$victim restart=0 from=0"
  assert_line --index 1 --regexp "^STOPPED index=$victim step=[0-9]+\$"
  stopped=${lines[1]##*=}
  assert_line --index 2 "START index=$victim restart=1 from=$stopped"
  assert_line --index 3 "DONE index=$victim"
  assert_equal "${#lines[@]}" 4
  assert_equal "$(sed -n "s/^STEP $victim //p" "$log" | tr '\n' ' ')" "$(seq -s ' ' 1 20) "
  run grep -F '[hpc n' "$log"
  assert_line --regexp '^\[hpc n[0-9]\] made requeueable \(it was submitted without --requeue N\): '
  assert_line --regexp \
    '^\[hpc n[0-9]\] requeueing after the preemption \(restart 1; a preemption does not count against --requeue 0\)$'
  refute_line --partial 'failed'
  # Its status file: the re-run's end, COMPLETED.
  run cat "$(find "$outputs/map/pmap" -path "*/tasks/$victim/status.json")"
  assert_output --partial '"state": "COMPLETED", "exit_code": 0'
  # SLURM's record: the preempted run (requeued by the batch shell, or by SLURM), then the completed one.
  run sacct -n -P -X -D -j "${map}_$victim" -o State
  assert_equal "${#lines[@]}" 2
  assert_line --index 0 --regexp '^(REQUEUED|PREEMPTED)$'
  assert_line --index 1 COMPLETED
}
