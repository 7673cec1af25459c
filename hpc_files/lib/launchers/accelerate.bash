# shellcheck shell=bash
# accelerate.bash: Hugging Face Accelerate's launcher: one task per node, each running
# 'accelerate launch' (python -m accelerate.commands.launch), which starts one process per GPU
# through torch's elastic agent, as torchrun does, with the same rules: node i of the job is
# --machine_rank i, --main_process_ip is MASTER_ADDR (the first node) and --main_process_port
# MASTER_PORT (hpc_job_master: the job's port); the first failed worker's exit code is the
# node's. Where the node's torch has no CUDA device, the same world runs in Accelerate's
# multi-CPU mode over gloo (hpc_launcher_accelerate_code). The interface of a launcher:
# docs/architecture.md.

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_plan.bash: the plan; hpc_job.bash: the rank-lines code.
declare -g hpc_plan_cpus hpc_plan_gpus hpc_plan_label_ranks hpc_plan_num_processes hpc_job_rank_lines_code

# The code each node's launcher runs (python -c CODE LAUNCH-ARGS...): accelerate launch, decided
# on the node, in the runner's python: where its torch has no CUDA device (a CPU-only torch, or a
# node without one), --multi_gpu's processes would each run alone (Accelerate's
# DistributedType.NO, world 1) and the job would still end COMPLETED. ACCELERATE_USE_CPU=true,
# which every worker inherits from the elastic agent, makes their Accelerator (AcceleratorState)
# join the one world of the job over gloo (DistributedType.MULTI_CPU), with the same ranks and
# rendezvous as on GPUs. Accelerate's own --cpu would start one process per node (its simple
# launcher; several need mpirun). One process (no --multi_gpu) runs alone either way.
# A state made without it (PartialState() alone) still runs alone: CHECK, a sitecustomize first
# on the workers' PYTHONPATH (a folder of its own, removed when the launch ends), runs the one it
# shadows (silently when there is none), then at the worker's exit compares the world Accelerate
# saw with WORLD_SIZE, and on a mismatch exits 1 (rank 0 says why in one line), so the job ends FAILED.
hpc_launcher_accelerate_code='import os, runpy, shutil, socket, sys, tempfile
import torch

CHECK = """
import atexit, importlib, os, sys

def _hpc_check():
    world = int(os.environ.get("WORLD_SIZE") or 1)
    state = getattr(sys.modules.get("accelerate.state"), "PartialState", None)
    seen = (getattr(state, "_shared_state", None) or {}).get("num_processes")
    if world < 2 or seen is None or seen == world:
        return
    if os.environ.get("RANK") == "0":
        kind = state._shared_state.get("distributed_type")
        node = os.environ.get("SLURMD_NODENAME", "?")
        print(f"[hpc {node}] Accelerate ran this process alone ({kind}, {seen} process), not in the job\x27s world"
              f" of {world}: torch sees no CUDA device here; make Accelerate\x27s state with Accelerator() or"
              " PartialState(cpu=True); failing the job", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)

atexit.register(_hpc_check)
here = os.path.dirname(os.path.abspath(__file__))
# Python takes this module from sys.modules once it has run (a KeyError, printed as "Error in
# sitecustomize", when it is gone): it is put back unless the one it shadows took the name.
this = sys.modules.pop("sitecustomize")
path = sys.path[:]
sys.path[:] = [p for p in path if os.path.abspath(p or os.curdir) != here]
try:
    importlib.import_module("sitecustomize")
except ImportError as error:
    if error.name != "sitecustomize":
        raise
finally:
    sys.path[:] = path
    sys.modules.setdefault("sitecustomize", this)
"""

args = sys.argv[1:]
hook = None
if args[:1] == ["--multi_gpu"] and not torch.cuda.is_available():
    os.environ["ACCELERATE_USE_CPU"] = "true"
    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]
    count = args[args.index("--num_processes") + 1]
    print(f"[hpc {node}] torch sees no CUDA device on {node}: Accelerate runs its {count} processes on CPUs (gloo)",
          file=sys.stderr, flush=True)
    hook = tempfile.mkdtemp(prefix="hpc_accelerate_", dir=os.environ.get("SLURM_TMPDIR") or None)
    with open(os.path.join(hook, "sitecustomize.py"), "w") as file:
        file.write(CHECK)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (hook, os.environ.get("PYTHONPATH")) if p)
