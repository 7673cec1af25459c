#!/usr/bin/env bats
# job_submitter.sh end to end on the local cluster: launchers, resources, the program's
# environment and arguments, exit status, concurrent jobs, the venv, both SLURM_TMPDIR modes.
# shellcheck disable=SC2016 # configs lines are single-quoted on purpose: the job expands them
# Set by hpc_run_job or hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out job_state

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "my project"
  # The venv: a copy of the build shared by the bats run (hpc_venv_seed), which the $(...)-path
  # test and the test of the venv's reuse and rebuild copy too (each into a project of its own):
  # one install job for all, not three. That test has its own install job (the rebuild), and the
  # copy carries the stamp an install job wrote.
  hpc_warm_venv "$PROJECT" 'python probe.py env'
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
}

teardown() {
  hpc_cluster_mode provided
}

# probe_lines: the PROBE lines of the job's output, JSON only.
probe_lines() {
  sed -n 's/^PROBE //p' "$job_out"
}

# torchrun_lines_job [reuse]: runs the 2 x 2 torchrun job whose ranks all-reduce, then print 20000
# lines each with plain print() (probe.py ddp lines): the job of the torchrun test below and of
# the plain print() test's torchrun half (its LINE lines and the DDP lines do not mix: whole_lines
# counts lines holding LINE, and no DDP line does). Sets job_id, job_out and job_state, and keeps
# them in the file's folder; with 'reuse', takes the job kept there when there is one.
torchrun_lines_job() {
  local kept=$BATS_FILE_TMPDIR/torchrun_lines.job
  if [[ ${1:-} == reuse && -f $kept ]]; then
    { read -r job_id && read -r job_out && read -r job_state; } <"$kept"
    return 0
  fi
  hpc_configs "$PROJECT" 'python probe.py ddp lines 20000'
  hpc_run_job "$PROJECT" -W torchrun --gpus 2 --num-nodes 2 -e tr
  printf '%s\n%s\n%s\n' "$job_id" "$job_out" "$job_state" >"$kept"
}

@test "torchrun, 2 nodes x 2 GPUs: 4 ranks, world 4, all-reduce 6 everywhere, one torchrun per node" {
  torchrun_lines_job
  assert_equal "$job_state" "COMPLETED 0:0"
  run sed -n 's/^DDP \(rank=[0-9] world=4 sum=6\) .*source=torchrun.*/\1/p' "$job_out"
  assert_equal "$(sort <<<"$output")" "rank=0 world=4 sum=6
rank=1 world=4 sum=6
rank=2 world=4 sum=6
rank=3 world=4 sum=6"
  # Two ranks on each node.
  assert_equal "$(grep -c '^DDP .*node=n1 ' "$job_out")" 2
  assert_equal "$(grep -c '^DDP .*node=n2 ' "$job_out")" 2
  # One torchrun agent per node: each task of the step logs its start once.
  assert_equal "$(grep -c '^\[hpc n1\] starting .*torch.distributed.run' "$job_out")" 1
  assert_equal "$(grep -c '^\[hpc n2\] starting .*torch.distributed.run' "$job_out")" 1
  assert_equal "$(hpc_job_field "$job_id" NumTasks)" 2
}

@test "lightning, 2 nodes x 2 GPUs: srun starts 4 tasks and a real Trainer trains with world size 4" {
  hpc_configs "$PROJECT" "python lightning_train.py --num_nodes \${num_nodes} --devices \${gpus_per_node} \\" \
    '  --steps 3 --run-name "my run"'
  hpc_run_job "$PROJECT" -W lightning --gpus 2 --num-nodes 2 -e lt
  assert_equal "$job_state" "COMPLETED 0:0"
  run sed -n 's/^LIGHTNING //p' "$job_out"
  assert_equal "${#lines[@]}" 4
  for rank in 0 1 2 3; do
    line=$(grep "\"global_rank\": $rank," <<<"$output")
    [[ $line == *'"world_size": 4'* && $line == *'"ntasks": "4"'* && $line == *'"steps": 3'* ]] ||
      fail "rank $rank: $line"
    [[ $line == *'"args": {"devices": 2, "num_nodes": 2, "run_name": "my run", "steps": 3}'* ]] ||
      fail "arguments changed: $line"
  done
  assert_equal "$(grep -c '"node": "n1"' <<<"$output")" 2
  assert_equal "$(grep -c '"node": "n2"' <<<"$output")" 2
}

