#!/usr/bin/env bats
# A scaling study's runs do not disturb each other (hpc_scaling.bash), with the PATH stubs of
# tests/fixtures/submitter/bin (no SLURM): each run has its nodes to itself (--exclusive) unless
# --scale-parallel; where the partition's nodes share one machine, or with --scale-serial, runs
# go one after another (afterany on the run before), repeats interleaved; each run starts in a
# folder of its own; without a terminal the study is submitted, not asked about; every job's
# program sees OMP_NUM_THREADS = the CPUs of each of its processes.

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
  unset OMP_NUM_THREADS
}

# nodes_on_hosts HOST...: a sinfo before the stub on PATH that answers the question of the
# partition's nodes and hosts (sinfo -N -o '%N %n') with node nI on HOST I.
nodes_on_hosts() {
  local i=1 host lines=''
  for host in "$@"; do
    lines+="n$i $host"$'\n'
    i=$((i + 1))
  done
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  # shellcheck disable=SC2016 # the stand-in's own $a and $@, expanded when it runs
  printf '%s\n' '#!/usr/bin/env bash' \
    'for a in "$@"; do [[ $a != -N ]] || { printf "%s" "$HPC_TEST_NODE_LINES"; exit 0; }; done' \
    "exec $(printf %q "$fixtures/bin/sinfo") \"\$@\"" >"$BATS_TEST_TMPDIR/bin/sinfo"
  chmod +x "$BATS_TEST_TMPDIR/bin/sinfo"
  export PATH=$BATS_TEST_TMPDIR/bin:$PATH HPC_TEST_NODE_LINES=$lines
}

# run_sbatch_lines [FROM]: per sbatch call (from call FROM on, default 1) that submitted a run
# (a job named *-scale-NxG-rK, not the report), one line 'KEY [--exclusive] [--dependency=...]',
# in the order of the calls. (The stub's job ids count its calls: its log is never emptied.)
run_sbatch_lines() {
  local n=${1:-1} a key extra
  local -a argv
  while [[ -e $stub_log/sbatch.$n.args ]]; do
    mapfile -d '' argv <"$stub_log/sbatch.$n.args"
    key='' extra=''
    for a in "${argv[@]}"; do
      case $a in
        --job-name=*-scale-report) key='' && break ;;
        --job-name=*-scale-*) key=${a##*-scale-} ;;
        --exclusive | --dependency=*) extra+=" $a" ;;
      esac
    done
    [[ -z $key ]] || printf '%s%s\n' "$key" "$extra"
    n=$((n + 1))
  done
}