try:
    runpy.run_module("accelerate.commands.launch", run_name="__main__", alter_sys=True)
finally:
    if hook is not None:
        shutil.rmtree(hook, ignore_errors=True)'

# hpc_launcher_accelerate_describe: prints its lines of --help.
hpc_launcher_accelerate_describe() {
  printf '%s\n' "accelerate: one 'accelerate launch' per node (Hugging Face Accelerate)," \
    "which starts one process per GPU, as torchrun does: node i of the job is" \
    "--machine_rank i, --main_process_ip the first node (MASTER_ADDR)," \
    "--main_process_port MASTER_PORT. Where torch has no CUDA device: the same" \
    "world on CPUs (gloo); a process that ran alone fails the job."
}

# hpc_launcher_accelerate_plan: (submission) one task per node with -c CPUs for each of its GPU
# processes; exit 2 without GPUs or without python.
# shellcheck disable=SC2034 # sets the plan's ratios from the plan (hpc_plan.bash)
hpc_launcher_accelerate_plan() {
  hpc_plan_check_gpus_python
  hpc_plan_ntasks_per_node=1
  hpc_plan_cpus_per_task=$((hpc_plan_cpus * hpc_plan_gpus))
}

# hpc_launcher_accelerate_processes: sets hpc_launcher_processes to its processes per node: one
# per GPU.
# shellcheck disable=SC2034 # hpc_launcher_processes: read by hpc_plan.bash; hpc_plan_gpus: the plan's
hpc_launcher_accelerate_processes() {
  hpc_launcher_processes=$hpc_plan_gpus
}

# hpc_launcher_accelerate_srun: (batch shell) one task per node: --ntasks explicitly, since srun
# inherits the job's SLURM_NTASKS; the first failure stops the rest.
# shellcheck disable=SC2034 # hpc_launcher_srun: read by hpc_job.bash
hpc_launcher_accelerate_srun() {
  hpc_launcher_srun=(--ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 --kill-on-bad-exit=1)
}

# hpc_launcher_accelerate_task ARGV...: (a task: one node's launcher) accelerate launch in front
# of the command, all in the runner. --no_python: each process runs the user's command as
# written (python and its options, python -m included) behind the rank-lines wrapper, as
# torchrun's workers do: the processes of a node share one output pipe. --multi_gpu is what
# starts more than one process (accelerate refuses it for one; one process runs alone), first,
# where the boot code (hpc_launcher_accelerate_code) looks for it.
hpc_launcher_accelerate_task() {
  local py=$1 lines_mode=- processes=${hpc_plan_num_processes:?}
  local -a launch=()
  ((processes < 2)) || launch=(--multi_gpu)
  launch+=(--num_machines "$SLURM_JOB_NUM_NODES" --machine_rank "$SLURM_NODEID" --num_processes "$processes"
    --main_process_ip "$MASTER_ADDR" --main_process_port "$MASTER_PORT")
  # Static rendezvous at MASTER_ADDR:MASTER_PORT (torch's --master_addr/--master_port), as torchrun.
  ((SLURM_JOB_NUM_NODES < 2)) || launch+=(--same_network)
  ((hpc_plan_label_ranks == 0)) || lines_mode=rank
  hpc_job_runner_wrap "$py" -c "$hpc_launcher_accelerate_code" "${launch[@]}" \
    --no_python bash -c "$hpc_job_rank_lines_code" hpc_rank_lines "$lines_mode" "$@"
}

# hpc_launcher_accelerate_workers: true: accelerate runs torch's elastic agent, which exits 1
# whatever its workers did; its stderr names the first failed worker (hpc_job_supervise reads it).
hpc_launcher_accelerate_workers() {
  return 0
}