@test "a standard job gets one task and the CPUs, memory and GRES it should" {
  hpc_configs "$PROJECT" 'python probe.py env'
  hpc_run_job "$PROJECT" --gpus 2 --cpus 2 --mem-per-gpu 512M -e std
  assert_equal "$job_state" "COMPLETED 0:0"
  assert_equal "$(hpc_job_field "$job_id" NumNodes)" 1
  assert_equal "$(hpc_job_field "$job_id" NumTasks)" 1
  assert_equal "$(hpc_job_field "$job_id" NumCPUs)" 4
  assert_equal "$(hpc_job_field "$job_id" MinMemoryNode)" 1G
  assert_equal "$(hpc_job_field "$job_id" TresPerNode)" "gres:gpu:2"
}

@test "the program sees the folders, num_nodes, gpus_per_node and its arguments expanded and whole" {
  hpc_configs "$PROJECT" \
    'python probe.py env "${SLURM_TMPDIR}/data" --exp=${exp_name} "my run" '"'"'$(touch pwned)'"'"' $(touch pwned2) *.py ${UNSET_BUT_DEFAULT:-dflt}'
  hpc_run_job "$PROJECT" -g 0 -e envcheck
  assert_equal "$job_state" "COMPLETED 0:0"
  run probe_lines
  assert_equal "${#lines[@]}" 1
  json=${lines[0]}
  run python3 -c '
import json, sys
seen = json.loads(sys.argv[1])
project, scratch = sys.argv[2], sys.argv[3]
assert seen["source_dir"] == project, seen
assert seen["project_name"] == "my project", seen
assert seen["scratch_dir"] == scratch + "/my project", seen
assert seen["exp_name"] == "envcheck", seen
assert seen["num_nodes"] == "1" and seen["gpus_per_node"] == "0", seen
assert seen["tmpdir_is_dir"], seen
assert seen["VIRTUAL_ENV"].startswith(project + "/.virtual_env_builds/venv-"), seen
tmp = seen["SLURM_TMPDIR"]
assert seen["argv"] == [tmp + "/data", "--exp=envcheck", "my run", "$(touch pwned)", "$(touch pwned2)", "*.py", "dflt"], seen["argv"]
print("ok")' "$json" "$PROJECT" "$SCRATCH"
  assert_output ok
  [ ! -e "$PROJECT/pwned" ] && [ ! -e "$PROJECT/pwned2" ] && [ ! -e pwned ]
  [ -d "$SCRATCH/my project/hpc_outputs" ]
  [ -d "$SCRATCH/my project/envcheck/checkpoints" ]
}

@test "a variable the job does not define fails the job, naming it, before the program starts" {
  hpc_configs "$PROJECT" 'python probe.py env ${NOPE}'
  hpc_run_job "$PROJECT" -g 0 -e nope
  assert_equal "$job_state" "FAILED 1:0"
  run cat "$job_out"
  assert_output --partial "variable NOPE is not set in the job"
  refute_output --partial "PROBE"
}

@test "exit status 3 of the program: FAILED 3 for a standard job and under Lightning's srun" {
  hpc_configs "$PROJECT" 'python probe.py exit 3'
  hpc_run_job "$PROJECT" -g 0 -e exit3
  assert_equal "$job_state" "FAILED 3:0"
  hpc_configs "$PROJECT" 'python probe.py exit 3 1'
  hpc_run_job "$PROJECT" -W lightning --gpus 2 --num-nodes 2 -e exit3l
  assert_equal "$job_state" "FAILED 3:0"
  run grep -c '^EXIT rank=1 code=3' "$job_out"
  assert_output 1
}

@test "a 2-node torchrun job where rank 2 exits 7 ends FAILED 7 (not torchrun's 1); the log names the rank and node" {
  hpc_configs "$PROJECT" 'python probe.py exit 7 2'
  hpc_run_job "$PROJECT" -W torchrun --gpus 2 --num-nodes 2 -e exit7t
  assert_equal "$job_state" "FAILED 7:0"
  run grep -c '^EXIT rank=2 code=7' "$job_out"
  assert_output 1
  # Global rank 2 is local rank 0 of the second node (static rendezvous).
  run grep -E '^\[hpc n2\] torchrun exited with 1: its first failed worker, rank 2 \(local rank 0\) on n2, exited with 7: that is this node.s status$' "$job_out"
  assert_equal "${#lines[@]}" 1
}

