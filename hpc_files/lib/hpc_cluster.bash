# shellcheck shell=bash
# hpc_cluster.bash: the embedded two-node SLURM cluster behind local_cluster.sh.
# One folder holds everything; daemons are started as daemons with pid files in that folder, and
# stopped only through those pids (after checking the pid still runs the program we started).
# Two configurations (hpc_cluster_configure): 'default' and 'second', which differs where real
# clusters differ (node names, memory, partition, GPU type).

hpc_cluster_configs=(default second)

# hpc_cluster_config_names: the configurations' names, comma-separated, for messages.
hpc_cluster_config_names() {
  local names
  printf -v names '%s, ' "${hpc_cluster_configs[@]}"
  printf '%s\n' "${names%, }"
}

# hpc_cluster_configure CONFIG: sets the node names and what the nodes and partition advertise for
# CONFIG (default|second); returns 1 for any other name.
hpc_cluster_configure() {
  case $1 in
    default)
      hpc_cluster_nodes=(n1 n2)
      # Named nodes that all resolve to loopback (through /etc/hosts).
      hpc_cluster_node_addrs=(127.0.0.1 127.0.0.1)
      hpc_cluster_name=hpclocal hpc_cluster_partition=debug hpc_cluster_partition_is_default=YES
      hpc_cluster_mem_mb=8000 hpc_cluster_gpu_type=
      ;;
    second)
      # Nodes named by their address, as on clusters without node names in DNS; loopback has them
      # all. No default partition: jobs must name it, as on clusters with several.
      hpc_cluster_nodes=(127.0.0.1 127.0.0.2)
      hpc_cluster_node_addrs=(127.0.0.1 127.0.0.2)
      hpc_cluster_name=hpcsecond hpc_cluster_partition=compute hpc_cluster_partition_is_default=NO
      hpc_cluster_mem_mb=4000 hpc_cluster_gpu_type=a100
      ;;
    *) return 1 ;;
  esac
  hpc_cluster_config=$1
}

# hpc_cluster_init DIR PORT_BASE: sets the hpc_cluster_* paths and ports for the cluster in DIR,
# and its configuration as recorded by its last 'up' (hpc_cluster_recorded_config, '' when none;
# the default until hpc_cluster_configure says otherwise).
hpc_cluster_init() {
  hpc_cluster_dir=$1
  hpc_cluster_port_base=$2
  hpc_cluster_conf=$1/etc/slurm.conf
  hpc_cluster_munge_socket=$1/munge/munge.socket
  hpc_cluster_mode_file=$1/etc/tmpdir_mode
  hpc_cluster_config_file=$1/etc/config
  hpc_cluster_started=()
  hpc_cluster_recorded_config=$(cat "$hpc_cluster_config_file" 2>/dev/null) || hpc_cluster_recorded_config=
  hpc_cluster_configure "${hpc_cluster_recorded_config:-default}" || hpc_cluster_configure default
  export SLURM_CONF=$hpc_cluster_conf
}

# hpc_cluster_pidfile DAEMON [NODE]: the pid file of munged, slurmctld or the slurmd of NODE.
hpc_cluster_pidfile() {
  case $1 in
    munged) printf '%s\n' "$hpc_cluster_dir/run/munged.pid" ;;
    slurmctld) printf '%s\n' "$hpc_cluster_dir/run/slurmctld.pid" ;;
    slurmd) printf '%s\n' "$hpc_cluster_dir/run/slurmd-$2.pid" ;;
  esac
}

# hpc_cluster_pid DAEMON [NODE]: prints the pid of that daemon if it runs (its pid file names a
# live process whose program is DAEMON); returns 1 otherwise.
hpc_cluster_pid() {
  local file pid comm
  file=$(hpc_cluster_pidfile "$@")
  [[ -r $file ]] || return 1
  read -r pid <"$file" || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
  [[ $comm == "$1" ]] || return 1
  printf '%s\n' "$pid"
}

