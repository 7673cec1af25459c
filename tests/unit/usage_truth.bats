#!/usr/bin/env bats
# 'usage' and 'stack' against the truth: a wrapper that does not exec its program is not counted
# twice (its reaped total against /proc's own figures), the job's processes are SLURM's (scontrol
# listpids), not whatever carries the job's id in its environment, a starved request is told
# from an idle one, no advice names what the job already asked for, and py-spy is found where
# Python's packages put it.

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  load '../helpers/stub'
  load '../helpers/usage_fake'
  # shellcheck source=hpc_files/lib/hpc_common.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
  # shellcheck source=hpc_files/lib/hpc_usage.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_usage.bash"
  # shellcheck source=hpc_files/lib/hpc_stack_node.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_stack_node.bash"
  T=$BATS_TEST_TMPDIR
  export SLURMD_NODENAME=n1
  unset SLURM_STEP_ID SLURM_JOB_ID
}

teardown() {
  local pid
  [[ -f $T/pids ]] || return 0
  while read -r pid; do kill "$pid" 2>/dev/null || true; done <"$T/pids"
}

# started PID: PID is killed at the test's end.
started() {
  printf '%s\n' "$1" >>"$T/pids"
}

# ticks PID: PID's CPU time with its reaped children's, in ticks (/proc/PID/stat 14-17: after the
# command's name, whose ') ' is cut, field 3 is the first, so these are the 12th to the 15th).
ticks() {
  local s
  s=$(<"/proc/$1/stat")
  awk '{ print $12 + $13 + $14 + $15 }' <<<"${s##*) }x x x x x x x x x x x x x x x x x"
}

@test "a wrapper that does not exec its program (bash wrap.sh running python): the program's CPU counted once, within 20 % of the wrapper's parent's reaped total" {
  export T
  fake_listpids batch - -
  # shellcheck disable=SC2016 # expanded by the stub's call
  stub scontrol 'listpids 4242 n1 : bash "$T/listpids.sh"' 'listpids 4242 n1 : bash "$T/listpids.sh"'
  # The program burns 1 CPU-s, says so, and stays a while (sampled then): the wrapper reaps it,
  # the job's first process reaps the wrapper and lives on.
  cat >"$T/wrap.sh" <<'EOF'
python3 -c 'import time, pathlib, sys
while time.process_time() < 1.0: pass
pathlib.Path(sys.argv[1]).touch(); time.sleep(1.5)' "$T/burnt"
true
EOF
  # shellcheck disable=SC2016 # expanded by that shell
  env SLURM_JOB_ID=4242 bash -c 'bash "$T/wrap.sh"; touch "$T/wrapped"; exec sleep 60' &
  started $!
  printf '%s\n' "$!" >"$T/root"
  hpc_usage_begin
  wait_for "$T/burnt"
  hpc_usage_scan 4242
  wait_for "$T/wrapped"
  local deadline=$((SECONDS + 60))
  until [[ $(<"/proc/$(<"$T/root")/comm") == sleep ]]; do
    ((SECONDS < deadline)) || fail "the job's first process never went on"
    sleep 0.1
  done
  hpc_usage_scan 4242
  local truth
  truth=$(ticks "$(<"$T/root")")
  ((truth >= 50)) || fail "the program burnt only $truth ticks"
  python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if abs(a - b) <= 0.2 * b else 1)' \
    "$hpc_usage_ticks" "$truth" || fail "counted $hpc_usage_ticks ticks, /proc says $truth"
  unstub scontrol
}

@test "a process outside the job with the job's SLURM_JOB_ID and SLURMD_NODENAME exported: neither counted by the sampler nor shown by stack" {
  export T
  fake_listpids batch - -
  # shellcheck disable=SC2016 # expanded by the stub's call
  stub scontrol 'listpids 4242 n1 : bash "$T/listpids.sh"' 'listpids 4242 n1 : bash "$T/listpids.sh"'
  env SLURM_JOB_ID=4242 SLURMD_NODENAME=n1 python3 -c 'import time, pathlib, sys
pathlib.Path(sys.argv[1]).touch(); time.sleep(60)' "$T/job" &
  started $!
  printf '%s\n' "$!" >"$T/root"
  # The outsider: the job's id and node in its environment, 1 CPU-s burnt and 64 MiB held.
  env SLURM_JOB_ID=4242 SLURMD_NODENAME=n1 python3 -c 'import time, pathlib, sys
b = bytearray(64 << 20)
while time.process_time() < 1.0: pass
pathlib.Path(sys.argv[1]).touch(); time.sleep(60)' "$T/outsider" &
  started $!
  wait_for "$T/job"
  wait_for "$T/outsider"
  hpc_usage_begin
  hpc_usage_scan 4242
  assert_equal "$hpc_usage_members" 1
  ((hpc_usage_rss_kb < 60000)) || fail "resident memory $hpc_usage_rss_kb kB counts the outsider's"
  ((hpc_usage_ticks < 50)) || fail "$hpc_usage_ticks ticks count the outsider's"
  hpc_stack_find 4242
  assert_equal "${hpc_stack_pids[*]}" "$(<"$T/root")"
  assert_equal "${hpc_stack_python[*]}" "$(<"$T/root")"
  unstub scontrol
}