@test "two torchrun jobs at once on the same two nodes both finish with all their ranks" {
  hpc_configs "$PROJECT" 'python probe.py ddp'
  hpc_submit_job "$PROJECT" -W torchrun --gpus 1 --num-nodes 2 -e twin1
  first_id=$job_id first_out=$job_out
  hpc_submit_job "$PROJECT" -W torchrun --gpus 1 --num-nodes 2 -e twin2
  second_id=$job_id second_out=$job_out
  hpc_wait_job "$first_id" 180
  hpc_wait_job "$second_id" 180
  assert_equal "$(hpc_job_state "$first_id")" "COMPLETED 0:0"
  assert_equal "$(hpc_job_state "$second_id")" "COMPLETED 0:0"
  assert_equal "$(grep -c '^DDP .*world=2 sum=1 ' "$first_out")" 2
  assert_equal "$(grep -c '^DDP .*world=2 sum=1 ' "$second_out")" 2
  # They overlapped in time, on different ports.
  first_port=$(sed -n 's/^DDP .*port=\([0-9]*\).*/\1/p' "$first_out" | head -n 1)
  second_port=$(sed -n 's/^DDP .*port=\([0-9]*\).*/\1/p' "$second_out" | head -n 1)
  [ "$first_port" != "$second_port" ]
}

@test "the venv is built once, reused, and rebuilt after requirements.txt changes" {
  # A project of its own with the file's build (a copy of the shared one, as PROJECT's): its
  # rebuild is for a requirements.txt that the other tests' project never has, so their jobs
  # run on from the build they started with (no install job of theirs).
  other="$BATS_TEST_TMPDIR/rebuilt project"
  hpc_project_make "$other"
  hpc_configs "$other" 'python probe.py env'
  hpc_venv_seed "$other"
  stamp_before=$(cat "$other/virtual_env/.hpc_deps")
  run bash "$other/hpc_files/job_submitter.sh" -y -g 0 -e reuse
  assert_success
  refute_output --partial "install job"
  # What is asserted is the submission's: its job need not run (nor the rebuilt one's below).
  hpc_cancel_submitted "$output"
  printf '# changed\ntorch==2.13.0\n' >"$other/requirements.txt"
  run bash "$other/hpc_files/job_submitter.sh" -y -g 0 -e rebuilt
  assert_success
  assert_output --partial "requirements.txt changed since"
  assert_output --partial "the virtual environment is ready"
  hpc_cancel_submitted "$output"
  [ "$(cat "$other/virtual_env/.hpc_deps")" != "$stamp_before" ]
}

@test "a venv whose install fails stops the submission, with the install log's path" {
  other="$BATS_TEST_TMPDIR/broken project"
  hpc_project_make "$other"
  printf 'this-package-does-not-exist-anywhere==0.0.0\n' >"$other/requirements.txt"
  hpc_configs "$other" 'python probe.py env'
  run bash "$other/hpc_files/job_submitter.sh" -y -g 0 -e broken
  assert_failure 1
  assert_output --partial "install job"
  assert_line --regexp "failed; nothing was submitted. Its log: .*/venv_install_[0-9]+\.out$"
}

@test "emulated SLURM_TMPDIR: made on both nodes for the job and removed afterwards" {
  hpc_cluster_mode emulated
  hpc_configs "$PROJECT" 'python probe.py env'
  hpc_run_job "$PROJECT" -W lightning --gpus 1 --num-nodes 2 -e emul
  assert_equal "$job_state" "COMPLETED 0:0"
  run probe_lines
  assert_equal "${#lines[@]}" 2
  for node in n1 n2; do
    line=$(grep "\"SLURMD_NODENAME\": \"$node\"" <<<"$output")
    expected=$(sed -n 's/.*"SLURM_TMPDIR": "\([^"]*\)".*/\1/p' <<<"$line")
    [[ $expected =~ ^"$HPC_CLUSTER_DIR/scratch/$node/hpc_tmpdir.$(id -un).$job_id."[0-9a-f]{16}$ && $line == *'"tmpdir_is_dir": true'* ]] || fail "$node: $line"
    [ ! -e "$expected" ]
  done
}

@test "the venv is entered without sourcing bin/activate: a project path holding \$(...) runs nothing" {
  other="$BATS_TEST_TMPDIR/p\$(touch pwned)"
  hpc_project_make "$other"
  hpc_configs "$other" 'python probe.py env'
  # The venv: a copy of the shared build (its install job is another helper's part): start clean
  # after it.
  hpc_venv_seed "$other"
  find "$BATS_TEST_TMPDIR" "$SCRATCH" -name pwned -delete
  hpc_run_job "$other" -g 0 -e venvpath
  assert_equal "$job_state" "COMPLETED 0:0"
  run sed -n 's/^PROBE //p' "$job_out"
  # The job runs from the build its script names (virtual_env is a link to it).
  [[ $output == *"\"VIRTUAL_ENV\": \"$other/.virtual_env_builds/venv-"* ]] || fail "VIRTUAL_ENV: $output"
  run find "$BATS_TEST_TMPDIR" "$SCRATCH" -name pwned
  assert_output ''
}