# hpc_cluster_install_packages: installs slurm-wlm and munge when missing (root), or says what
# to run (not root).
hpc_cluster_install_packages() {
  local missing=() cmd
  for cmd in slurmctld slurmd munged sbatch; do
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
  done
  ((${#missing[@]} == 0)) && return 0
  if ((EUID != 0)); then
    hpc_die "missing ${missing[*]}; run as root: apt-get install -y slurm-wlm munge"
  fi
  hpc_say "installing slurm-wlm and munge (missing: ${missing[*]})"
  if ! DEBIAN_FRONTEND=noninteractive apt-get update -qq ||
    ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null; then
    hpc_die "apt-get could not install slurm-wlm and munge"
  fi
}

# hpc_cluster_ensure_hosts: makes the node names that are not addresses resolve (to loopback),
# adding them to /etc/hosts.
hpc_cluster_ensure_hosts() {
  local node missing=()
  for node in "${hpc_cluster_nodes[@]}"; do
    # A node named by its address needs no resolving (getent does not know 127.0.0.2).
    [[ $node =~ ^[0-9]+(\.[0-9]+){3}$ ]] && continue
    getent hosts "$node" >/dev/null 2>&1 || missing+=("$node")
  done
  ((${#missing[@]} == 0)) && return 0
  if [[ -w /etc/hosts ]]; then
    printf '127.0.0.1 %s # added by hpc_files/local_cluster.sh\n' "${missing[*]}" >>/etc/hosts
    hpc_say "added '127.0.0.1 ${missing[*]}' to /etc/hosts so the node names resolve"
  else
    hpc_die "node names ${missing[*]} do not resolve; add '127.0.0.1 ${missing[*]}' to /etc/hosts"
  fi
}

# hpc_cluster_write_files: writes slurm.conf, gres.conf, the prolog scripts, the munge key and
# the fake GPU devices. Only called while no daemon of this cluster runs.
hpc_cluster_write_files() {
  local d=$hpc_cluster_dir node i
  mkdir -p "$d"/{etc,munge,run,log,dev} "$d/state/$hpc_cluster_config"
  chmod 755 "$d/munge"
  if [[ ! -s $d/munge/munge.key ]]; then
    (umask 077 && head -c 1024 /dev/urandom >"$d/munge/munge.key")
  fi
  chmod 600 "$d/munge/munge.key"

  for node in "${hpc_cluster_nodes[@]}"; do
    mkdir -p "$d/scratch/$node" "$d/spool/$node"
    chmod 1777 "$d/scratch/$node"
    for i in 0 1; do
      # Slurm's gres plugin needs the File= entries to be character devices; 1,3 is /dev/null's.
      [[ -c $d/dev/$node-gpu$i ]] || { rm -f "$d/dev/$node-gpu$i" && mknod "$d/dev/$node-gpu$i" c 1 3; }
    done
  done

  {
    printf '# Written by hpc_files/local_cluster.sh; rewritten by every "up" while the cluster is down.\n'
    printf 'ClusterName=%s\n' "$hpc_cluster_name"
    printf 'SlurmctldHost=%s(127.0.0.1)\n' "$(hostname -s)"
    printf 'SlurmctldPort=%s\n' "$hpc_cluster_port_base"
    printf 'SlurmdPort=%s\n' "$((hpc_cluster_port_base + 1))"
    printf 'AuthType=auth/munge\nCredType=cred/munge\n'
    printf 'AuthInfo=socket=%s\n' "$hpc_cluster_munge_socket"
    printf 'SlurmUser=root\nSlurmdUser=root\n'
    # One state folder per configuration: slurmctld refuses state saved under another ClusterName.
    printf 'StateSaveLocation=%s/state/%s\n' "$d" "$hpc_cluster_config"
    printf 'SlurmdSpoolDir=%s/spool/%%n\n' "$d"
    printf 'SlurmctldPidFile=%s/run/slurmctld.pid\n' "$d"
    printf 'SlurmdPidFile=%s/run/slurmd-%%n.pid\n' "$d"
    printf 'SlurmctldLogFile=%s/log/slurmctld.log\n' "$d"
    printf 'SlurmdLogFile=%s/log/slurmd-%%n.log\n' "$d"
    printf 'SlurmctldDebug=info\nSlurmdDebug=info\n'
    # No cgroups in a container: track processes by parent pid, bind nothing.
    printf 'ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n'
    printf 'MpiDefault=none\nSwitchType=switch/none\n'
    # No database here: one line per finished job in a text file, and scontrol until MinJobAge.
    printf 'JobCompType=jobcomp/filetxt\nJobCompLoc=%s/log/jobcomp.log\n' "$d"
    printf 'AccountingStorageType=accounting_storage/none\nJobAcctGatherType=jobacct_gather/none\n'
    printf 'DefMemPerCPU=500\n'
    # Clusters beside each other (the test suite runs several) hand out different job ids, so
    # their jobs on this one host derive different MASTER_PORTs (20000 + id % 20000).
    printf 'FirstJobId=%s\n' "$((hpc_cluster_port_base * 10 % 20000 + 1))"
    printf 'MinJobAge=600\nKillWait=10\nInactiveLimit=0\nReturnToService=2\nMaxArraySize=1001\n'
    # Start trivial jobs within about a second of submission.
    printf 'SchedulerType=sched/builtin\n'
    printf 'SchedulerParameters=sched_interval=2,batch_sched_delay=0,sched_min_interval=0\n'
    printf 'SelectType=select/cons_tres\nSelectTypeParameters=CR_Core_Memory\n'
    printf 'GresTypes=gpu\n'
    # Nodes advertise more CPUs and memory than this host has.
    printf 'SlurmdParameters=config_overrides\n'
    printf 'PrologFlags=Alloc\n'
    printf 'Prolog=%s/etc/prolog.sh\nEpilog=%s/etc/epilog.sh\nTaskProlog=%s/etc/task_prolog.sh\n' "$d" "$d" "$d"
    for i in "${!hpc_cluster_nodes[@]}"; do
      printf 'NodeName=%s NodeAddr=%s NodeHostname=%s Port=%s CPUs=4 RealMemory=%s Gres=gpu:%s2 State=UNKNOWN\n' \
        "${hpc_cluster_nodes[i]}" "${hpc_cluster_node_addrs[i]}" "$(hostname -s)" "$(hpc_cluster_port slurmd "$i")" \
        "$hpc_cluster_mem_mb" "${hpc_cluster_gpu_type:+$hpc_cluster_gpu_type:}"
    done
    printf 'PartitionName=%s Nodes=%s Default=%s MaxTime=INFINITE State=UP\n' "$hpc_cluster_partition" "$(
      IFS=,
      printf '%s' "${hpc_cluster_nodes[*]}"
    )" "$hpc_cluster_partition_is_default"
  } >"$d/etc/slurm.conf"

  {
    printf '# Fake GPUs: character devices, one per GPU, per node.\n'
    for node in "${hpc_cluster_nodes[@]}"; do
      printf 'NodeName=%s Name=gpu%s File=%s/dev/%s-gpu[0-1]\n' "$node" \
        "${hpc_cluster_gpu_type:+ Type=$hpc_cluster_gpu_type}" "$d" "$node"
    done
  } >"$d/etc/gres.conf"
  hpc_cluster_write_prologs
}

# hpc_cluster_write_prologs: the Prolog/Epilog (root, every node of a job) and TaskProlog (the
# job's user, every task) that give jobs SLURM_TMPDIR in 'provided' mode, as Alliance clusters do.
hpc_cluster_write_prologs() {
  local d=$hpc_cluster_dir
  cat >"$d/etc/prolog.sh" <<EOF
#!/bin/bash
# Prolog of the local cluster: in 'provided' mode, make this job's SLURM_TMPDIR on this node.
mode=\$(cat '$d/etc/tmpdir_mode' 2>/dev/null) || mode=provided
[[ \$mode == provided ]] || exit 0
tmpdir='$d/scratch/'"\$SLURMD_NODENAME/slurm_tmpdir/job\$SLURM_JOB_ID"
mkdir -p "\$tmpdir" && chown "\$SLURM_JOB_UID" "\$tmpdir" && chmod 700 "\$tmpdir"
EOF
  cat >"$d/etc/epilog.sh" <<EOF
#!/bin/bash
# Epilog of the local cluster: remove the SLURM_TMPDIR the Prolog made, whatever the mode is now.
tmpdir='$d/scratch/'"\$SLURMD_NODENAME/slurm_tmpdir/job\${SLURM_JOB_ID:?}"
[[ -d \$tmpdir && ! -L \$tmpdir ]] && rm -rf -- "\${tmpdir:?}"
exit 0
EOF
  cat >"$d/etc/task_prolog.sh" <<EOF
#!/bin/bash
# TaskProlog of the local cluster: what it prints as 'export X=Y' enters the task's environment.
# (taken literally, quotes and all: the folder has no whitespace, so none are needed)
echo "export HPC_LOCAL_SCRATCH=$d/scratch/\$SLURMD_NODENAME"
tmpdir='$d/scratch/'"\$SLURMD_NODENAME/slurm_tmpdir/job\$SLURM_JOB_ID"
[[ -d \$tmpdir ]] && echo "export SLURM_TMPDIR=\$tmpdir"
exit 0
EOF
  chmod 755 "$d/etc/prolog.sh" "$d/etc/epilog.sh" "$d/etc/task_prolog.sh"
}

# hpc_cluster_log_tail FILE: the last lines of a daemon's log, for failure messages.
hpc_cluster_log_tail() {
  [[ -r $1 ]] || return 0
  printf -- '--- last lines of %s ---\n' "$1" >&2
  tail -n 15 -- "$1" >&2
}

# hpc_cluster_port DAEMON [INDEX]: the port of slurmctld, or of the slurmd of node number INDEX.
hpc_cluster_port() {
  case $1 in
    slurmctld) printf '%s\n' "$hpc_cluster_port_base" ;;
    slurmd) printf '%s\n' "$((hpc_cluster_port_base + 1 + $2))" ;;
  esac
}

# hpc_cluster_port_holder PORT: prints what listens on TCP PORT (program, pid and command line);
# returns 1 when nothing does. Reads /proc, so it needs neither ss nor lsof.
hpc_cluster_port_holder() {
  local hex inode fd pid comm cmdline
  printf -v hex '%04X' "$1"
  # /proc/net/tcp{,6}: local ADDR:PORT in hex, state 0A is LISTEN, field 10 the socket's inode.
  inode=$(awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" { print $10; exit }' /proc/net/tcp /proc/net/tcp6 2>/dev/null) ||
    inode=
  [[ -n $inode ]] || return 1
  # find fails on the fd folders it may not read (pid 1's in a container): not an answer.
  fd=$(find /proc/[0-9]*/fd -lname "socket:\[$inode\]" -print -quit 2>/dev/null || true)
  if [[ -z $fd ]]; then
    printf 'a process this user cannot see\n'
    return 0
  fi
  pid=${fd#/proc/}
  pid=${pid%%/*}
  comm=$(cat "/proc/$pid/comm" 2>/dev/null) || comm='?'
  cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || cmdline=
  printf '%s (pid %s%s)\n' "$comm" "$pid" "${cmdline:+: ${cmdline% }}"
}

# hpc_cluster_check_ports: before anything starts, dies naming each port that a daemon still to be
# started needs and what already listens on it (another cluster, most often).
hpc_cluster_check_ports() {
  local i port holder busy=()
  if ! hpc_cluster_pid slurmctld >/dev/null; then
    port=$(hpc_cluster_port slurmctld)
    if holder=$(hpc_cluster_port_holder "$port"); then
      hpc_say "port $port (slurmctld of this cluster) is in use by $holder"
      busy+=("$port")
    fi
  fi
  for i in "${!hpc_cluster_nodes[@]}"; do
    hpc_cluster_pid slurmd "${hpc_cluster_nodes[i]}" >/dev/null && continue
    port=$(hpc_cluster_port slurmd "$i")
    if holder=$(hpc_cluster_port_holder "$port"); then
      hpc_say "port $port (slurmd ${hpc_cluster_nodes[i]} of this cluster) is in use by $holder"
      busy+=("$port")
    fi
  done
  if ((${#busy[@]})); then
    local msg="port(s) ${busy[*]} in use: nothing was started; choose another --port-base"
    msg+=" (this one: $hpc_cluster_port_base) or stop what holds them"
    hpc_die "$msg"
  fi
}

# hpc_cluster_daemon_log DAEMON [NODE]: the log file of that daemon.
hpc_cluster_daemon_log() {
  case $1 in
    munged) printf '%s\n' "$hpc_cluster_dir/log/munged.log" ;;
    slurmctld) printf '%s\n' "$hpc_cluster_dir/log/slurmctld.log" ;;
    slurmd) printf '%s\n' "$hpc_cluster_dir/log/slurmd-$2.log" ;;
  esac
}

# hpc_cluster_exec_closed COMMAND...: runs COMMAND with only descriptors 0-2 of this shell: a
# daemon that kept another (a test runner's pipe, a caller's lock) would hold it for its life.
hpc_cluster_exec_closed() {
  (
    local fd
    for fd in /proc/"$BASHPID"/fd/*; do
      fd=${fd##*/}
      ((fd > 2)) || continue
      { exec {fd}>&-; } 2>/dev/null || true
    done
    exec "$@"
  )
}

# hpc_cluster_start DAEMON [NODE] -- COMMAND...: runs COMMAND (which daemonizes), recording the
# attempt for hpc_cluster_stop_started, and waits up to 15 s (1 s when COMMAND failed) for the
# daemon's pid file to name a live process; on failure dies with the daemon's log tail.
hpc_cluster_start() {
  local daemon=$1 node='' i tries=150
  shift
  if [[ $1 != -- ]]; then
    node=$1
    shift
  fi
  shift
  hpc_cluster_started+=("$daemon${node:+ $node}")
  hpc_cluster_exec_closed "$@" || tries=10
  for ((i = 0; i < tries; i++)); do
    hpc_cluster_pid "$daemon" ${node:+"$node"} >/dev/null && return 0
    sleep 0.1
  done
  hpc_cluster_log_tail "$(hpc_cluster_daemon_log "$daemon" ${node:+"$node"})"
  hpc_die "$daemon${node:+ $node} did not start"
}

# hpc_cluster_start_daemons: starts whichever of munged, slurmctld and the slurmds is not running.
hpc_cluster_start_daemons() {
  local d=$hpc_cluster_dir node
  if ! hpc_cluster_pid munged >/dev/null; then
    hpc_cluster_start munged -- munged --force --socket="$hpc_cluster_munge_socket" \
      --key-file="$d/munge/munge.key" --pid-file="$(hpc_cluster_pidfile munged)" \
      --log-file="$d/log/munged.log" --seed-file="$d/munge/munged.seed"
  fi
  if ! hpc_cluster_pid slurmctld >/dev/null; then
    hpc_cluster_start slurmctld -- slurmctld -f "$hpc_cluster_conf"
  fi
  for node in "${hpc_cluster_nodes[@]}"; do
    if ! hpc_cluster_pid slurmd "$node" >/dev/null; then
      hpc_cluster_start slurmd "$node" -- slurmd -f "$hpc_cluster_conf" -N "$node"
    fi
  done
}

# hpc_cluster_stop_pids PID...: sends SIGTERM, gives the processes 10 s to exit, then SIGKILL.
hpc_cluster_stop_pids() {
  local i
  (($#)) || return 0
  kill -TERM "$@" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    kill -0 "$@" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$@" 2>/dev/null || true
}

# hpc_cluster_stop_started: after a failed 'up', stops the daemons that this 'up' started (the
# slurm daemons first, munged last), and nothing that ran before it.
hpc_cluster_stop_started() {
  local entry name node pid pids=() munged_pid=''
  ((${#hpc_cluster_started[@]})) || return 0
  for entry in "${hpc_cluster_started[@]}"; do
    read -r name node <<<"$entry"
    pid=$(hpc_cluster_pid "$name" ${node:+"$node"}) || continue
    if [[ $name == munged ]]; then munged_pid=$pid; else pids+=("$pid"); fi
  done
  hpc_cluster_stop_pids ${pids[@]+"${pids[@]}"}
  [[ -z $munged_pid ]] || hpc_cluster_stop_pids "$munged_pid"
  hpc_say "'up' failed: stopped what it had started (${hpc_cluster_started[*]})"
  hpc_cluster_started=()
}

# hpc_cluster_wait_idle: waits up to 30 s until every node is idle, resuming drained or down ones.
hpc_cluster_wait_idle() {
  local i node state ready
  for ((i = 0; i < 300; i++)); do
    ready=1
    for node in "${hpc_cluster_nodes[@]}"; do
      state=$(sinfo -h -N -n "$node" -o '%T' 2>/dev/null | head -n 1) || state=
      case $state in
        idle | mixed | allocated | completing) ;;
        *drain* | down* | fail*)
          ready=0
          scontrol update nodename="$node" state=resume >/dev/null 2>&1 || true
          ;;
        *) ready=0 ;;
      esac
    done
    ((ready)) && return 0
    sleep 0.1
  done
  sinfo -N >&2 || true
  hpc_cluster_log_tail "$hpc_cluster_dir/log/slurmctld.log"
  for node in "${hpc_cluster_nodes[@]}"; do
    hpc_cluster_log_tail "$hpc_cluster_dir/log/slurmd-$node.log"
  done
  hpc_die "the nodes did not become idle within 30 s"
}

# hpc_cluster_up MODE CONFIG: brings the cluster up (idempotent); MODE (provided|emulated|'') sets
# how jobs get SLURM_TMPDIR, CONFIG (default|second|'') the configuration ('' keeps either as it
# is). Checks the ports before starting anything; a failed 'up' stops what it started.
hpc_cluster_up() {
  local mode=$1 config=$2 current
  if ((EUID != 0)); then
    hpc_die "up needs root: slurmd starts jobs as their users and the fake GPUs are device files; run it with sudo"
  fi
  if [[ -n $config && $config != "$hpc_cluster_config" ]]; then
    if hpc_cluster_any_running; then
      local msg="the cluster in $hpc_cluster_dir runs the '$hpc_cluster_config' configuration;"
      msg+=" bring it down first to start '$config'"
      hpc_die "$msg"
    fi
    hpc_cluster_configure "$config"
  fi
  hpc_cluster_install_packages
  hpc_cluster_ensure_hosts
  hpc_cluster_check_ports
  if ! hpc_cluster_pid slurmctld >/dev/null; then
    hpc_cluster_write_files
    printf '%s\n' "$hpc_cluster_config" >"$hpc_cluster_config_file"
  else
    # Read at every job: keeping them current needs no restart.
    hpc_cluster_write_prologs
  fi
  current=$(cat "$hpc_cluster_mode_file" 2>/dev/null) || current=
  mode=${mode:-${current:-provided}}
  if [[ $mode != "$current" ]]; then
    printf '%s\n' "$mode" >"$hpc_cluster_mode_file"
    hpc_say "SLURM_TMPDIR mode: $mode"
  fi
  hpc_trap_exit hpc_cluster_stop_started
  trap 'exit 130' INT
  trap 'exit 143' TERM
  hpc_cluster_start_daemons
  hpc_cluster_wait_idle
  trap - EXIT INT TERM
  hpc_cluster_started=()
  hpc_cluster_print_env
}

# hpc_cluster_print_env: prints the one line a shell needs to use this cluster: SLURM_CONF and
# the profile. The default configuration has its own (HPC_CLUSTER=local: without it the
# submitter would pick the generic one, whose venv does not see the cluster's torch); the second
# stands for a cluster without a profile: generic, and the partition that is not the default.
hpc_cluster_print_env() {
  if [[ $hpc_cluster_config == second ]]; then
    printf 'export SLURM_CONF=%q HPC_CLUSTER=generic SBATCH_PARTITION=%s\n' "$hpc_cluster_conf" "$hpc_cluster_partition"
  else
    printf 'export SLURM_CONF=%q HPC_CLUSTER=local\n' "$hpc_cluster_conf"
  fi
}

# hpc_cluster_any_running: true when munged, slurmctld or a slurmd of this folder's cluster runs.
hpc_cluster_any_running() {
  local node
  hpc_cluster_pid munged >/dev/null && return 0
  hpc_cluster_pid slurmctld >/dev/null && return 0
  for node in "${hpc_cluster_nodes[@]}"; do
    hpc_cluster_pid slurmd "$node" >/dev/null && return 0
  done
  return 1
}

# hpc_cluster_down: stops this cluster's daemons by pid (slurmds, slurmctld, then munged) and waits
# for them to exit; running jobs are killed with their slurmd.
hpc_cluster_down() {
  local name node pid pids=() i
  for node in "${hpc_cluster_nodes[@]}"; do
    pid=$(hpc_cluster_pid slurmd "$node") && pids+=("$pid")
  done
  pid=$(hpc_cluster_pid slurmctld) && pids+=("$pid")
  hpc_cluster_stop_pids ${pids[@]+"${pids[@]}"}
  # Job steps outlive a killed slurmd (slurmstepd is its own process): end those of this cluster.
  # Matched by the whole SLURM_CONF entry: one folder's name may begin another's (c and c2).
  for pid in $(pgrep -f "^slurmstepd: \[" 2>/dev/null); do
    tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$hpc_cluster_conf" &&
      kill -KILL "$pid" 2>/dev/null
  done
  if pid=$(hpc_cluster_pid munged); then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  fi
  for name in slurmctld munged; do
    if hpc_cluster_pid "$name" >/dev/null; then hpc_die "$name is still running"; fi
  done
  for node in "${hpc_cluster_nodes[@]}"; do
    if hpc_cluster_pid slurmd "$node" >/dev/null; then hpc_die "slurmd $node is still running"; fi
  done
  hpc_say "stopped the cluster in $hpc_cluster_dir"
}

# hpc_cluster_status: sinfo of the cluster and one line per daemon; returns 1 when any is down.
hpc_cluster_status() {
  local node pid rc=0 mode
  mode=$(cat "$hpc_cluster_mode_file" 2>/dev/null) || mode=unknown
  printf 'cluster folder: %s (configuration: %s, SLURM_TMPDIR mode: %s)\n' "$hpc_cluster_dir" "$hpc_cluster_config" \
    "$mode"
  if pid=$(hpc_cluster_pid munged); then echo "munged: running (pid $pid)"; else echo "munged: stopped" && rc=1; fi
  if pid=$(hpc_cluster_pid slurmctld); then echo "slurmctld: running (pid $pid)"; else echo "slurmctld: stopped" &&
    rc=1; fi
  for node in "${hpc_cluster_nodes[@]}"; do
    if pid=$(hpc_cluster_pid slurmd "$node"); then echo "slurmd $node: running (pid $pid)"; else echo \
      "slurmd $node: stopped" && rc=1; fi
  done
  if hpc_cluster_pid slurmctld >/dev/null; then sinfo -N -o '%N %P %T %c %m %G' || rc=1; fi
  return "$rc"
}