@test "scaling: nodes on one machine -> runs one after another (afterany on the run before), repeats interleaved, each --exclusive; submitted without a terminal and without -y; study.json says serial" {
  nodes_on_hosts box box box box
  run --separate-stderr bash "$submitter" --scaling-test --scale-gpus 1,2 --repeats 2 -e probe </dev/null
  assert_success
  [[ $stderr != *"Submit?"* ]] || fail "asked without a terminal: $stderr"
  run run_sbatch_lines
  assert_output "1x1-r1 --exclusive
1x2-r1 --exclusive --dependency=afterany:4243
1x1-r2 --exclusive --dependency=afterany:4244
1x2-r2 --exclusive --dependency=afterany:4245"
  local study
  study=$(echo "$outputs"/scaling/probe/*/study.json)
  grep -q '"order": "serial"' "$study" || fail "$(cat "$study")"
  grep -q '"target_efficiency": 70' "$study" || fail "$(cat "$study")"
}

@test "scaling: nodes on machines of their own -> released together, each run --exclusive; --scale-serial chains them; --scale-parallel neither" {
  nodes_on_hosts h1 h2 h3 h4
  run --separate-stderr bash "$submitter" --scaling-test --scale-gpus 1,2 -e a </dev/null
  assert_success
  run run_sbatch_lines
  assert_output "1x1-r1 --exclusive
1x2-r1 --exclusive"
  grep -q '"order": "exclusive"' "$outputs"/scaling/a/*/study.json
  run --separate-stderr bash "$submitter" --scaling-test --scale-gpus 1,2 --scale-serial -e b </dev/null
  assert_success
  run run_sbatch_lines 4
  assert_output "1x1-r1 --exclusive
1x2-r1 --exclusive --dependency=afterany:4246"
  grep -q '"order": "serial"' "$outputs"/scaling/b/*/study.json
  nodes_on_hosts box box
  run --separate-stderr bash "$submitter" --scaling-test --scale-gpus 1,2 --scale-parallel --scale-target-efficiency 80 -e c </dev/null
  assert_success
  run run_sbatch_lines 7
  assert_output "1x1-r1
1x2-r1"
  grep -q '"order": "parallel"' "$outputs"/scaling/c/*/study.json
  grep -q '"target_efficiency": 80' "$outputs"/scaling/c/*/study.json
}

@test "scaling: the dry run shows the order, the runs as a person reads them, each run's own working folder and the worst-case wall time" {
  nodes_on_hosts box box box box
  run --separate-stderr bash "$submitter" --scaling-test --scale-gpus 1,2 --repeats 2 -t 00:10:00 -e probe --dry-run </dev/null
  assert_success
  assert_line --partial "run(s): 1x1, 1x2 (2 repeats each)"
  assert_line --partial "Order: serial (the partition's nodes share one machine)"
  assert_line --regexp "^1\. 1x1-r1: .*--time=00:10:00, job name probe-scale-1x1-r1, .*working folder .*/runs/1x1-r1/work$"
  assert_line --regexp "^2\. 1x2-r1: .*--time=00:10:00, after run 1, .*working folder .*/runs/1x2-r1/work$"
  assert_line --regexp "^3\. 1x1-r2: "
  # Four runs of 10 minutes one after another, then the report's 15.
  assert_line --partial "at most 0:55:00 from the first run to the report's end"
  local workdir="$BATS_TEST_TMPDIR/work dir"
  run --separate-stderr bash "$submitter" --scaling-test --scale-gpus 1,2 --scale-parallel --workdir "$workdir" -t 00:10:00 -e probe --dry-run </dev/null
  assert_success
  assert_line --regexp "^1\. 1x1-r1: .*working folder $workdir/1x1-r1$"
  assert_line --partial "at most 0:25:00 from the first run to the report's end"
}

@test "scaling: --scale-serial with --scale-parallel, a bad --scale-target-efficiency, or the order options without --scaling-test: one line, exit 2, nothing submitted" {
  local -a cases=(
    "--scaling-test --scale-gpus 1,2 --scale-serial --scale-parallel|--scale-serial/--scale-parallel: choose one: runs one after another (--scale-serial) or runs that may share nodes (--scale-parallel); without either, each run has its nodes to itself"
    "--scaling-test --scale-gpus 1,2 --scale-target-efficiency 0|--scale-target-efficiency: '0' is not accepted; accepted: a whole percentage, 1 to 100 (default 70)"
    "--scaling-test --scale-gpus 1,2 --scale-target-efficiency 101|--scale-target-efficiency: '101' is not accepted; accepted: a whole percentage, 1 to 100 (default 70)"
    "--scaling-test --scale-gpus 1,2 --scale-target-efficiency 7o|--scale-target-efficiency: '7o' is not accepted; accepted: a whole percentage, 1 to 100 (default 70)"
    "--scale-parallel|--scale-parallel: is for a scaling test; accepted with --scaling-test"
    "--scale-target-efficiency 50|--scale-target-efficiency: is for a scaling test; accepted with --scaling-test"
  )
  local c
  local -a words
  for c in "${cases[@]}"; do
    read -ra words <<<"${c%%|*}"
    run --separate-stderr bash "$submitter" "${words[@]}" -e probe </dev/null
    assert_equal "$status" 2
    assert_equal "$stderr" "job_submitter.sh: ${c#*|}"
  done
  [[ ! -e $stub_log/sbatch.1.args ]] || fail "submitted"
  [[ ! -e $outputs/scaling ]] || fail "made $outputs/scaling"
}

@test "resubmit --failed of a serial study: the failed runs again one after another" {
  nodes_on_hosts box box box box
  run --separate-stderr bash "$submitter" --scaling-test --scale-gpus 1,2 --repeats 2 -e probe -y </dev/null
  assert_success
  local study_dir key
  study_dir=$(echo "$outputs"/scaling/probe/*-4242)
  for key in 1x1-r1 1x2-r1 1x1-r2 1x2-r2; do
    printf '{"state": "FAILED", "exit_code": 1}\n' >"$study_dir/runs/$key/status.json"
  done
  printf '{"state": "COMPLETED", "exit_code": 0}\n' >"$study_dir/runs/1x1-r1/status.json"
  run --separate-stderr bash "$submitter" resubmit probe --failed </dev/null
  assert_success
  run run_sbatch_lines 6
  assert_output "1x2-r1 --exclusive
1x1-r2 --exclusive --dependency=afterany:4247
1x2-r2 --exclusive --dependency=afterany:4248"
}

@test "OMP_NUM_THREADS: the CPUs of each program process, in the dry run and the job's environment; one exported when submitting wins" {
  run --separate-stderr bash "$submitter" -W torchrun -g 2 -c 3 --dry-run </dev/null
  assert_success
  assert_line "OMP_NUM_THREADS=3"
  run --separate-stderr bash "$submitter" -g 0 -c 5 --dry-run </dev/null
  assert_success
  assert_line "OMP_NUM_THREADS=5"
  run --separate-stderr bash "$submitter" -W lightning -g 2 -c 4 --dry-run </dev/null
  assert_success
  assert_line "OMP_NUM_THREADS=4"
  OMP_NUM_THREADS=7 run --separate-stderr bash "$submitter" -W torchrun -g 2 -c 3 --dry-run </dev/null
  assert_success
  assert_line "OMP_NUM_THREADS=7 (from this shell; the CPUs of each process are 3)"
  refute_line "OMP_NUM_THREADS=3"
}
