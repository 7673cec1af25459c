# shellcheck shell=bash
# hpc_cleanup_submit.bash: submit_plai_cleanup's steps: options, cluster profile, nodes, one
# short job per node (cleanup_node.sh, pinned with --nodelist), and with --wait the wait and the
# summary table read from each job's report. The per-node rule is in hpc_cleanup.bash.

# What this library reads, set elsewhere: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# submit_plai_cleanup: its own path; the compiled profile (hpc_profile_load).
declare -g hpc_cleanup_submitter hpc_profile_tmpdir_provided

# shellcheck source=plai_cleanups/hpc_cleanup.bash
source "$(dirname "${BASH_SOURCE[0]}")/hpc_cleanup.bash"
# shellcheck source=hpc_files/lib/hpc_profile.bash
source "$hpc_files_dir/lib/hpc_profile.bash"
# shellcheck source=hpc_files/lib/hpc_slurm.bash
source "$hpc_files_dir/lib/hpc_slurm.bash"
# The Python helpers (profiles, hostlists), found as the submitter finds them.
hpc_facts_locate "$hpc_files_dir"

# Per node: its job id, its report; per job id: its last state seen by squeue.
declare -gA hpc_cleanup_job=() hpc_cleanup_report=() hpc_cleanup_final_state=()

# What each job asks for: one CPU of one node, briefly.
hpc_cleanup_sbatch_fixed=(--nodes=1 --ntasks=1 --cpus-per-task=1 --time=00:05:00 --mem=100M
  --job-name=hpc-cleanup --no-requeue)

# hpc_cleanup_opt_defaults: every hpc_cleanup_opt_* to "not given" or its default.
hpc_cleanup_opt_defaults() {
  hpc_cleanup_opt_dry_run=0 hpc_cleanup_opt_wait=0 hpc_cleanup_opt_help=0
  hpc_cleanup_opt_timeout=600 hpc_cleanup_opt_partition='' hpc_cleanup_opt_nodes=''
  hpc_cleanup_opt_root='' hpc_cleanup_opt_cluster=${HPC_CLUSTER:-}
  hpc_cleanup_opt_reports=${SCRATCH:-${HOME:-.}}/hpc_cleanup_reports
}

