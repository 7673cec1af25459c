# shellcheck shell=bash
# hpc_usage.bash: what a job really used, measured from the job itself (no accounting database).
# One sampler per node (job_step.sh sample, started by the batch shell beside the program in a
# step of its own, srun --overlap, waited for by nothing) reads this node's processes of the job
# from /proc at a low rate (every 2 s for the first minute, then every 15 s: milliseconds each)
# and keeps its figures in ${scratch_dir}/hpc_outputs/usage/<job>/<node> (replaced whole at each
# sample): CPU seconds (hpc_usage_scan), the peak of the summed resident memory, GPU memory and
# utilisation through nvidia-smi where it exists. The batch shell's last lines and the command
# 'usage' print them (hpc_usage_report), against what the job asked for, with a suggestion when
# the request was far off.

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# The plan (the job's plan file): what the job asked for.
# hpc_facts.bash (loaded by hpc_common.bash): SLURM's times in seconds, its ended states.
declare -g hpc_facts_seconds hpc_facts_ended_states
declare -g hpc_plan_cpus hpc_plan_cpus_per_task hpc_plan_ntasks_per_node hpc_plan_mem hpc_plan_time hpc_plan_gpus \
  hpc_plan_num_processes hpc_plan_nodes

# hpc_usage_dir SCRATCH_DIR JOB: prints the folder of job JOB's usage files (JOB: hpc_job_own_id's name,
# the job id, or ARRAY_TASK for an array task).
hpc_usage_dir() {
  printf '%s/hpc_outputs/usage/%s\n' "$1" "$2"
}

# hpc_usage_task_file NODE PID START: sets hpc_usage_task_file to the name, in the job's usage
# folder, of the record that an srun task's first process (PID, started at START: /proc/PID/stat's
# field 22) on NODE leaves as it ends (hpc_usage_task_record). A dot first: the folder's node
# files are '*'. No subshell: the sampler asks for each process that ended.
hpc_usage_task_file() {
  printf -v hpc_usage_task_file '.task.%s.%s.%s' "$1" "$2" "$3"
}

