# shellcheck shell=bash
# hpc_cluster.bash: the embedded two-node SLURM cluster behind local_cluster.sh.
# One folder holds everything; daemons are started as daemons with pid files in that folder, and
# stopped only through those pids (after checking the pid still runs the program we started).
# Three configurations (hpc_cluster_configure): 'default'; 'second', which differs where real
# clusters differ (node names, memory, partition, GPU type); 'site', the default's nodes as real
# sites run them: accounting in slurmdbd on a MariaDB of the folder's own, preemption, QOS limits.

hpc_cluster_configs=(default second site)

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
    default | site)
      # Named nodes that all resolve to loopback (through /etc/hosts). The site has the default's
      # nodes and partition (so the 'local' profile serves), which is preemptible there.
      hpc_cluster_nodes=(n1 n2)
      hpc_cluster_node_addrs=(127.0.0.1 127.0.0.1)
      hpc_cluster_name=hpclocal hpc_cluster_partition=debug hpc_cluster_partition_is_default=YES
      hpc_cluster_mem_mb=8000 hpc_cluster_gpu_type=
      [[ $1 == default ]] || hpc_cluster_name=hpcsite
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

# hpc_cluster_pidfile DAEMON [NODE]: the pid file of munged, mariadbd, slurmdbd, slurmctld or the
# slurmd of NODE.
hpc_cluster_pidfile() {
  case $1 in
    munged | mariadbd | slurmdbd | slurmctld) printf '%s\n' "$hpc_cluster_dir/run/$1.pid" ;;
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