# hpc_cleanup_opt_parse ARGS...: the command line into hpc_cleanup_opt_*; on bad input one line
# 'OPTION: what is accepted' and exit 2. Needs nothing but Bash.
hpc_cleanup_opt_parse() {
  local opt value have_value
  while (($#)); do
    hpc_split_option "$1"
    shift
    case $opt in
      --dry-run | --wait | -h | --help)
        ((have_value == 0)) || hpc_die_usage "$opt" "takes no value"
        case $opt in
          --dry-run) hpc_cleanup_opt_dry_run=1 ;;
          --wait) hpc_cleanup_opt_wait=1 ;;
          *) hpc_cleanup_opt_help=1 ;;
        esac
        continue
        ;;
      -p | --partition | --nodes | --cluster | --root | --reports | --timeout) ;;
      -*) hpc_die_usage "$opt" "unknown option; see 'bash plai_cleanups/submit_plai_cleanup --help'" ;;
      *) hpc_die_usage "$opt" "unexpected word; this command takes only options (see --help)" ;;
    esac
    [[ $opt != -p && $opt != --partition ]] || opt=-p/--partition
    if ((have_value == 0)); then
      # Never take the next option as the value.
      if (($# == 0)) || [[ $1 == -?* ]]; then hpc_die_usage "$opt" "needs a value"; fi
      value=$1
      shift
    fi
    hpc_cleanup_opt_set "$opt" "$value"
  done
}

# hpc_cleanup_opt_set OPTION VALUE: checks one option's value and stores it.
hpc_cleanup_opt_set() {
  local opt=$1 value=$2
  case $opt in
    -p/--partition)
      [[ $value =~ ^[A-Za-z0-9_.-]+$ ]] ||
        hpc_die_usage "$opt" "'$value' is not accepted; accepted: one partition name (letters, digits, _ . -)"
      hpc_cleanup_opt_partition=$value
      ;;
    --nodes)
      [[ $value =~ ^[][A-Za-z0-9_.,-]+$ ]] ||
        hpc_die_usage "$opt" \
          "'$value' is not accepted; accepted: a hostlist of node names and ranges, e.g. 'plai[01-04],plai07'"
      hpc_cleanup_opt_nodes=$value
      ;;
    --cluster)
      [[ $value =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]*$ ]] ||
        hpc_die_usage "$opt" "'$value' is not accepted; accepted: the name of a profile in hpc_files/clusters/"
      hpc_cleanup_opt_cluster=$value
      ;;
    --root)
      local accepted="an absolute path, which may start with \$VAR or \${VAR:-/default} (expanded on each node)"
      [[ ($value == /* || $value == \$*) && $value != *$'\n'* ]] ||
        hpc_die_usage "$opt" "'$value' is not accepted; accepted: $accepted"
      hpc_cleanup_opt_root=$value
      ;;
    --reports)
      [[ -n $value && $value != *%* && $value != *$'\n'* ]] ||
        hpc_die_usage "$opt" \
          "'$value' is not accepted; accepted: a folder that the nodes can write to (no % in its path)"
      hpc_cleanup_opt_reports=$value
      ;;
    --timeout)
      [[ $value =~ ^0*[1-9][0-9]{0,5}$ ]] ||
        hpc_die_usage "$opt" "'$value' is not accepted; accepted: a whole number of seconds, 1 to 999999"
      hpc_cleanup_opt_timeout=$((10#$value))
      ;;
  esac
}

# hpc_cleanup_profile: loads the cluster profile (--cluster, else HPC_CLUSTER, else the host's)
# and sets hpc_cleanup_partition and hpc_cleanup_root from it and the options. Exit 2 when the
# profile says the cluster gives every job SLURM_TMPDIR: the toolkit then leaves nothing behind.
hpc_cleanup_profile() {
  hpc_profile_load "$hpc_cleanup_opt_cluster"
  if [[ $hpc_profile_tmpdir_provided == true && -z $hpc_cleanup_opt_root ]]; then
    local msg="the cluster '$hpc_profile_name' gives every job SLURM_TMPDIR (tmpdir.provided: true), so the toolkit"
    msg+=" leaves no folders there; accepted: a cluster without it, or --root"
    hpc_die_usage "--cluster" "$msg"
  fi
  hpc_cleanup_partition=${hpc_cleanup_opt_partition:-$hpc_profile_partition}
  hpc_cleanup_root=${hpc_cleanup_opt_root:-$hpc_profile_tmpdir_root}
  [[ -n $hpc_cleanup_root ]] ||
    hpc_die_usage "--root" "the profile '$hpc_profile_name' has no tmpdir.root; accepted: --root ROOT"
}

# hpc_cleanup_node_name_ok NAME: true for a plain node name (it names a report file).
hpc_cleanup_node_name_ok() {
  [[ $1 =~ ^[A-Za-z0-9][A-Za-z0-9_.-]*$ ]]
}

# hpc_cleanup_find_nodes: sets hpc_cleanup_nodes (the nodes that get a job) and
# hpc_cleanup_skipped ("NODE STATE": nodes that cannot start one). The nodes are --nodes
# (expanded by the Python helpers) or every node of the partition; sinfo gives their states.
hpc_cleanup_find_nodes() {
  local out name state base line rc=0
  local -a wanted=() sinfo_args=(-N -h -o '%N %t')
  local -A states=() seen=()
  hpc_cleanup_nodes=() hpc_cleanup_skipped=()
  if [[ -n $hpc_cleanup_opt_nodes ]]; then
    out=$(hpc_helpers_cli hostlist "$hpc_cleanup_opt_nodes" 2>/dev/null) || rc=$?
    # The helpers exit 2 on a malformed hostlist, 1 when there is no Python to run them.
    local hostlist="a hostlist of node names and ranges, e.g. 'plai[01-04],plai07'"
    ((rc != 2)) ||
      hpc_die_usage "--nodes" "'$hpc_cleanup_opt_nodes' is not accepted; accepted: $hostlist"
    ((rc == 0)) ||
      hpc_die \
        "could not expand the hostlist '$hpc_cleanup_opt_nodes' with the toolkit's Python helpers (exit status $rc)"
    while IFS= read -r name; do
      [[ -n $name ]] || continue
      hpc_cleanup_node_name_ok "$name" ||
        hpc_die_usage "--nodes" "'$name' is not accepted as a node name; accepted: letters, digits, _ . -"
      [[ -n ${seen[$name]:-} ]] || wanted+=("$name")
      seen[$name]=1
    done <<<"$out"
    ((${#wanted[@]})) || hpc_die_usage "--nodes" "'$hpc_cleanup_opt_nodes' names no node"
  fi

  [[ -z $hpc_cleanup_partition ]] || sinfo_args+=(-p "$hpc_cleanup_partition")
  out=$(sinfo "${sinfo_args[@]}") || hpc_die "sinfo ${sinfo_args[*]} failed (exit status $?): cannot list the nodes"
  local -a listed=()
  while read -r name state line; do
    [[ -n $name ]] || continue
    [[ -z ${states[$name]+x} ]] || continue
    hpc_cleanup_node_name_ok "$name" ||
      hpc_die "sinfo listed a node name this tool does not accept: $(printf '%q' "$name")"
    states[$name]=$state
    listed+=("$name")
  done <<<"$out"

  if ((${#wanted[@]})); then
    local where="${hpc_cleanup_partition:+partition }${hpc_cleanup_partition:-this cluster}"
    for name in "${wanted[@]}"; do
      [[ -n ${states[$name]+x} ]] ||
        hpc_die_usage "--nodes" "'$name' is not a node of $where; accepted: ${listed[*]:-(sinfo lists none)}"
    done
  else
    ((${#listed[@]})) || hpc_die "sinfo lists no node${hpc_cleanup_partition:+ in partition $hpc_cleanup_partition}"
    wanted=("${listed[@]}")
  fi

  for name in "${wanted[@]}"; do
    state=${states[$name]}
    base=${state%%[*~#!%\$@^-]*}
    # Down, drained, draining, failed, in maintenance, powered down or not responding: a job
    # pinned there would wait, perhaps for days.
    case $base in
      down | drain | drng | fail | failg | futr | maint | inval | pow_dn | npc) hpc_cleanup_skipped+=("$name $state") ;;
      *)
        if [[ $state == *'*'* ]]; then
          hpc_cleanup_skipped+=("$name $state")
        else
          hpc_cleanup_nodes+=("$name")
        fi
        ;;
    esac
  done
  ((${#hpc_cleanup_nodes[@]})) || hpc_die "no node can start a job now (${hpc_cleanup_skipped[*]})"
}

# hpc_cleanup_submit_jobs: one job per node of hpc_cleanup_nodes; sets hpc_cleanup_job[NODE]
# and hpc_cleanup_report[NODE], prints one line per node; returns 1 when sbatch refused any.
hpc_cleanup_submit_jobs() {
  local node id pattern rc=0
  local -a args job_args=(--lib "$hpc_cleanup_lib_dir" --root "$hpc_cleanup_root")
  ((hpc_cleanup_opt_dry_run == 0)) || job_args+=(--dry-run)
  hpc_cleanup_job=() hpc_cleanup_report=() hpc_cleanup_job_ids=()
  for node in "${hpc_cleanup_nodes[@]}"; do
    pattern=$hpc_cleanup_reports_dir/hpc_cleanup_${node}_%j.out
    args=(--nodelist="$node" "${hpc_cleanup_sbatch_fixed[@]}" --output="$pattern"
      --chdir="$hpc_cleanup_reports_dir")
    [[ -z $hpc_cleanup_partition ]] || args+=(--partition="$hpc_cleanup_partition")
    if ! hpc_slurm_sbatch '' '' "${args[@]}" "$hpc_cleanup_lib_dir/cleanup_node.sh" "${job_args[@]}"; then
      hpc_say "$node: $hpc_slurm_error"
      rc=1
      continue
    fi
    id=$hpc_slurm_id
    hpc_cleanup_job[$node]=$id
    hpc_cleanup_report[$node]=${pattern//%j/$id}
    hpc_cleanup_job_ids+=("$id")
    printf '%s: job %s, report %s\n' "$node" "$id" "${hpc_cleanup_report[$node]}"
  done
  return "$rc"
}

# hpc_cleanup_wait: polls squeue until none of the submitted jobs is pending or running, at most
# --timeout seconds; sets hpc_cleanup_final_state[ID] (empty once squeue forgets a job).
# Returns 1 on timeout.
hpc_cleanup_wait() {
  local deadline=$((SECONDS + hpc_cleanup_opt_timeout)) out id state active warned=0 uid
  local -A now
  uid=$(id -u)
  hpc_cleanup_final_state=()
  while :; do
    if out=$(hpc_slurm squeue -h -u "$uid" -t all -o '%A %T' 2>/dev/null); then
      now=()
      while read -r id state; do
        [[ -z $id ]] || now[$id]=$state
      done <<<"$out"
      active=0
      for id in "${hpc_cleanup_job_ids[@]}"; do
        state=${now[$id]-}
        hpc_cleanup_final_state[$id]=$state
        [[ -z $state ]] || hpc_facts_state_ended "$state" || active=$((active + 1))
      done
      ((active)) || return 0
    elif ((! warned)); then
      hpc_say "squeue failed; trying again until the timeout"
      warned=1
    fi
    ((SECONDS < deadline)) || return 1
    sleep 1
  done
}

# hpc_cleanup_why CODES: "job-active:1,symlink:2" in words: "1 job not ended, 2 symlinks".
hpc_cleanup_why() {
  local item code n text out=''
  [[ $1 != - && -n $1 ]] || {
    printf -- '-\n'
    return 0
  }
  local IFS=,
  for item in $1; do
    code=${item%%:*} n=${item##*:}
    case $code in
      job-active) text='job not ended' ;;
      name) text="other name" ;;
      symlink) text='symlink' ;;
      not-dir) text='not a folder' ;;
      owner) text='not yours' ;;
      other-fs) text='other file system' ;;
      mount) text='mount inside' ;;
      no-record) text='no record' ;;
      squeue) text='squeue failed' ;;
      rm-failed) text='rm failed' ;;
      *) text=$code ;;
    esac
    out+=${out:+, }"$n $text"
  done
  printf '%s\n' "$out"
}

# hpc_cleanup_table: the summary table of the jobs' reports (their 'summary' lines). Returns 1
# when a node did not report status=ok.
hpc_cleanup_table() {
  local node id report line field key rc=0 width=4 removed_total=0 freed_total=0 kept_total=0
  local -a fields
  local removed_head=removed freed_head=freed
  local -A s
  ((hpc_cleanup_opt_dry_run == 0)) || removed_head='would remove' freed_head='would free'
  for node in "${hpc_cleanup_nodes[@]}"; do
    ((${#node} <= width)) || width=${#node}
  done
  printf '\n%-*s  %-9s  %-12s  %-12s  %-5s  %s\n' "$width" node job "$removed_head" "$freed_head" kept 'why kept'
  for node in "${hpc_cleanup_nodes[@]}"; do
    id=${hpc_cleanup_job[$node]-}
    [[ -n $id ]] || continue
    report=${hpc_cleanup_report[$node]}
    line=''
    [[ ! -r $report ]] || line=$(grep -E '^summary node=' -- "$report" | tail -n 1) || line=''
    if [[ -z $line ]]; then
      printf '%-*s  %-9s  no summary in its report (job %s): see %s\n' "$width" "$node" "$id" \
        "${hpc_cleanup_final_state[$id]:-ended}" "$report"
      rc=1
      continue
    fi
    s=()
    read -ra fields <<<"$line"
    for field in "${fields[@]}"; do
      [[ $field == *=* ]] || continue
      key=${field%%=*}
      s[$key]=${field#*=}
    done
    printf '%-*s  %-9s  %-12s  %-12s  %-5s  %s\n' "$width" "$node" "$id" "${s[removed]:-?}" \
      "$(hpc_human_size "${s[freed_bytes]:-0}")" "${s[kept]:-?}" "$(hpc_cleanup_why "${s[why]:--}")"
    removed_total=$((removed_total + ${s[removed]:-0}))
    freed_total=$((freed_total + ${s[freed_bytes]:-0}))
    kept_total=$((kept_total + ${s[kept]:-0}))
    if [[ ${s[status]:-} != ok ]]; then
      printf '%-*s  %-9s  ^ %s: see %s\n' "$width" '' '' "${s[status]:-no status}" "$report"
      rc=1
    fi
  done
  printf '%-*s  %-9s  %-12s  %-12s  %s\n' "$width" all '' "$removed_total" "$(hpc_human_size "$freed_total")" \
    "$kept_total"
  return "$rc"
}

# hpc_cleanup_submit_main ARGS...: the whole command.
hpc_cleanup_submit_main() {
  local rc=0 item what
  hpc_cleanup_opt_defaults
  hpc_cleanup_opt_parse "$@"
  if ((hpc_cleanup_opt_help)); then
    hpc_usage "$hpc_cleanup_submitter"
    exit 0
  fi
  hpc_cleanup_profile
  hpc_cleanup_find_nodes
  mkdir -p -- "$hpc_cleanup_opt_reports" || hpc_die "cannot create the reports folder $hpc_cleanup_opt_reports"
  hpc_cleanup_reports_dir=$(cd -- "$hpc_cleanup_opt_reports" && pwd)

  what='removing the leftovers of ended jobs'
  ((hpc_cleanup_opt_dry_run == 0)) || what='dry run: each job only lists what it would remove'
  printf 'cluster %s, partition %s, local scratch root %s, user %s: %s\n' "$hpc_profile_name" \
    "${hpc_cleanup_partition:-(default)}" "$hpc_cleanup_root" "$(hpc_cleanup_user)" "$what"
  for item in "${hpc_cleanup_skipped[@]}"; do
    printf '%s: skipped, its state is %s (no job can start there now)\n' "${item%% *}" "${item#* }"
  done
  hpc_cleanup_submit_jobs || rc=1
  ((${#hpc_cleanup_job_ids[@]})) || hpc_die "no job was submitted"
  ((hpc_cleanup_opt_wait)) || return "$rc"

  printf 'waiting for %s job(s), at most %s s ...\n' "${#hpc_cleanup_job_ids[@]}" "$hpc_cleanup_opt_timeout"
  if ! hpc_cleanup_wait; then
    hpc_cleanup_table || true
    local msg="the jobs did not all end within ${hpc_cleanup_opt_timeout}s; they stay queued, and their reports will be"
    msg+=" in $hpc_cleanup_reports_dir"
    hpc_die "$msg"
  fi
  hpc_cleanup_table || rc=1
  return "$rc"
}