# hpc_usage_task_record DIR: (hpc_job_supervise, its program reaped) writes into the job's usage
# folder DIR this shell's CPU time with all it reaped (utime+stime+cutime+cstime, in ticks): the
# program's whole tree. SLURM's slurmstepd, none of the job's processes, reaps the task, so the
# sampler would otherwise count its tree by the last values it saw, and lose what it used after
# its last sample (up to 15 s of every process). Nothing when DIR is not the user's own folder.
hpc_usage_task_record() {
  local dir=$1 pid=$BASHPID stat rest file ticks IFS=' '
  local -a fields=()
  [[ -d $dir && ! -L $dir && -O $dir ]] || return 0
  { IFS= read -r stat <"/proc/$pid/stat"; } 2>/dev/null || return 0
  rest=${stat##*) }
  read -r -a fields <<<"$rest"
  ((${#fields[@]} > 21)) || return 0
  hpc_usage_task_file "${SLURMD_NODENAME:-$HOSTNAME}" "$pid" "${fields[19]}"
  file=$dir/$hpc_usage_task_file
  ticks=$((fields[11] + fields[12] + fields[13] + fields[14]))
  if ! (umask 077 && printf 'ticks=%s\n' "$ticks" >"$file.tmp") 2>/dev/null ||
    ! mv -f -- "$file.tmp" "$file" 2>/dev/null; then
    rm -f -- "${file:?}.tmp"
  fi
}

# hpc_usage_task_ticks PID START: sets hpc_usage_task_ticks to the total that the task's first
# process PID (started at START) recorded as it ended (hpc_usage_task_record), from the usage
# folder (the current one: the sampler's); false when it left none. Read as the user's own
# regular file, not a link, one short line.
hpc_usage_task_ticks() {
  local file line=''
  hpc_usage_task_file "${SLURMD_NODENAME:-$HOSTNAME}" "$1" "$2"
  file=$hpc_usage_task_file
  [[ -f $file && ! -L $file && -O $file ]] || return 1
  { IFS= read -r -n 64 line <"$file"; } 2>/dev/null || [[ -n $line ]] || return 1
  [[ $line =~ ^ticks=([0-9]{1,18})$ ]] || return 1
  hpc_usage_task_ticks=${BASH_REMATCH[1]}
}

# hpc_usage_job_pids JOB: sets hpc_usage_job_pid (PID -> 1) to this node's processes of job JOB
# as SLURM itself tracks them (scontrol listpids JOB NODE: its proctrack plugin), never from what
# a process's environment says (any process can export the job's SLURM_JOB_ID); where scontrol
# cannot say, those whose cgroup names the job (a cgroup's path holds job_JOB). The caller's own
# step (SLURM_STEP_ID) and the job's steps of this toolkit's sampler and 'stack' are left out.
# The one home of "the job's processes here" for the sampler and 'stack' (hpc_stack_node.bash).
hpc_usage_job_pids() {
  local job=$1 own=${SLURM_STEP_ID:-} out pid jid step rest dir text v -
  local -a vars=()
  local -A found=()
  # The sampler scans with globbing off (hpc_usage_scan): on here, for /proc/[0-9]*.
  set +f
  declare -gA hpc_usage_job_pid=()
  if out=$(timeout 20 scontrol listpids "$job" "${SLURMD_NODENAME:-$HOSTNAME}" 2>/dev/null); then
    while read -r pid jid step rest; do
      [[ $pid =~ ^[0-9]+$ && $jid == "$job" && (-z $own || $step != "$own") ]] || continue
      found[$pid]=1
    done <<<"$out"
  else
    for dir in /proc/[0-9]*; do
      text=''
      { IFS= read -r -d '' text <"$dir/cgroup"; } 2>/dev/null || [[ -n $text ]] || continue
      [[ $text == *"/job_$job/"* && (-z $own || $text != *"/job_$job/step_$own/"*) ]] || continue
      found[${dir#/proc/}]=1
    done
  fi
  for pid in "${!found[@]}"; do
    # The job's processes that belong to this toolkit's own steps (whose environment says so).
    if { mapfile -d '' vars <"/proc/$pid/environ"; } 2>/dev/null; then
      for v in "${vars[@]}"; do
        [[ $v != HPC_USAGE_STEP=1 && $v != HPC_STACK_STEP=1 ]] || continue 2
      done
    fi
    hpc_usage_job_pid[$pid]=1
  done
}

# hpc_usage_scan JOB: one sample of this node's processes of job JOB (hpc_usage_job_pids): sets
# hpc_usage_ticks to the CPU time of the job's processes so far: each live one's own time and
# what it reaped of its children (utime+stime+cutime+cstime: a parent's cutime holds its reaped
# children's whole trees), plus, once, the last value seen of each one that ended since the last
# sample unless a live process of the job reaped it: its parent, or its parent's parent where
# that ended too (a wrapper that does not exec its program: the program's time reaches the
# wrapper's cutime, then the wrapper's parent's: counted there alone, not twice). One whose
# nearest sampled forebear ended as well (a task's first process, reaped by slurmstepd;
# torchrun's workers when torchrun ended too) counts by its last value, taken while it ran; what
# a process used after its last sample is lost only when nothing of the job reaped it. Sets
# hpc_usage_rss_kb to their summed resident memory now and raises hpc_usage_peak_kb; adds up
# how long their threads waited for a CPU (/proc/PID/task/TID/schedstat, the second figure, in
# ns: hpc_usage_wait_ns), and the node's load (/proc/loadavg) to hpc_usage_load_sum.
hpc_usage_scan() {
  local job=$1 dir pid stat rest key rss=0 live=0 waits=0 wait IFS=' ' -
  local page_kb=$((${hpc_usage_page_size:-4096} / 1024))
  local -a fields=() sched=()
  local -A seen=() ppid_of=() key_of=() ended=() recorded=()
  local v depth task
  # The stat lines are split below: no globbing of their words.
  set -f
  hpc_usage_job_pids "$job"
  for pid in "${!hpc_usage_job_pid[@]}"; do
    dir=/proc/$pid
    { IFS= read -r stat <"$dir/stat"; } 2>/dev/null || continue
    # The command's name may hold spaces and parentheses: the fields start after its last ')'.
    rest=${stat##*) }
    # Split on spaces without a here-string (a temporary file each) or globbing (set -f above).
    # shellcheck disable=SC2206 # the split is the point
    fields=($rest)
    # fields[0] is the state (field 3): ppid 4, utime 14, stime 15, cutime 16, cstime 17,
    # starttime 22, rss 24.
    ((${#fields[@]} > 21)) || continue
    key=$pid:${fields[19]}
    [[ -n ${hpc_usage_member[$key]:-} ]] || hpc_usage_members=$((hpc_usage_members + 1))
    hpc_usage_member[$key]=1
    v=$((fields[11] + fields[12] + fields[13] + fields[14]))
    hpc_usage_last[$key]=$v
    live=$((live + v))
    seen[$key]=1 ppid_of[$key]=${fields[1]} key_of[$pid]=$key
    rss=$((rss + fields[21] * page_kb))
    # Each thread's time spent runnable but waiting for a CPU (a starved request, not an idle one).
    wait=0
    set +f
    for task in "$dir"/task/[0-9]*/schedstat; do
      { IFS=' ' read -r -a sched <"$task"; } 2>/dev/null || continue
      [[ ${sched[1]:-} =~ ^[0-9]+$ ]] && wait=$((wait + sched[1]))
    done
    set -f
    ((wait >= ${hpc_usage_wait_last[$key]:-0})) || wait=${hpc_usage_wait_last[$key]}
    hpc_usage_wait_last[$key]=$wait
    waits=$((waits + wait))
  done
  # Each one's parent among the job's (its time reaches that parent's cutime once reaped).
  for key in "${!seen[@]}"; do
    pid=${ppid_of[$key]}
    hpc_usage_parent[$key]=${key_of[$pid]:-}
  done
  for key in "${!hpc_usage_alive[@]}"; do
    [[ -n ${seen[$key]:-} ]] || ended[$key]=1
  done
  # Those that ended since the last sample: counted once, unless a live forebear holds them in
  # its cutime now (through forebears that ended too, each reaped by the next).
  # A task's first process that recorded its reaped total as it ended (hpc_usage_task_record)
  # counts by it, and what it reaped not again.
  for key in "${!ended[@]}"; do
    ! hpc_usage_task_ticks "${key%%:*}" "${key#*:}" || recorded[$key]=$hpc_usage_task_ticks
  done
  for key in "${!ended[@]}"; do
    rest=${hpc_usage_parent[$key]:-} depth=0 v=${recorded[$key]:-${hpc_usage_last[$key]}}
    while [[ -n $rest && -n ${ended[$rest]:-} ]] && ((depth++ < 64)); do
      [[ -z ${recorded[$rest]:-} ]] || v=0
      rest=${hpc_usage_parent[$rest]:-}
    done
    [[ -n $rest && -n ${seen[$rest]:-} ]] || hpc_usage_ended=$((hpc_usage_ended + v))
    hpc_usage_wait_ended=$((hpc_usage_wait_ended + ${hpc_usage_wait_last[$key]:-0}))
  done
  for key in "${!ended[@]}"; do
    unset "hpc_usage_alive[$key]" "hpc_usage_parent[$key]" "hpc_usage_last[$key]" "hpc_usage_wait_last[$key]"
    unset "hpc_usage_member[$key]"
  done
  for key in "${!seen[@]}"; do hpc_usage_alive[$key]=1; done
  hpc_usage_ticks=$((live + hpc_usage_ended))
  hpc_usage_wait_ns=$((waits + hpc_usage_wait_ended))
  hpc_usage_rss_kb=$rss
  ((rss <= hpc_usage_peak_kb)) || hpc_usage_peak_kb=$rss
  # The node's load over the last minute, in hundredths.
  if { IFS=' ' read -r v rest </proc/loadavg; } 2>/dev/null && [[ $v =~ ^([0-9]+)\.([0-9]{2}) ]]; then
    hpc_usage_load_sum=$((hpc_usage_load_sum + 10#${BASH_REMATCH[1]}${BASH_REMATCH[2]}))
    hpc_usage_load_n=$((hpc_usage_load_n + 1))
  fi
}

# hpc_usage_gpu: where nvidia-smi exists, sets hpc_usage_gpu_text to this sample's GPU use (the
# node's GPUs that the job sees: utilisation and memory) and keeps the peaks; else says so.
hpc_usage_gpu() {
  local line index util used total
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    hpc_usage_gpu_text='not measured (no nvidia-smi on the node)'
    return 0
  fi
  while IFS=', ' read -r index util used total; do
    [[ $index =~ ^[0-9]+$ && $util =~ ^[0-9]+$ && $used =~ ^[0-9]+$ ]] || continue
    hpc_usage_gpu_util_sum=$((hpc_usage_gpu_util_sum + util)) hpc_usage_gpu_samples=$((hpc_usage_gpu_samples + 1))
    ((used <= hpc_usage_gpu_mem_peak)) || hpc_usage_gpu_mem_peak=$used
    hpc_usage_gpu_mem_total=$total
  done < <(timeout 10 nvidia-smi --query-gpu=index,utilization.gpu,memory.used,memory.total \
    --format=csv,noheader,nounits 2>/dev/null)
  if ((hpc_usage_gpu_samples)); then
    hpc_usage_gpu_text="$((hpc_usage_gpu_util_sum / hpc_usage_gpu_samples)) % busy on average,"
    hpc_usage_gpu_text+=" peak memory $hpc_usage_gpu_mem_peak of $hpc_usage_gpu_mem_total MiB per GPU"
  else
    hpc_usage_gpu_text='not measured (nvidia-smi gave no figures)'
  fi
}

# hpc_usage_write FILE: writes this node's figures so far into FILE, replaced whole.
hpc_usage_write() {
  local ticks=$hpc_usage_ticks now
  now=${EPOCHREALTIME/,/.}
  if ! {
    printf 'node=%s\nstart_s=%s\nnow_s=%s\ncpu_ticks=%s\nclock_ticks=%s\npeak_rss_kb=%s\nrss_kb=%s\n' \
      "${SLURMD_NODENAME:-$HOSTNAME}" "$hpc_usage_start_s" "$now" "$ticks" "$hpc_usage_clock_ticks" \
      "$hpc_usage_peak_kb" "$hpc_usage_rss_kb"
    printf 'cpus=%s\nmem=%s\ntime=%s\ngpus=%s\nprocesses=%s\ngpu=%s\nsamples=%s\nmembers=%s\n' \
      "$((${hpc_plan_cpus_per_task:-1} * ${hpc_plan_ntasks_per_node:-1}))" \
      "${hpc_plan_mem:-}" "${hpc_plan_time:-}" "${hpc_plan_gpus:-0}" \
      "$((${hpc_plan_num_processes:-1} / (${hpc_plan_nodes:-1} > 0 ? ${hpc_plan_nodes:-1} : 1)))" \
      "$hpc_usage_gpu_text" "$hpc_usage_samples" "$hpc_usage_members"
    # What the job asked per process (-c), and whether it was starved: the node's load on
    # average over the samples, its CPUs, and how long the job's threads waited for one.
    printf 'cpus_per_process=%s\nload=%s\nhost_cpus=%s\nwait_ms=%s\n' "${hpc_plan_cpus:-}" \
      "$(awk -v s="$hpc_usage_load_sum" -v n="$hpc_usage_load_n" 'BEGIN { if (n) printf "%.2f", s / n / 100 }')" \
      "$hpc_usage_host_cpus" "$((hpc_usage_wait_ns / 1000000))"
  } >"$1.tmp.$$" 2>/dev/null || ! mv -f -- "$1.tmp.$$" "$1" 2>/dev/null; then
    rm -f -- "$1.tmp.$$"
  fi
}

# hpc_usage_begin: the sampler's figures, none yet (hpc_usage_scan and hpc_usage_write keep them).
hpc_usage_begin() {
  declare -gA hpc_usage_member=() hpc_usage_last=() hpc_usage_parent=() hpc_usage_alive=() hpc_usage_wait_last=()
  hpc_usage_wait_ended=0 hpc_usage_wait_ns=0 hpc_usage_load_sum=0 hpc_usage_load_n=0
  hpc_usage_host_cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null) || hpc_usage_host_cpus=''
  hpc_usage_ended=0 hpc_usage_ticks=0 hpc_usage_peak_kb=0 hpc_usage_members=0 hpc_usage_rss_kb=0 \
    hpc_usage_samples=0 hpc_usage_gpu_text=''
  hpc_usage_gpu_util_sum=0 hpc_usage_gpu_samples=0 hpc_usage_gpu_mem_peak=0 hpc_usage_gpu_mem_total=0
  hpc_usage_clock_ticks=$(getconf CLK_TCK 2>/dev/null) || hpc_usage_clock_ticks=100
  hpc_usage_page_size=$(getconf PAGESIZE 2>/dev/null) || hpc_usage_page_size=4096
  hpc_usage_start_s=${HPC_JOB_T0:-${EPOCHREALTIME/,/.}}
  hpc_usage_start_s=${hpc_usage_start_s/,/.}
}

# hpc_usage_sample_loop JOB FILE: (job_step.sh sample, one per node) samples until SIGUSR2 or
# SIGTERM, then once more, writes FILE and exits 0. False at once when FILE's folder is not the
# job's private folder (hpc_job_usage_folder made it).
hpc_usage_sample_loop() {
  local job=$1 file=$2 sleeper='' interval
  # The folder is entered once, checked as entered (the user's, marked private, not a link), and
  # written by a name without a slash: a swap of its path for a link later redirects nothing.
  cd -P -- "${file%/*}" 2>/dev/null && [[ ! -L ${file%/*} && . -ef ${file%/*} && -O . && -u . ]] || return 1
  file=${file##*/}
  hpc_usage_begin
  # shellcheck disable=SC2317,SC2329 # invoked by the trap below
  hpc_usage_stop() {
    trap '' USR2 TERM INT
    [[ -z $sleeper ]] || kill "$sleeper" 2>/dev/null || true
    hpc_usage_scan "$job"
    hpc_usage_samples=$((hpc_usage_samples + 1))
    hpc_usage_write "$file"
    exit 0
  }
  trap hpc_usage_stop USR2 TERM INT
  while :; do
    hpc_usage_scan "$job"
    hpc_usage_gpu
    hpc_usage_samples=$((hpc_usage_samples + 1))
    hpc_usage_write "$file"
    # Every 2 s for the first minute (a short job's peak memory), then every 15 s.
    interval=${HPC_USAGE_INTERVAL:-$((hpc_usage_samples < 30 ? 2 : 15))}
    sleep "$interval" &
    sleeper=$!
    wait "$sleeper" || true
    sleeper=''
  done
}

# hpc_usage_read FILE: sets hpc_usage (NAME -> VALUE) from a node's usage file; false when it
# cannot be read.
hpc_usage_read() {
  local line
  declare -gA hpc_usage=()
  [[ -f $1 && ! -L $1 && -O $1 ]] || return 1
  while IFS= read -r line; do
    [[ $line == *=* ]] || continue
    hpc_usage[${line%%=*}]=${line#*=}
  done <"$1"
  [[ -n ${hpc_usage[node]:-} ]]
}

# hpc_usage_mib TEXT: prints SLURM's memory TEXT (512M, 10G, 2048: MB) in MiB; nothing when unknown.
hpc_usage_mib() {
  local n=${1%[KMGTkmgt]} unit=${1: -1}
  [[ $n =~ ^[0-9]+$ ]] || return 0
  case $unit in
    [Kk]) printf '%s\n' $((n / 1024)) ;;
    [Gg]) printf '%s\n' $((n * 1024)) ;;
    [Tt]) printf '%s\n' $((n * 1024 * 1024)) ;;
    *) printf '%s\n' "$n" ;;
  esac
}

# hpc_usage_cpu_advice USED CPUS PROCESSES ELAPSED: prints the suggestion on CPUs ("; ...") for a
# node's usage file read (hpc_usage) whose processes used USED of CPUS (under half) in ELAPSED s:
# fewer CPUs only when its processes were idle, not starved (what they used and what they waited
# for a CPU both under half the request; where the wait is not recorded, not on a node loaded
# above its CPUs), and never what the job already asked for (-c per process).
hpc_usage_cpu_advice() {
  local used=$1 cpus=$2 procs=$3 elapsed=$4 wait_ms=${hpc_usage[wait_ms]:-} load=${hpc_usage[load]:-}
  local host=${hpc_usage[host_cpus]:-} asked=${hpc_usage[cpus_per_process]:-} overloaded='' line demand per wait_s
  [[ $wait_ms =~ ^[0-9]+$ ]] || wait_ms=''
  [[ $asked =~ ^[0-9]+$ ]] || asked=$((cpus / procs))
  if [[ $load =~ ^[0-9.]+$ && $host =~ ^[0-9]+$ ]] && awk -v l="$load" -v h="$host" 'BEGIN { exit !(l > h) }'; then
    overloaded="the node was overloaded: load $load on $host CPUs"
  fi
  line=$(awk -v u="$used" -v w="${wait_ms:-0}" -v e="$elapsed" -v p="$procs" \
    'BEGIN { d = u + w / 1000 / e; n = int(d / p + 0.999); if (n < 1) n = 1; printf "%.2f %d %.1f", d, n, w / 1000 }')
  read -r demand per wait_s <<<"$line"
  if [[ -n $wait_ms ]] && awk -v d="$demand" -v c="$cpus" 'BEGIN { exit !(d >= c / 2) }'; then
    printf '; asked %s CPUs, used %s, yet its processes waited %s s for a CPU: starved, not idle%s;%s' \
      "$cpus" "$used" "$wait_s" "${overloaded:+ ($overloaded)}" ' no fewer CPUs advised'
  elif [[ -z $wait_ms && -n $overloaded ]]; then
    printf '; asked %s CPUs, used %s while %s: its processes may have been starved; no fewer CPUs advised' \
      "$cpus" "$used" "${overloaded/: load/ (load}"')'
  elif ((per < asked)); then
    printf '; asked %s CPUs, used %s: -c %s would do' "$cpus" "$used" "$per"
  fi
}

# hpc_usage_report FILE...: one line per node's usage file (hpc_usage_read): CPU used of CPUs
# allocated, peak memory of memory allocated, GPU use, elapsed of the time limit; then a
# suggestion line for each request that was far off (under half used).
hpc_usage_report() {
  local file line cpus used elapsed cpu_s mem_mib peak_mib limit limit_s procs suggest
  for file in "$@"; do
    hpc_usage_read "$file" || continue
    # No process of the job was ever seen here: it ended before the sampler's first look.
    if [[ ${hpc_usage[members]:-1} == 0 ]]; then
      printf 'usage %s: not measured (the job ended before its first sample)\n' "${hpc_usage[node]}"
      continue
    fi
    line=$(awk -v t="${hpc_usage[cpu_ticks]:-0}" -v hz="${hpc_usage[clock_ticks]:-100}" \
      -v a="${hpc_usage[start_s]:-0}" -v b="${hpc_usage[now_s]:-0}" \
      'BEGIN { e = b - a; if (e < 0.001) e = 0.001; printf "%.2f %.1f %.1f", t / hz / e, e, t / hz }')
    read -r used elapsed cpu_s <<<"$line"
    cpus=${hpc_usage[cpus]:-1}
    mem_mib=$(hpc_usage_mib "${hpc_usage[mem]:-}")
    peak_mib=$(((${hpc_usage[peak_rss_kb]:-0} + 1023) / 1024))
    limit='' limit_s=0
    if hpc_facts_seconds "${hpc_usage[time]:-}"; then
      limit_s=$hpc_facts_seconds
      ((limit_s == 0)) ||
        limit=$(printf ' of %s (%d %%)' "$(hpc_facts_hms "$limit_s")" \
          "$(awk -v e="$elapsed" -v l="$limit_s" 'BEGIN { printf "%d", 100 * e / l }')")
    fi
    printf 'usage %s: CPU %s of %s allocated (%s %%, %s CPU-s); peak memory %s MiB%s; GPU %s; elapsed %s s%s\n' \
      "${hpc_usage[node]}" "$used" "$cpus" \
      "$(awk -v u="$used" -v c="$cpus" 'BEGIN { printf "%d", 100 * u / c }')" "$cpu_s" "$peak_mib" \
      "${mem_mib:+ of $mem_mib MiB allocated}" "${hpc_usage[gpu]:-not measured}" "$elapsed" "$limit"
    # Suggestions: a request used under half, by a job long enough to tell (10 s).
    awk -v e="$elapsed" 'BEGIN { exit !(e >= 10) }' || continue
    procs=${hpc_usage[processes]:-1}
    ((procs >= 1)) || procs=1
    suggest=''
    ! awk -v u="$used" -v c="$cpus" 'BEGIN { exit !(c >= 2 && u < c / 2) }' ||
      suggest+=$(hpc_usage_cpu_advice "$used" "$cpus" "$procs" "$elapsed")
    if [[ -n $mem_mib ]] && ((mem_mib >= 2048 && peak_mib * 2 < mem_mib)); then
      suggest+="; asked $mem_mib MiB of memory, used at most $peak_mib MiB"
    fi
    if ((limit_s >= 1200)) && awk -v e="$elapsed" -v l="$limit_s" 'BEGIN { exit !(e * 4 < l) }'; then
      suggest+="; used $(awk -v e="$elapsed" 'BEGIN { printf "%d", e }') s of a $limit_s s time limit:"
      suggest+=" --time of twice that would do"
    fi
    [[ -z $suggest ]] || printf 'usage %s: suggestion%s\n' "${hpc_usage[node]}" "$suggest"
  done
}

# hpc_usage_sacct_load ID...: (the command 'usage', on the login side) where the cluster keeps
# accounting, sets hpc_usage_acct (KEY -> line) to what sacct says each ended job or array task of
# the jobs ID used: TotalCPU summed over its steps, the largest MaxRSS of any of them (the
# largest task's; the toolkit's sampler's step is in both: a few MB, a fraction of a second),
# elapsed time and final state. Asked once for them all; nothing where sacct fails (no
# accounting), and nothing for a job still pending or running (its steps' figures are not final).
# shellcheck disable=SC2034 # hpc_usage_acct: read by the command 'usage'
hpc_usage_sacct_load() {
  local out IFS=,
  declare -gA hpc_usage_acct=()
  (($#)) || return 0
  # The user's own: where PrivateData does not hide them, sacct shows every user's job of an id,
  # and ids come again after the controller's state is reset (their steps would be summed in).
  out=$(hpc_slurm -t 60 sacct -n -P -u "${USER:-$(id -un)}" -j "$*" -o JobID,State,Elapsed,MaxRSS,TotalCPU \
    --noconvert 2>/dev/null) || return 0
  IFS=$' \t\n'
  local key line
  while IFS='|' read -r key line; do
    [[ -n $key ]] && hpc_usage_acct[$key]=$line
  done < <(awk -F'|' -v ended="$hpc_facts_ended_states" '
    NF >= 5 && $1 ~ /^[0-9]+(_[0-9]+)?(\.|$)/ {
      # Elapsed ($3) and TotalCPU ($5) in seconds, from [D-][HH:]MM:SS[.mmm].
      for (f = 3; f <= 5; f += 2) {
        t = $f
        d = 0
        if (t ~ /-/) { split(t, p, "-"); d = p[1]; t = p[2] }
        n = split(t, p, ":")
        sec[f] = d * 86400 + (n == 3 ? p[1] * 3600 + p[2] * 60 + p[3] : n == 2 ? p[1] * 60 + p[2] : p[1] + 0)
      }
      k = $1
      if (k !~ /\./) {
        split($2, w, " ")
        if (index(ended, " " w[1] " ")) { state[k] = w[1]; elapsed[k] = sec[3]; cpu[k] = sec[5]; order[++jobs] = k }
        next
      }
      sub(/\..*/, "", k)
      stepcpu[k] += sec[5]
      steps[k]++
      # MaxRSS in bytes: a bare number, or with a unit K, M, G, T of 1024.
      u = toupper(substr($4, length($4)))
      r = ($4 + 0) * (u == "K" ? 1024 : u == "M" ? 1024 ^ 2 : u == "G" ? 1024 ^ 3 : u == "T" ? 1024 ^ 4 : 1)
      if (r > rss[k]) rss[k] = r
    }
    END {
      for (i = 1; i <= jobs; i++) {
        k = order[i]
        c = steps[k] ? stepcpu[k] : cpu[k]
        m = rss[k] ? sprintf("%d MiB (MaxRSS, its largest task)", (rss[k] + 524288) / 1048576) : "not recorded"
        printf "%s|CPU %.2f CPU-s (TotalCPU, all its steps); peak memory %s; elapsed %d s; %s\n", \
          k, c, m, elapsed[k], state[k]
      }
    }' <<<"$out")
}
