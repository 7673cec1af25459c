#!/usr/bin/env bats
# -W accelerate (hpc_files/lib/launchers/accelerate.bash) without SLURM: its ratios at
# submission, the refusals it shares with torchrun, and the command each node's task runs.
# Set by hpc_job.bash and the launcher, whose sources shellcheck does not follow here; declared
# for shellcheck.
declare -g hpc_job_rank_lines_code hpc_launcher_argv hpc_launcher_srun hpc_launcher_accelerate_code

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  # shellcheck source=/dev/null # hpc_job.bash is linted on its own (tests/run.sh)
  source "$HPC_ROOT/hpc_files/lib/hpc_job.bash"
  source "$HPC_ROOT/hpc_files/lib/hpc_options.bash"
  source "$HPC_ROOT/hpc_files/lib/hpc_plan.bash"
  # shellcheck disable=SC2034 # read by hpc_common.bash's messages
  hpc_program=job_submitter.sh
  # Its boot code, which the expected commands name.
  hpc_launcher_load accelerate
}

# plan NODES GPUS CPUS WORD...: the accelerate launcher's plan for a job of NODES x GPUS with
# -c CPUS and the configs command WORD...; prints 'TASKS_PER_NODE CPUS_PER_TASK NUM_PROCESSES'.
plan() {
  # shellcheck disable=SC2034 # read by the launcher's plan
  hpc_plan_launcher=accelerate hpc_plan_nodes=$1 hpc_plan_gpus=$2 hpc_plan_cpus=$3 hpc_opt_label_ranks=0
  shift 3
  hpc_configs_words=("$@")
  hpc_launcher_load accelerate
  hpc_launcher_accelerate_plan
  hpc_plan_processes
  printf '%s %s %s\n' "$hpc_plan_ntasks_per_node" "$hpc_plan_cpus_per_task" "$hpc_plan_num_processes"
}

# task NODE_ID NODES GPUS LABEL ARGV...: the command the task on node NODE_ID runs for ARGV (the
# expanded configs command) in the venv, one word per line.
task() {
  export SLURM_NODEID=$1 SLURM_JOB_NUM_NODES=$2 MASTER_ADDR=n1 MASTER_PORT=23456
  # The job's plan, as its plan file sets it.
  # shellcheck disable=SC2034 # read by the launcher and the runner
  hpc_plan_gpus=$3 hpc_plan_label_ranks=$4 hpc_plan_num_processes=$(($2 * $3)) hpc_plan_runner=venv
  shift 4
  hpc_launcher_load accelerate
  hpc_runner_load venv
  hpc_launcher_accelerate_task "$@"
  printf '%s\n' "${hpc_launcher_argv[@]}"
}

@test "accelerate ratios: one task per node with -c CPUs per GPU; num_processes is nodes x GPUs" {
  run plan 2 2 3 python train.py --lr 1
  assert_success
  assert_output "1 6 4"
  run plan 1 1 2 python3.11 -m pkg.train
  assert_success
  assert_output "1 2 1"
  run plan 4 3 1 /usr/bin/python train.py
  assert_output "1 3 12"
}

@test "accelerate refusals: 0 GPUs, a command that is not python: exit 2, one line naming the option" {
  run --separate-stderr plan 2 0 2 python train.py
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: -g/--gpus: 0 GPUs cannot be used with -W accelerate, which starts one process per GPU; accepted: 1 or more, or no -W"
  run --separate-stderr plan 2 2 2 bash run.sh
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: -W/--which-distributed: with -W accelerate the command must start with python; the configs file's starts with 'bash'"
}