# hpc_cluster_install_packages: installs slurm-wlm and munge when missing (root), and for the
# site configuration slurmdbd, its MySQL plugin and mariadb-server; or says what to run (not root).
# Installing mariadb-server does not start the system's database for us: the cluster runs its own.
hpc_cluster_install_packages() {
  local missing=() cmd packages=(slurm-wlm munge)
  for cmd in slurmctld slurmd munged sbatch; do
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
  done
  if [[ $hpc_cluster_config == site ]]; then
    packages+=(slurmdbd slurm-wlm-mysql-plugin mariadb-server)
    for cmd in slurmdbd mariadbd mariadb-install-db sacctmgr; do
      command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
    done
    compgen -G '/usr/lib/*/slurm-wlm/accounting_storage_mysql.so' >/dev/null ||
      missing+=(accounting_storage_mysql.so)
  fi
  ((${#missing[@]} == 0)) && return 0
  if ((EUID != 0)); then
    hpc_die "missing ${missing[*]}; run as root: apt-get install -y ${packages[*]}"
  fi
  hpc_say "installing ${packages[*]} (missing: ${missing[*]})"
  if ! DEBIAN_FRONTEND=noninteractive apt-get update -qq ||
    ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null; then
    hpc_die "apt-get could not install ${packages[*]}"
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

  hpc_cluster_slurm_conf >"$d/etc/slurm.conf"
  [[ $hpc_cluster_config != site ]] || hpc_cluster_write_slurmdbd_conf

  {
    printf '# Fake GPUs: character devices, one per GPU, per node.\n'
    for node in "${hpc_cluster_nodes[@]}"; do
      printf 'NodeName=%s Name=gpu%s File=%s/dev/%s-gpu[0-1]\n' "$node" \
        "${hpc_cluster_gpu_type:+ Type=$hpc_cluster_gpu_type}" "$d" "$node"
    done
  } >"$d/etc/gres.conf"
  hpc_cluster_write_prologs
}

# hpc_cluster_slurm_conf: prints the cluster's slurm.conf.
hpc_cluster_slurm_conf() {
  local d=$hpc_cluster_dir i nodes
  printf -v nodes '%s,' "${hpc_cluster_nodes[@]}"
  nodes=${nodes%,}
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
  # One line per finished job in a text file; besides, scontrol until MinJobAge, and in the
  # site configuration sacct from slurmdbd.
  printf 'JobCompType=jobcomp/filetxt\nJobCompLoc=%s/log/jobcomp.log\n' "$d"
  if [[ $hpc_cluster_config == site ]]; then
    hpc_cluster_site_conf
  else
    printf 'AccountingStorageType=accounting_storage/none\nJobAcctGatherType=jobacct_gather/none\n'
    printf 'MinJobAge=600\n'
  fi
  printf 'DefMemPerCPU=500\n'
  # Clusters beside each other (the test suite runs several) hand out different job ids, so
  # their jobs on this one host derive different MASTER_PORTs (20000 + id % 12768): the suite's
  # bases (B, B+30, B+50, B+100, B+200) start at least 2,000 ids apart modulo 12768.
  printf 'FirstJobId=%s\n' "$((hpc_cluster_port_base * 211 % 12768 + 1))"
  printf 'KillWait=10\nInactiveLimit=0\nReturnToService=2\nMaxArraySize=1001\n'
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
  printf 'PartitionName=%s Nodes=%s Default=%s MaxTime=INFINITE State=UP%s\n' "$hpc_cluster_partition" "$nodes" \
    "$hpc_cluster_partition_is_default" "$([[ $hpc_cluster_config != site ]] ||
      printf ' PriorityTier=1 PreemptMode=REQUEUE GraceTime=%s' "$hpc_cluster_grace_s")"
  # The site's higher-priority partition over the same nodes: its jobs preempt those of the default.
  [[ $hpc_cluster_config != site ]] ||
    printf 'PartitionName=high Nodes=%s Default=NO MaxTime=INFINITE State=UP PriorityTier=2 PreemptMode=OFF\n' "$nodes"
}

# The site configuration's preemption grace time (the preemptible partition's GraceTime, s), and
# the limits of its QOS 'limited' (per user: jobs submitted, jobs running).
hpc_cluster_grace_s=30
hpc_cluster_qos_max_submit=4 hpc_cluster_qos_max_jobs=2

# hpc_cluster_site_conf: the slurm.conf lines of the site configuration: accounting in slurmdbd
# (enforced: a user needs an association, QOS limits hold), resource use gathered every second
# (sacct's MaxRSS and TotalCPU), a short MinJobAge (the controller forgets a job within about a
# minute and a half, then only sacct knows it), preemption by partition priority with requeue; at
# preemption the job gets its --signal at once (else SIGTERM), then GraceTime, then the end.
hpc_cluster_site_conf() {
  printf 'AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost=localhost\n'
  printf 'AccountingStoragePort=%s\n' "$(hpc_cluster_port slurmdbd)"
  # What reaches slurmdbd signs with munge through this socket (not AuthInfo's, which is for the rest).
  printf 'AccountingStoragePass=%s\n' "$hpc_cluster_munge_socket"
  printf 'AccountingStorageEnforce=associations,limits,qos\n'
  printf 'JobAcctGatherType=jobacct_gather/linux\nJobAcctGatherFrequency=task=1\n'
  printf 'MinJobAge=5\n'
  printf 'PreemptType=preempt/partition_prio\nPreemptMode=REQUEUE\n'
  printf 'SlurmctldParameters=preempt_send_user_signal\n'
}

# hpc_cluster_write_slurmdbd_conf: slurmdbd.conf (beside slurm.conf, where slurmdbd and sacctmgr
# look for it; root's only, as slurmdbd demands). slurmdbd reaches the folder's MariaDB through its
# socket (MYSQL_UNIX_PORT, hpc_cluster_start_accounting) as root, whom the socket authenticates:
# no password anywhere, and the database listens on no port.
hpc_cluster_write_slurmdbd_conf() {
  local d=$hpc_cluster_dir
  (
    umask 077
    {
      printf '# Written by hpc_files/local_cluster.sh; rewritten by every "up" while the cluster is down.\n'
      printf 'AuthType=auth/munge\nAuthInfo=socket=%s\n' "$hpc_cluster_munge_socket"
      printf 'DbdHost=localhost\nDbdAddr=127.0.0.1\nDbdPort=%s\n' "$(hpc_cluster_port slurmdbd)"
      printf 'SlurmUser=root\nDebugLevel=info\n'
      printf 'PidFile=%s\nLogFile=%s/log/slurmdbd.log\n' "$(hpc_cluster_pidfile slurmdbd)" "$d"
      printf 'StorageType=accounting_storage/mysql\nStorageHost=localhost\nStorageUser=root\n'
      printf 'StorageLoc=slurm_acct_db\n'
    } >"$d/etc/slurmdbd.conf"
  )
  chmod 600 "$d/etc/slurmdbd.conf"
}

# hpc_cluster_mariadb_args: the options of the folder's own MariaDB server (also those that
# mariadb-install-db needs to lay out its files): no option file read, its socket in the folder,
# no TCP port, small logs and buffers (a test database), as root.
hpc_cluster_mariadb_args() {
  local d=$hpc_cluster_dir
  printf '%s\n' --no-defaults --datadir="$d/db" --socket="$d/run/mariadb.sock" --skip-networking \
    --user=root --skip-name-resolve --innodb-log-file-size=8M --innodb-buffer-pool-size=64M \
    --innodb-lock-wait-timeout=900
}

# hpc_cluster_start_accounting: the site configuration's MariaDB (its data folder made at the
# first 'up': about two seconds) and slurmdbd, then what slurmdbd must know before slurmctld
# starts: the cluster, the QOS 'limited', the account 'lab' and the associations of root and the
# user who ran sudo (each made once; the database keeps them across 'down' and 'up').
hpc_cluster_start_accounting() {
  local d=$hpc_cluster_dir args i user
  mapfile -t args < <(hpc_cluster_mariadb_args)
  if ! hpc_cluster_pid mariadbd >/dev/null; then
    if [[ ! -d $d/db/mysql ]]; then
      rm -rf -- "${d:?}/db"
      mariadb-install-db "${args[@]}" --skip-test-db --auth-root-authentication-method=socket \
        >"$d/log/mariadb-install.log" 2>&1 || {
        hpc_cluster_log_tail "$d/log/mariadb-install.log"
        hpc_die "mariadb-install-db could not make the database in $d/db"
      }
    fi
    # mariadbd does not daemonize itself: setsid -f does, its output in its log, not on ours.
    # shellcheck disable=SC2016 # expanded by that bash
    hpc_cluster_start mariadbd -- setsid -f bash -c 'exec "$@" </dev/null >>"$0" 2>&1' "$d/log/mariadb.log" \
      mariadbd "${args[@]}" --pid-file="$(hpc_cluster_pidfile mariadbd)" --log-error="$d/log/mariadb.log"
  fi
  if ! hpc_cluster_pid slurmdbd >/dev/null; then
    # Its pid file comes before its socket: wait for the socket too.
    for ((i = 0; i < 150; i++)); do
      [[ -S $d/run/mariadb.sock ]] && break
      sleep 0.1
    done
    MYSQL_UNIX_PORT=$d/run/mariadb.sock hpc_cluster_start slurmdbd -- slurmdbd
  fi
  # slurmdbd answers once its tables exist (seconds at the first 'up').
  for ((i = 0; i < 600; i++)); do
    # Bounded: a client that cannot sign its message retries for minutes.
    timeout 10 sacctmgr -n -P show cluster format=Cluster >"$d/run/clusters" 2>/dev/null && break
    sleep 0.1
  done
  ((i < 600)) || {
    hpc_cluster_log_tail "$d/log/slurmdbd.log"
    hpc_die "slurmdbd did not answer within 60 s"
  }
  grep -qxF "$hpc_cluster_name" "$d/run/clusters" || hpc_cluster_sacctmgr add cluster "$hpc_cluster_name"
  [[ -n $(sacctmgr -n -P show qos limited format=Name) ]] ||
    hpc_cluster_sacctmgr add qos limited MaxSubmitJobsPerUser="$hpc_cluster_qos_max_submit" \
      MaxJobsPerUser="$hpc_cluster_qos_max_jobs"
  [[ -n $(sacctmgr -n -P show account lab format=Account) ]] ||
    hpc_cluster_sacctmgr add account lab Description=lab Organization=lab
  for user in root ${SUDO_USER:+"$SUDO_USER"}; do
    [[ -z $(sacctmgr -n -P show assoc cluster="$hpc_cluster_name" user="$user" account=lab format=User) ]] ||
      continue
    hpc_cluster_sacctmgr add user "$user" Account=lab Cluster="$hpc_cluster_name" QOS=normal,limited \
      DefaultQOS=normal
    # Its jobs go to lab (which may use the QOS 'limited'), not to the account named after it.
    hpc_cluster_sacctmgr modify user where name="$user" set DefaultAccount=lab
  done
}

# hpc_cluster_sacctmgr ARGS...: sacctmgr -i ARGS (no question asked), dying with its answer on failure.
hpc_cluster_sacctmgr() {
  local out
  out=$(sacctmgr -i "$@" 2>&1) || hpc_die "sacctmgr $* failed: $out"
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
    # After both nodes' ports (the site configuration only; its MariaDB has no port).
    slurmdbd) printf '%s\n' "$((hpc_cluster_port_base + 3))" ;;
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
  if [[ $hpc_cluster_config == site ]] && ! hpc_cluster_pid slurmdbd >/dev/null; then
    port=$(hpc_cluster_port slurmdbd)
    if holder=$(hpc_cluster_port_holder "$port"); then
      hpc_say "port $port (slurmdbd of this cluster) is in use by $holder"
      busy+=("$port")
    fi
  fi
  if ((${#busy[@]})); then
    local msg="port(s) ${busy[*]} in use: nothing was started; choose another --port-base"
    msg+=" (this one: $hpc_cluster_port_base) or stop what holds them"
    hpc_die "$msg"
  fi
}

# hpc_cluster_daemon_log DAEMON [NODE]: the log file of that daemon.
hpc_cluster_daemon_log() {
  case $1 in
    munged | slurmdbd | slurmctld) printf '%s\n' "$hpc_cluster_dir/log/$1.log" ;;
    mariadbd) printf '%s\n' "$hpc_cluster_dir/log/mariadb.log" ;;
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

# hpc_cluster_start_daemons: starts whichever of munged, (site: MariaDB and slurmdbd,)
# slurmctld and the slurmds is not running.
hpc_cluster_start_daemons() {
  local d=$hpc_cluster_dir node
  if ! hpc_cluster_pid munged >/dev/null; then
    hpc_cluster_start munged -- munged --force --socket="$hpc_cluster_munge_socket" \
      --key-file="$d/munge/munge.key" --pid-file="$(hpc_cluster_pidfile munged)" \
      --log-file="$d/log/munged.log" --seed-file="$d/munge/munged.seed"
  fi
  [[ $hpc_cluster_config != site ]] || hpc_cluster_start_accounting
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
# slurm daemons first, then MariaDB, munged last), and nothing that ran before it.
hpc_cluster_stop_started() {
  local entry name node pid pids=() munged_pid='' mariadbd_pid=''
  ((${#hpc_cluster_started[@]})) || return 0
  for entry in "${hpc_cluster_started[@]}"; do
    read -r name node <<<"$entry"
    pid=$(hpc_cluster_pid "$name" ${node:+"$node"}) || continue
    case $name in
      munged) munged_pid=$pid ;;
      mariadbd) mariadbd_pid=$pid ;;
      *) pids+=("$pid") ;;
    esac
  done
  hpc_cluster_stop_pids ${pids[@]+"${pids[@]}"}
  [[ -z $mariadbd_pid ]] || hpc_cluster_stop_pids "$mariadbd_pid"
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

# hpc_cluster_any_running: true when one of this folder's cluster's daemons runs.
hpc_cluster_any_running() {
  local node name
  for name in munged mariadbd slurmdbd slurmctld; do
    hpc_cluster_pid "$name" >/dev/null && return 0
  done
  for node in "${hpc_cluster_nodes[@]}"; do
    hpc_cluster_pid slurmd "$node" >/dev/null && return 0
  done
  return 1
}

# hpc_cluster_down: stops this cluster's daemons by pid (slurmds, slurmctld, slurmdbd, MariaDB, then
# munged) and waits for them to exit; running jobs are killed with their slurmd.
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
    tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ" | grep -qxF "SLURM_CONF=$hpc_cluster_conf" &&
      kill -KILL "$pid" 2>/dev/null
  done
  # The accounting after the controller, which sends it the jobs' last records.
  for name in slurmdbd mariadbd; do
    if pid=$(hpc_cluster_pid "$name"); then hpc_cluster_stop_pids "$pid"; fi
  done
  if pid=$(hpc_cluster_pid munged); then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  fi
  for name in slurmctld slurmdbd mariadbd munged; do
    if hpc_cluster_pid "$name" >/dev/null; then hpc_die "$name is still running"; fi
  done
  for node in "${hpc_cluster_nodes[@]}"; do
    if hpc_cluster_pid slurmd "$node" >/dev/null; then hpc_die "slurmd $node is still running"; fi
  done
  hpc_say "stopped the cluster in $hpc_cluster_dir"
}

# hpc_cluster_status: sinfo of the cluster and one line per daemon; returns 1 when any is down.
hpc_cluster_status() {
  local node pid rc=0 mode name
  mode=$(cat "$hpc_cluster_mode_file" 2>/dev/null) || mode=unknown
  printf 'cluster folder: %s (configuration: %s, SLURM_TMPDIR mode: %s)\n' "$hpc_cluster_dir" "$hpc_cluster_config" \
    "$mode"
  if pid=$(hpc_cluster_pid munged); then echo "munged: running (pid $pid)"; else echo "munged: stopped" && rc=1; fi
  if [[ $hpc_cluster_config == site ]]; then
    for name in mariadbd slurmdbd; do
      if pid=$(hpc_cluster_pid "$name"); then echo "$name: running (pid $pid)"; else echo "$name: stopped" && rc=1; fi
    done
  fi
  if pid=$(hpc_cluster_pid slurmctld); then echo "slurmctld: running (pid $pid)"; else echo "slurmctld: stopped" &&
    rc=1; fi
  for node in "${hpc_cluster_nodes[@]}"; do
    if pid=$(hpc_cluster_pid slurmd "$node"); then echo "slurmd $node: running (pid $pid)"; else echo \
      "slurmd $node: stopped" && rc=1; fi
  done
  if hpc_cluster_pid slurmctld >/dev/null; then sinfo -N -o '%N %P %T %c %m %G' || rc=1; fi
  return "$rc"
}
