#!/usr/bin/env bats
# The usage sampler and a task that ends between two samples (issue 37): an srun task's first
# process (hpc_job_supervise: torchrun's agent, a Lightning rank) is reaped by slurmstepd, which
# is none of the job's, so what its tree used after the sampler's last look was lost (torchrun's
# workers' last 15 s, on a loaded node a third of their CPU). The supervisor leaves its reaped
# total in the job's usage folder as it ends; the sampler counts it instead of the last values.

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  load '../helpers/stub'
  load '../helpers/usage_fake'
  # shellcheck source=hpc_files/lib/hpc_usage.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_usage.bash"
  T=$BATS_TEST_TMPDIR
  export SLURMD_NODENAME=n1 T
  unset SLURM_STEP_ID SLURM_ARRAY_TASK_ID SLURM_ARRAY_JOB_ID
}

teardown() {
  [[ -z ${root:-} ]] || kill "$root" 2>/dev/null || true
}

@test "a task ending between two samples: its worker's CPU after the last sample counted (the supervisor's total)" {
  # The job is the supervisor ($T/root) and its descendants, as SLURM's proctrack lists them.
  fake_listpids 0 0 0
  # shellcheck disable=SC2016 # expanded by the stub's call
  stub scontrol 'listpids 4242 n1 : bash "$T/listpids.sh"' 'listpids 4242 n1 : bash "$T/listpids.sh"'
  local dir=$T/scratch/hpc_outputs/usage/4242
  mkdir -p "$dir"
  chmod 700 "$T/scratch/hpc_outputs" "$T/scratch/hpc_outputs/usage" "$dir"
  # The worker: says it started, waits until the sampler has looked once, then burns 1 CPU-s
  # and writes what it used; its agent (a shell that does not exec it) ends with it.
  cat >"$T/worker.py" <<'EOF2'
import os, pathlib, sys, time
t = pathlib.Path(sys.argv[1])
(t / "started").touch()
while not (t / "go").exists():
    time.sleep(0.05)
while time.process_time() < 1.0:
    pass
(t / "own").write_text(str(time.process_time()))
EOF2
  # shellcheck disable=SC2016 # expanded by that shell
  env SLURM_JOB_ID=4242 scratch_dir="$T/scratch" hpc_plan_launcher=none HPC_WARNING_SIGNAL=USR1 \
    bash -c 'echo $$ >"$T/root"; source "$HPC_ROOT/hpc_files/lib/hpc_job.bash"
      hpc_job_supervise bash -c "python3 \"\$T/worker.py\" \"\$T\"; true"' &
  root=$!
  wait_for "$T/started"
  cd "$dir"
  hpc_usage_begin
  hpc_usage_scan 4242
  touch "$T/go"
  wait "$root"
  root=''
  hpc_usage_scan 4242
  local own
  own=$(<"$T/own")
  # Ticks against the worker's own CPU-s (the shells' few ticks on top).
  python3 -c 'import sys; t, hz, own = map(float, sys.argv[1:]); sys.exit(0 if abs(t / hz - own) <= 0.2 * own else 1)' \
    "$hpc_usage_ticks" "$hpc_usage_clock_ticks" "$own" ||
    fail "counted $hpc_usage_ticks ticks at $hpc_usage_clock_ticks a second, the worker's own $own CPU-s"
  unstub scontrol
}