@test "accelerate and torchrun refuse a launcher in the command (python -m accelerate.commands.launch, -m torch.distributed.run): exit 2, one line" {
  # A launcher inside the launcher: every process would start its own processes at the job's
  # one rendezvous port, and the job would hang to its time limit.
  run --separate-stderr plan 1 2 2 python -m accelerate.commands.launch train.py
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: -W/--which-distributed: with -W accelerate the command must not start a launcher itself (python -m accelerate.commands.launch); -W accelerate starts it: write the program's own command (python train.py)"
  run --separate-stderr plan 1 2 2 python3 -u -m torch.distributed.run train.py
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: -W/--which-distributed: with -W accelerate the command must not start a launcher itself (python -m torch.distributed.run); -W accelerate starts it: write the program's own command (python train.py)"
  run --separate-stderr plan 1 2 2 python -maccelerate train.py
  assert_equal "$status" 2
  [[ $stderr == *"must not start a launcher itself (python -m accelerate)"* ]] || fail "not refused: $stderr"
  hpc_plan_launcher=torchrun hpc_plan_gpus=2 hpc_configs_words=(python -m torch.distributed.launch x.py)
  run --separate-stderr hpc_plan_check_gpus_python
  assert_equal "$status" 2
  [[ $stderr == *"with -W torchrun the command must not start a launcher itself (python -m torch.distributed.launch)"* ]] || fail "not refused: $stderr"
  # The program's own -m and an argument named like a launcher stay accepted.
  run --separate-stderr plan 1 2 2 python -m mypkg.train --launcher accelerate
  assert_equal "$status" 0
  assert_equal "$output" "1 4 2"
}

@test "launcher refusal: only launcher modules (accelerate's CLI and launch, torch's run and launch); accelerate's other modules run" {
  local mod
  for mod in accelerate accelerate.commands.accelerate_cli accelerate.commands.launch torch.distributed.run torch.distributed.launch; do
    run --separate-stderr plan 1 2 2 python -m "$mod" train.py
    assert_equal "$status" 2
    [[ $stderr == *"must not start a launcher itself (python -m $mod)"* ]] || fail "$mod not refused: $stderr"
  done
  # Accelerate's own test script, and any module of the package that is not a launcher.
  for mod in accelerate.test_utils.scripts.test_script accelerate.utils torch.distributed.elastic_demo accelerate_cli; do
    run --separate-stderr plan 1 2 2 python -m "$mod"
    assert_equal "$status" 0
    assert_equal "$output" "1 4 2"
  done
}

@test "accelerate task, 2 nodes x 2 GPUs: accelerate launch with the node's rank, the first node's address and the job's port" {
  run task 1 2 2 0 python train.py --lr 1
  assert_success
  local want
  want=$(printf '%s\n' python -c "$hpc_launcher_accelerate_code" --multi_gpu --num_machines 2 --machine_rank 1 \
    --num_processes 4 --main_process_ip n1 --main_process_port 23456 --same_network \
    --no_python bash -c "$hpc_job_rank_lines_code" hpc_rank_lines - python train.py --lr 1)
  assert_output "$want"
}

@test "accelerate task: python -m and python's own options run as written; --label-ranks labels each process" {
  run task 0 2 1 1 python3 -u -m pkg.train --epochs 2
  assert_success
  local want
  want=$(printf '%s\n' python3 -c "$hpc_launcher_accelerate_code" --multi_gpu --num_machines 2 --machine_rank 0 \
    --num_processes 2 --main_process_ip n1 --main_process_port 23456 --same_network \
    --no_python bash -c "$hpc_job_rank_lines_code" hpc_rank_lines rank python3 -u -m pkg.train --epochs 2)
  assert_output "$want"
}

@test "accelerate task, 1 node x 1 GPU: one process, without --multi_gpu (which accelerate refuses for one)" {
  run task 0 1 1 0 python train.py
  assert_success
  local want
  want=$(printf '%s\n' python -c "$hpc_launcher_accelerate_code" --num_machines 1 --machine_rank 0 \
    --num_processes 1 --main_process_ip n1 --main_process_port 23456 \
    --no_python bash -c "$hpc_job_rank_lines_code" hpc_rank_lines - python train.py)
  assert_output "$want"
}