# whole_lines RANKS N [LABELLED]: every rank 0..RANKS-1 printed its N LINE lines and its
# LINES DONE line whole (with '[rank R] ' in front, same R, when LABELLED), and no line is broken.
whole_lines() {
  local ranks=$1 n=$2 label='' rank broken
  for ((rank = 0; rank < ranks; rank++)); do
    [[ -z ${3:-} ]] || label="\[rank $rank\] "
    assert_equal "$(grep -cE "^${label}LINE rank=$rank i=[0-9]+ x{60}\$" "$job_out")" "$n"
    assert_equal "$(grep -cE "^${label}LINES DONE rank=$rank seconds=[0-9.]+\$" "$job_out")" 1
  done
  # A broken line shows as a line holding LINE that is not one (or lowers a count above); the
  # toolkit's own lines name the command.
  [[ -z ${3:-} ]] || label='\[rank [0-9]+\] '
  broken=$(grep -vE '^\[hpc n[0-9]+\] ' "$job_out" | grep -E 'LINE' | grep -vE "^(${label}LINE rank=[0-9] i=[0-9]+ x{60}|${label}LINES DONE rank=[0-9] seconds=[0-9.]+)\$" || true)
  assert_equal "$broken" ''
}

@test "ranks sharing a node print with plain print(): every line arrives whole (torchrun, lightning)" {
  # torchrun: the torchrun test's job (its ranks print after their all-reduce), or, when that test
  # did not run (a filter), the same job run here.
  torchrun_lines_job reuse
  assert_equal "$job_state" "COMPLETED 0:0"
  whole_lines 4 20000
  hpc_configs "$PROJECT" 'python probe.py lines 20000'
  hpc_run_job "$PROJECT" -W lightning --gpus 2 --num-nodes 2 -e linesl
  assert_equal "$job_state" "COMPLETED 0:0"
  whole_lines 4 20000
}

@test "--label-ranks: each line of rank R starts with '[rank R] ' (torchrun, lightning), stdout and stderr" {
  hpc_configs "$PROJECT" 'python probe.py lines 20000'
  hpc_run_job "$PROJECT" -W torchrun --gpus 2 --num-nodes 2 --label-ranks -e labels
  assert_equal "$job_state" "COMPLETED 0:0"
  whole_lines 4 20000 labelled
  hpc_run_job "$PROJECT" -W lightning --gpus 2 --num-nodes 2 --label-ranks -e labelsl
  assert_equal "$job_state" "COMPLETED 0:0"
  whole_lines 4 20000 labelled
}

@test "torchrun with --label-ranks: the time-limit warning reaches each worker through the wrapper; copy-back whole" {
  hpc_cluster_mode emulated
  hpc_configs "$PROJECT" 'python ckpt.py'
  hpc_submit_job "$PROJECT" -W torchrun --gpus 1 --num-nodes 2 --time 00:05:00 --signal-lead 60 \
    --copy-back checkpoints --label-ranks -e warnedtr
  # Warned once both ranks run (SLURM's own warning would come minutes later; torchrun's real
  # one is real_programs.bats' DDP trainer).
  hpc_wait_output "$job_out" '^\[rank [01]\] START rank=0 ' 120
  hpc_warn_job "$job_id" "$job_out" '^\[rank [01]\] START rank=1 '
  hpc_wait_job "$job_id" 180
  assert_equal "$(hpc_job_state "$job_id")" "COMPLETED 0:0"
  run cat "$job_out"
  # ckpt.py names its rank by SLURM_PROCID (the node here); the label is torchrun's RANK.
  assert_line --regexp '^\[rank [01]\] SIGNAL rank=0 node=n1 signal=SIGUSR1$'
  assert_line --regexp '^\[rank [01]\] SIGNAL rank=1 node=n2 signal=SIGUSR1$'
  final=$(sed -n 's/^\[rank [01]\] FINAL //p' "$job_out")
  [ -n "$final" ]
  assert_equal "$(sha256sum "$SCRATCH/my project/warnedtr/checkpoints/state.bin" | cut -d' ' -f1)" "$final"
  for node in n1 n2; do
    # hpc_tmpdir.<user>.<job id>.<token>: none left.
    run compgen -G "$HPC_CLUSTER_DIR/scratch/$node/hpc_tmpdir.$(id -un).$job_id*"
    assert_output ''
  done
}