@test "where scontrol cannot list the job's processes, a process is the job's when its cgroup names the job, never by its environment" {
  stub scontrol 'listpids 4242 n1 : exit 1'
  env SLURM_JOB_ID=4242 SLURMD_NODENAME=n1 sleep 60 &
  started $!
  hpc_usage_begin
  hpc_usage_scan 4242
  assert_equal "$hpc_usage_members" 0
  unstub scontrol
}

@test "two busy processes of the job pinned to one CPU: the sampler records how long they waited for it (at least a third of their CPU time)" {
  export T
  fake_listpids batch - -
  # shellcheck disable=SC2016 # expanded by the stub's call
  stub scontrol 'listpids 4242 n1 : bash "$T/listpids.sh"'
  [[ -r /proc/self/schedstat ]] || skip "this kernel records no schedstat"
  # shellcheck disable=SC2016 # expanded by that shell
  taskset -c 0 bash -c 'for i in 1 2; do python3 -c "import os, time, pathlib, sys
while time.process_time() < 1.0: pass
pathlib.Path(sys.argv[1] + \".tmp\").write_text(str(os.getpid())); os.replace(sys.argv[1] + \".tmp\", sys.argv[1])
time.sleep(60)" "$T/burnt$i" & done; wait' &
  started $!
  printf '%s\n' "$!" >"$T/root"
  wait_for "$T/burnt1"
  wait_for "$T/burnt2"
  started "$(<"$T/burnt1")"
  started "$(<"$T/burnt2")"
  hpc_usage_begin
  hpc_usage_scan 4242
  ((hpc_usage_ticks >= 150)) || fail "only $hpc_usage_ticks ticks"
  # Ticks to ns: the wait, in ns, against a third of the CPU time.
  ((hpc_usage_wait_ns * hpc_usage_clock_ticks >= hpc_usage_ticks * 1000000000 / 3)) ||
    fail "waited $hpc_usage_wait_ns ns for $hpc_usage_ticks ticks of CPU"
  unstub scontrol
}

# usage_file FILE KEY=VALUE...: a node's usage file, as the sampler writes it.
usage_file() {
  local file=$1
  shift
  printf '%s\n' "$@" >"$file"
}

@test "a starved request (busy threads that waited for a CPU on an overloaded node) is told from an idle one: no fewer CPUs advised, the load said" {
  # 4 busy threads on -c 4 that used 0.29 CPUs and waited 370 CPU-s in 100 s: starved.
  usage_file "$T/n1" node=n1 start_s=0 now_s=100 cpu_ticks=2900 clock_ticks=100 peak_rss_kb=1024 \
    cpus=4 cpus_per_process=4 mem= time= gpus=0 processes=1 gpu=x load=9.10 host_cpus=2 wait_ms=370000
  run hpc_usage_report "$T/n1"
  assert_success
  refute_output --partial 'would do'
  assert_line --index 1 "usage n1: suggestion; asked 4 CPUs, used 0.29, yet its processes waited 370.0 s for a CPU: starved, not idle (the node was overloaded: load 9.10 on 2 CPUs); no fewer CPUs advised"
  # Overloaded, and no wait recorded (a kernel without schedstat): no advice either.
  usage_file "$T/n2" node=n2 start_s=0 now_s=100 cpu_ticks=2900 clock_ticks=100 peak_rss_kb=1024 \
    cpus=4 cpus_per_process=4 mem= time= gpus=0 processes=1 gpu=x load=9.10 host_cpus=2
  run hpc_usage_report "$T/n2"
  refute_output --partial 'would do'
  assert_line --index 1 "usage n2: suggestion; asked 4 CPUs, used 0.29 while the node was overloaded (load 9.10 on 2 CPUs): its processes may have been starved; no fewer CPUs advised"
  # Idle on an overloaded node (it seldom waited): the advice stands, counting what it waited.
  usage_file "$T/n3" node=n3 start_s=0 now_s=100 cpu_ticks=2900 clock_ticks=100 peak_rss_kb=1024 \
    cpus=4 cpus_per_process=4 mem= time= gpus=0 processes=1 gpu=x load=9.10 host_cpus=2 wait_ms=20000
  run hpc_usage_report "$T/n3"
  assert_line --index 1 "usage n3: suggestion; asked 4 CPUs, used 0.29: -c 1 would do"
  # Not overloaded: as before.
  usage_file "$T/n4" node=n4 start_s=0 now_s=100 cpu_ticks=2900 clock_ticks=100 peak_rss_kb=1024 \
    cpus=4 cpus_per_process=4 mem= time= gpus=0 processes=1 gpu=x load=0.50 host_cpus=2 wait_ms=100
  run hpc_usage_report "$T/n4"
  assert_line --index 1 "usage n4: suggestion; asked 4 CPUs, used 0.29: -c 1 would do"
}

@test "the advice never names what the job already asked for: -c 1 -g 2 (2 CPUs for one process) that used 0.3" {
  usage_file "$T/n1" node=n1 start_s=0 now_s=100 cpu_ticks=3000 clock_ticks=100 peak_rss_kb=1024 \
    cpus=2 cpus_per_process=1 mem= time= gpus=2 processes=1 gpu=x
  run hpc_usage_report "$T/n1"
  assert_success
  assert_output "usage n1: CPU 0.30 of 2 allocated (15 %, 30.0 CPU-s); peak memory 1 MiB; GPU x; elapsed 100.0 s"
}

@test "the sampler records the node's load and CPUs, the CPU-s its processes waited for a CPU, and the CPUs asked per process" {
  # shellcheck disable=SC2034 # read by hpc_usage_write
  hpc_plan_cpus=3 hpc_plan_cpus_per_task=6 hpc_plan_ntasks_per_node=1 hpc_plan_num_processes=2 hpc_plan_nodes=1
  stub scontrol 'listpids 4242 n1 : exit 1'
  hpc_usage_begin
  hpc_usage_scan 4242
  hpc_usage_write "$T/n1"
  hpc_usage_read "$T/n1"
  assert_equal "${hpc_usage[cpus_per_process]}" 3
  assert_equal "${hpc_usage[host_cpus]}" "$(getconf _NPROCESSORS_ONLN)"
  [[ ${hpc_usage[load]} =~ ^[0-9]+\.[0-9]{2}$ ]] || fail "load=${hpc_usage[load]}"
  [[ ${hpc_usage[wait_ms]} =~ ^[0-9]+$ ]] || fail "wait_ms=${hpc_usage[wait_ms]}"
  unstub scontrol
}

# fake_py_spy DIR [BINARY]: a py-spy distribution in DIR/site (on PYTHONPATH) whose program is
# DIR/bin/py-spy, made only when BINARY is 1.
fake_py_spy() {
  mkdir -p "$1/site/py_spy-9.9.9.dist-info" "$1/bin"
  printf 'Metadata-Version: 2.1\nName: py-spy\nVersion: 9.9.9\n' >"$1/site/py_spy-9.9.9.dist-info/METADATA"
  printf '../bin/py-spy,,\npy_spy-9.9.9.dist-info/METADATA,,\npy_spy-9.9.9.dist-info/RECORD,,\n' \
    >"$1/site/py_spy-9.9.9.dist-info/RECORD"
  if [[ ${2:-1} == 1 ]]; then
    printf '#!/bin/sh\necho fake py-spy\n' >"$1/bin/py-spy"
    chmod +x "$1/bin/py-spy"
  fi
}

@test "stack finds py-spy where Python's packages put it, not on PATH; where it is really missing the line says what to do" {
  # A Python whose own scripts folder has no py-spy (a venv without pip) is the one on PATH.
  python3 -m venv --without-pip "$T/venv"
  fake_py_spy "$T/a"
  PATH="$T/venv/bin:/usr/bin:/bin" PYTHONPATH="$T/a/site" HOME="$T/home" hpc_stack_py_spy ''
  assert_equal "$hpc_stack_py_spy" "$T/a/bin/py-spy"
  # The package is there, its program is not ("already satisfied"): reinstall it.
  fake_py_spy "$T/b" 0
  # shellcheck disable=SC2016 # expanded by that shell
  run env PATH="$T/venv/bin:/usr/bin:/bin" PYTHONPATH="$T/b/site" HOME="$T/home" \
    bash -c 'source "$1"; source "$2"; hpc_stack_py_spy "" || { echo "$hpc_stack_py_spy_why"; exit 1; }' _ \
    "$HPC_ROOT/hpc_files/lib/hpc_common.bash" "$HPC_ROOT/hpc_files/lib/hpc_stack_node.bash"
  assert_failure
  assert_output --partial "$T/venv/bin/python3 -m pip install --force-reinstall py-spy"
  assert_output --partial "$T/b/site"
}