# boot NODES_GPUS_ARGS...: runs the launcher's boot code (hpc_launcher_accelerate_code) with
# ARGS, against a torch whose cuda.is_available() says $CUDA and an accelerate whose launch
# module prints what it was given: argv and ACCELERATE_USE_CPU.
boot() {
  local fake=$BATS_TEST_TMPDIR/fake
  mkdir -p "$fake/torch" "$fake/accelerate/commands"
  printf 'class cuda:\n    @staticmethod\n    def is_available():\n        return %s\n' "$CUDA" >"$fake/torch/__init__.py"
  : >"$fake/accelerate/__init__.py"
  : >"$fake/accelerate/commands/__init__.py"
  printf '%s\n' 'import os, sys' 'print("LAUNCH", __name__, os.environ.get("ACCELERATE_USE_CPU"), *sys.argv[1:])' \
    >"$fake/accelerate/commands/launch.py"
  cat >>"$fake/accelerate/commands/launch.py" <<'PY'
# A worker as the elastic agent starts it (the launch's environment, its rank and world), that
# runs $WORKER; then where the hook lay, for the test to see it removed.
import subprocess
if os.environ.get("WORKER"):
    env = {**os.environ, "WORLD_SIZE": "4", "RANK": "0", "LOCAL_RANK": "0"}
    done = subprocess.run([sys.executable, "-c", os.environ["WORKER"]], env=env)
    print("WORKER", done.returncode)
    print("HOOK", os.environ["PYTHONPATH"].split(os.pathsep)[0])
PY
  printf '%s\n' 'class PartialState:' '    _shared_state = {}' >"$fake/accelerate/state.py"
  hpc_launcher_load accelerate
  SLURMD_NODENAME=n7 PYTHONPATH=$fake${USER_PATH:+:$USER_PATH} python3 -c "$hpc_launcher_accelerate_code" "$@"
}

# boot_with DIR ARGS...: boot with DIR after the fake modules on PYTHONPATH.
boot_with() {
  USER_PATH=$1 boot "${@:2}"
}

@test "accelerate boot: torch without CUDA and several processes: ACCELERATE_USE_CPU=true (one multi-CPU world over gloo), one line saying so; with CUDA or one process: as given" {
  local -a args=(--multi_gpu --num_machines 2 --machine_rank 1 --num_processes 4 --no_python bash -c 'x' --multi_gpu)
  CUDA=False run --separate-stderr boot "${args[@]}"
  assert_success
  assert_output "LAUNCH __main__ true ${args[*]}"
  assert_equal "$stderr" "[hpc n7] torch sees no CUDA device on n7: Accelerate runs its 4 processes on CPUs (gloo)"
  ACCELERATE_USE_CPU=no CUDA=True run --separate-stderr boot "${args[@]}"
  assert_output "LAUNCH __main__ no ${args[*]}"
  assert_equal "$stderr" ""
  # One process: accelerate's simple launcher runs it alone, as it should (world 1).
  CUDA=False run --separate-stderr boot --num_machines 1 --machine_rank 0 --num_processes 1 --no_python python t.py
  assert_output "LAUNCH __main__ None --num_machines 1 --machine_rank 0 --num_processes 1 --no_python python t.py"
  assert_equal "$stderr" ""
}

@test "accelerate boot, torch without CUDA: a worker whose Accelerate ran alone (world 1 of 4) exits 1 with one line; one in the world exits 0; the user's sitecustomize still runs; the hook is removed" {
  local -a args=(--multi_gpu --num_machines 1 --machine_rank 0 --num_processes 4 --no_python x)
  # The program's own sitecustomize, on its PYTHONPATH: it must still run in each worker.
  mkdir -p "$BATS_TEST_TMPDIR/user"
  printf '%s\n' 'print("USER SITE")' >"$BATS_TEST_TMPDIR/user/sitecustomize.py"
  local alone='import accelerate.state as s; s.PartialState._shared_state.update(num_processes=1, distributed_type="DistributedType.NO"); print("RAN")'
  WORKER=$alone CUDA=False run --separate-stderr boot_with "$BATS_TEST_TMPDIR/user" "${args[@]}"
  assert_success
  assert_line 'RAN'
  assert_line 'WORKER 1'
  assert_equal "$(grep -c '^USER SITE$' <<<"$output")" 2
  assert_equal "$(sed -n 2p <<<"$stderr")" "[hpc n7] Accelerate ran this process alone (DistributedType.NO, 1 process), not in the job's world of 4: torch sees no CUDA device here; make Accelerate's state with Accelerator() or PartialState(cpu=True); failing the job"
  assert_equal "$(wc -l <<<"$stderr")" 2
  local hook
  hook=$(sed -n 's/^HOOK //p' <<<"$output")
  [[ -n $hook && ! -e $hook ]] || fail "the hook folder stayed or was not made: '$hook'"
  # Every process in the world, or a program without Accelerate: as the program ends.
  local world='import accelerate.state as s, sys; s.PartialState._shared_state.update(num_processes=4); sys.exit(3)'
  WORKER=$world CUDA=False run --separate-stderr boot_with "$BATS_TEST_TMPDIR/user" "${args[@]}"
  assert_line 'WORKER 3'
  WORKER='print("plain")' CUDA=False run --separate-stderr boot_with "$BATS_TEST_TMPDIR/user" "${args[@]}"
  assert_line 'WORKER 0'
  # With CUDA, nothing is added: the worker ends as it would.
  WORKER=$alone CUDA=True run --separate-stderr boot_with "$BATS_TEST_TMPDIR/user" "${args[@]}"
  assert_line 'WORKER 0'
  assert_equal "$stderr" ""
}

@test "accelerate: -W accepts it, --help describes it, its task reads the workers' first failure" {
  run --separate-stderr bash "$HPC_ROOT/hpc_files/job_submitter.sh" --help
  assert_success
  assert_line "                             accelerate: one 'accelerate launch' per node (Hugging Face Accelerate),"
  hpc_launcher_list
  [[ " ${hpc_launcher_names[*]} " == *" accelerate "* ]] || fail "not among the launchers: ${hpc_launcher_names[*]}"
  hpc_launcher_load accelerate
  hpc_launcher_accelerate_workers
  SLURM_JOB_NUM_NODES=3 hpc_launcher_accelerate_srun
  assert_equal "${hpc_launcher_srun[*]}" "--ntasks=3 --ntasks-per-node=1 --kill-on-bad-exit=1"
}

@test "accelerate boot, torch without CUDA, no sitecustomize of the program's own: the hook says nothing (no 'Error in sitecustomize'), and still fails a worker that ran alone" {
  local -a args=(--multi_gpu --num_machines 1 --machine_rank 0 --num_processes 4 --no_python x)
  local world='import accelerate.state as s; s.PartialState._shared_state.update(num_processes=4); print("RAN")'
  WORKER=$world CUDA=False run --separate-stderr boot "${args[@]}"
  assert_success
  assert_line 'RAN'
  assert_line 'WORKER 0'
  assert_equal "$stderr" "[hpc n7] torch sees no CUDA device on n7: Accelerate runs its 4 processes on CPUs (gloo)"
  local alone='import accelerate.state as s; s.PartialState._shared_state.update(num_processes=1, distributed_type="DistributedType.NO"); print("RAN")'
  WORKER=$alone CUDA=False run --separate-stderr boot "${args[@]}"
  assert_line 'WORKER 1'
  assert_equal "$(sed -n 2p <<<"$stderr")" "[hpc n7] Accelerate ran this process alone (DistributedType.NO, 1 process), not in the job's world of 4: torch sees no CUDA device here; make Accelerate's state with Accelerator() or PartialState(cpu=True); failing the job"
  assert_equal "$(wc -l <<<"$stderr")" 2
}
