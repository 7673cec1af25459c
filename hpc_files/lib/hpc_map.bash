# shellcheck shell=bash
# hpc_map.bash: map + gather after submission: resubmit --failed, gather EXP, the status of a
# map's tasks, and the job's side (a task's variables and status, the gather's first step). The
# design, and what is done at submission: hpc_map_submit.bash, loaded here first. Loaded by the
# management commands, and by the job only for the modes 'map' and 'gather'.

# shellcheck source=hpc_files/lib/hpc_map_submit.bash
source "${BASH_SOURCE[0]%/*}/hpc_map_submit.bash"

# What this file reads, set by hpc_common.bash (hpc_trusted_read; hpc_facts.bash: the states after
# which a task runs no more): declared here, not set.
declare -g hpc_trusted_problem hpc_trusted_text hpc_facts_ended_states
# The map's runner module (gather --here): hpc_runner_NAME_here's answer.
declare -g hpc_runner_here_problem
declare -ga hpc_runner_here_env hpc_runner_here_unset
# The job's batch shell (hpc_job.bash, hpc_job_signals.bash): a chunk stops after a warning or TERM.
declare -g hpc_job_warned hpc_job_ended_by_slurm scratch_dir exp_name
# hpc_manage.bash (status): the recorded jobs' experiments and arrays, the arrays SLURM has
# forgotten whole.
declare -gA hpc_manage_exp hpc_manage_array hpc_manage_forgotten

# ---------------------------------------------------------------------------------------------
# resubmit EXP --failed: a map's hooks of the group workflow (hpc_group_resubmit_failed)

# hpc_map_group_facts: a map's folder holds manifest.json and tasks/<index>/.
hpc_map_group_facts() {
  hpc_group_record=manifest.json hpc_group_members=tasks hpc_group_member=task hpc_group_noun=map
  hpc_group_lockers="a resubmit --failed or gather"
}

# hpc_map_resubmit_read INFO DIR: reads map-info's lines: the array ids (the jobs that must have
# ended), the failed indices, the throttle and the attempt; then, before anything is submitted,
# what the resubmission runs: the kept task.sh and gather.sh and the array's plan file.
hpc_map_resubmit_read() {
  local line first='' dir=$2 i
  hpc_map_r_throttle='' hpc_map_r_gather_ids='' hpc_map_r_attempt=2 hpc_map_r_chunk=0
  while IFS= read -r line; do
    case $line in
      first=*) first=${line#*=} ;;
      throttle=*) hpc_map_r_throttle=${line#*=} ;;
      array_ids=*) read -ra hpc_group_live <<<"${line#*=}" ;;
      gather_ids=*) hpc_map_r_gather_ids=${line#*=} ;;
      failed=*) read -ra hpc_group_failed <<<"${line#*=}" ;;
      attempt=*) hpc_map_r_attempt=${line#*=} ;;
      chunk=*) hpc_map_r_chunk=${line#*=} ;;
    esac
  done <<<"$1"
  [[ -n $first ]] || hpc_die "cannot read the map in $dir"
  # Its ids are used below as keys (bash would evaluate a word there) and its throttle goes to sbatch.
  local -a gather_ids=()
  read -ra gather_ids <<<"$hpc_map_r_gather_ids"
  hpc_group_check_ids "$dir/manifest.json" ${hpc_group_live[@]+"${hpc_group_live[@]}"} \
    ${gather_ids[@]+"${gather_ids[@]}"}
  ((${#hpc_group_live[@]})) || hpc_die "$dir/manifest.json names no array job; nothing was submitted"
  [[ $hpc_map_r_chunk =~ ^[0-9]{1,9}$ ]] || hpc_map_r_chunk=0
  if ! [[ $hpc_map_r_throttle =~ ^[0-9]*$ ]]; then
    local msg="$dir/manifest.json holds the throttle '$hpc_map_r_throttle', which is not a whole number;"
    hpc_die "$msg nothing was submitted"
  fi
  for i in ${hpc_group_failed[@]+"${hpc_group_failed[@]}"}; do
    # A task may have replaced its folder by a link: its earlier status would be moved, and the
    # new attempt would write, through it.
    if [[ -L $dir/tasks/$i ]]; then
      local msg="$dir/tasks/$i is a symbolic link: a task's folder is never followed; remove the"
      msg+=" link (task $i then runs again into a new folder) and resubmit; nothing was submitted"
      hpc_die "$msg"
    fi
  done
  ((${#hpc_group_failed[@]})) || return 0
  hpc_group_kept_script "$dir/task.sh" "map's kept task script"
  hpc_map_r_script=$hpc_group_script hpc_map_r_gather=''
  if [[ -e $dir/gather.sh || -L $dir/gather.sh ]]; then
    hpc_group_kept_script "$dir/gather.sh" "map's kept gather script"
    hpc_map_r_gather=$hpc_group_script
  fi
  # The array's plan, named by its manifest.
  hpc_map_r_plan=''
  ! hpc_manifest_read "${hpc_manage_file[${hpc_group_live[0]}]-}" || hpc_map_r_plan=${hpc_mf[plan]-}
  if [[ -z $hpc_map_r_plan || ! -e $hpc_map_r_plan && ! -L $hpc_map_r_plan ]]; then
    local msg again
    printf -v again ' %q' ${hpc_mf_argv[@]+"${hpc_mf_argv[@]}"}
    msg="the plan file '${hpc_map_r_plan:-(none recorded)}' of job ${hpc_mf[job_id]:-?} is gone; submit again with:"
    msg+=" bash job_submitter.sh$again"
    hpc_die "$msg"
  fi
  # Its text goes into new plan files of this user, which the jobs trust: read as a job would.
  if ! hpc_trusted_check "$hpc_map_r_plan"; then
    local msg="the plan file '$hpc_map_r_plan' of job ${hpc_mf[job_id]:-?}"
    msg+=" $hpc_trusted_problem: not read; nothing was submitted"
    hpc_die "$msg"
  fi
}

# hpc_map_resubmit_members DIR: the failed indices as held arrays with the frozen items and the
# same throttle, in the same folder (their old status.json kept as status.attempt<N>.json; other
# tasks' folders are not touched): parts of at most MaxArraySize indices, each after the one before
# (afterany, so that the throttle holds for the whole resubmission), as the first submission split
# the map. An index at or above MaxArraySize cannot be a task id: such a part has task ids 0..N-1,
# each mapped to its index by the list in its plan (hpc_map_task_index).
hpc_map_resubmit_members() {
  local dir=$1 throttle=$hpc_map_r_throttle attempt=$hpc_map_r_attempt max size start k text i
  local -a indices=("${hpc_group_failed[@]}") chunk=() after=()
  hpc_manifest_ranges "${indices[@]}"
  hpc_map_r_ranges=$hpc_manifest_ranges
  hpc_manifest_check_array_size 0 0
  max=${hpc_manifest_max_array_size:-}
  hpc_map_r_max=$max hpc_map_r_specs=() hpc_map_r_lists=() hpc_map_r_plans=() hpc_map_array_ids=()
  size=${#indices[@]}
  [[ -z $max ]] || ((max <= 0 || max >= size)) || size=$max
  if ((hpc_map_r_chunk)); then
    # A chunked map: its failed items chunked again (hpc_map_chunk_rule, at most K as before),
    # one array whose task t runs the t-th K of them.
    hpc_map_chunk_rule "${#indices[@]}" "${throttle:-1}" "$max"
    ((hpc_map_chunk_auto <= hpc_map_r_chunk)) || hpc_map_chunk_auto=$hpc_map_r_chunk
    hpc_map_r_k=$hpc_map_chunk_auto size=${#indices[@]}
    hpc_map_r_lists+=("${indices[*]}")
    hpc_map_r_specs+=("0-$(((size + hpc_map_r_k - 1) / hpc_map_r_k - 1))${throttle:+%$throttle}")
  fi
  for ((start = 0; start < ${#indices[@]} && ! hpc_map_r_chunk; start += size)); do
    chunk=("${indices[@]:start:size}")
    if [[ -n $max ]] && ((chunk[-1] >= max)); then
      hpc_map_r_lists+=("${chunk[*]}") hpc_map_r_specs+=("0-$((${#chunk[@]} - 1))${throttle:+%$throttle}")
    else
      hpc_manifest_ranges "${chunk[@]}"
      hpc_map_r_lists+=('') hpc_map_r_specs+=("$hpc_manifest_ranges${throttle:+%$throttle}")
    fi
  done
  for k in "${!hpc_map_r_specs[@]}"; do
    # The array's plan, with this resubmission's values appended (the last assignment wins): one
    # new plan file per part, which its job script names.
    printf -v text '# resubmit --failed: the same map folder, attempt %s.\nhpc_plan_map_dir=%q\n' "$attempt" "$dir"
    printf -v text '%shpc_plan_map_attempt=%q\nhpc_plan_map_offset=0\nhpc_plan_map_indices=%q\n' \
      "$text" "$attempt" "${hpc_map_r_lists[k]}"
    ((hpc_map_r_chunk == 0)) || printf -v text '%shpc_plan_map_chunk=%q\n' "$text" "$hpc_map_r_k"
    hpc_group_replan "$hpc_map_r_plan" "the map's array" "$text"
    hpc_map_r_plans+=("$hpc_plan_file")
    hpc_group_script_for "$hpc_map_r_script" "$hpc_plan_file"
    after=()
    ((k == 0)) || after=(--dependency="afterany:${hpc_group_members_ids[-1]}")
    hpc_group_sbatch "the resubmission" "$hpc_group_script" --array="${hpc_map_r_specs[k]}" ${after[@]+"${after[@]}"}
    hpc_group_members_ids+=("$hpc_group_id") hpc_map_array_ids+=("$hpc_group_id")
  done
  for i in "${indices[@]}"; do
    # The earlier attempt's status is kept; a link is never followed or moved.
    hpc_group_keep_attempt "$dir/tasks/$i" "$((attempt - 1))" status
  done
}

# hpc_map_resubmit_followup DIR: the kept gather script again, after the new arrays (afterany).
hpc_map_resubmit_followup() {
  local text
  hpc_map_gather_ids=()
  [[ -n $hpc_map_r_gather ]] || return 0
  printf -v text '%s:' "${hpc_group_members_ids[@]}"
  hpc_group_sbatch --followup "the new gather job" "$hpc_map_r_gather" --dependency="afterany:${text%:}" \
    --kill-on-invalid-dep=yes
  hpc_map_gather_ids=("$hpc_group_followup_id")
}

# hpc_map_resubmit_record DIR: the new ids in manifest.json, a manifest per new job (linked to the
# first submission's), and what is said once released.
hpc_map_resubmit_record() {
  local dir=$1 k first=${hpc_group_live[0]} gather_id=$hpc_group_followup_id max=$hpc_map_r_max
  local -a record=() old_gather=()
  for k in "${hpc_group_members_ids[@]}"; do record+=(--array "$k"); done
  # A chunked resubmission: which task runs which item.
  ((hpc_map_r_chunk == 0)) || record+=(--chunk "$hpc_map_r_k" --indices "${hpc_map_r_lists[0]}")
  hpc_group_helpers map-record --dir "$dir" "${record[@]}" --gather "$gather_id" ||
    hpc_say "cannot record jobs ${hpc_group_members_ids[*]} $gather_id in $dir/manifest.json"
  for k in "${!hpc_group_members_ids[@]}"; do
    [[ -z ${hpc_manage_file[$first]-} ]] ||
      hpc_manifest_copy "${hpc_manage_file[$first]}" "${hpc_group_members_ids[k]}" "${hpc_map_r_specs[k]}" \
        "resubmit --failed" '' "${hpc_map_r_plans[k]}" ||
      hpc_say "job ${hpc_group_members_ids[k]} was submitted, but its manifest could not be written"
  done
  read -ra old_gather <<<"$hpc_map_r_gather_ids"
  if [[ -n $gather_id && -n ${old_gather[0]-} && -n ${hpc_manage_file[${old_gather[0]}]-} ]]; then
    hpc_manifest_copy "${hpc_manage_file[${old_gather[0]}]}" "$gather_id" '' "resubmit --failed" ||
      hpc_say "gather job $gather_id was submitted, but its manifest could not be written"
  fi
  local ids=${hpc_group_members_ids[*]} id=${hpc_group_members_ids[0]} spec=${hpc_map_r_specs[0]}
  if ((${#hpc_group_members_ids[@]} > 1)); then
    printf -v hpc_group_summary 'Resubmitted task(s) %s of map %s as jobs %s ' "$hpc_map_r_ranges" "${dir##*/}" "$ids"
    printf -v hpc_group_summary '%s(above MaxArraySize %s: %s arrays, one after the other)\n' \
      "$hpc_group_summary" "$max" "${#hpc_group_members_ids[@]}"
    [[ -z $gather_id ]] ||
      printf -v hpc_group_summary '%sGather job %s: after jobs %s end (afterany); output %s\n' "$hpc_group_summary" \
        "$gather_id" "$ids" "$dir/gather_$gather_id.out"
    return 0
  fi
  if ((hpc_map_r_chunk)); then
    printf -v hpc_group_summary 'Resubmitted item(s) %s of map %s as job %s (array %s, %s item(s) per task)\n' \
      "$hpc_map_r_ranges" "${dir##*/}" "$id" "$spec" "$hpc_map_r_k"
  else
    printf -v hpc_group_summary 'Resubmitted task(s) %s of map %s as job %s (array %s%s)\n' \
      "$hpc_map_r_ranges" "${dir##*/}" "$id" "$spec" \
      "${hpc_map_r_lists[0]:+, task ids ${spec%\%*} are indices ${hpc_map_r_lists[0]}: above MaxArraySize $max}"
  fi
  [[ -z $gather_id ]] ||
    printf -v hpc_group_summary '%sGather job %s: after job %s ends (afterany); output %s\n' "$hpc_group_summary" \
      "$gather_id" "$id" "$dir/gather_$gather_id.out"
}

# hpc_map_task_states ROOT ID...: (status) the state of each task of the map arrays among the
# recorded jobs ID (hpc_manage_mode map; ROOT the project's map folders), SLURM's and the status
# files its tasks wrote (any attempt, matched by array job id and task id) together, in
# hpc_st_state and hpc_st_exit. SLURM's word over a file's: a task SLURM has ended shows SLURM's
# state (the tasks of a map can write each other's files: one that says COMPLETED where SLURM
# says FAILED is not believed), except that it is never COMPLETED without a file of its own
# (SLURM's COMPLETED with a file left RUNNING, or none, is LOST). While SLURM runs it, a file
# still RUNNING is RUNNING; once SLURM has forgotten it, the file's state, else LOST.
# A chunked map's items (their files say "chunk") are counted per state instead, one line per map
# folder in hpc_map_item_lines; its array tasks show SLURM's state.
# An array SLURM has forgotten whole (hpc_manage_forgotten: its tasks have no state yet) gets its
# summary line's counts in hpc_map_summary[ID] instead (hpc_map_forgotten_counts), none of its
# tasks a state of its own; where that cannot be (a chunked map), its tasks get theirs as any.
hpc_map_task_states() {
  local root=$1 id key line state slurm live ended value exit chunk file folder exp
  local -A file_state=() file_exit=() scanned=() slurm_live=() slurm_ended=() item_counts=() item_recs=() chunk_task=()
  local -A others=() forgotten=()
  declare -gA hpc_map_summary=()
  hpc_map_item_lines=()
  shift
  for id in "$@"; do
    [[ ${hpc_manage_mode[$id]-} == map ]] || continue
    if [[ -n ${hpc_manage_forgotten[$id]-} ]]; then
      forgotten[${hpc_manage_exp[$id]}]+=" $id"
    else
      others[${hpc_manage_exp[$id]}]=1
    fi
  done
  for id in "$@"; do
    [[ ${hpc_manage_mode[$id]-} == map ]] || continue
    exp=${hpc_manage_exp[$id]}
    if [[ -z ${scanned[$exp]-} ]]; then
      scanned[$exp]=1
      if [[ -n ${forgotten[$exp]-} ]]; then
        # shellcheck disable=SC2086 # job ids: digits
        hpc_map_forgotten_counts "$root/$exp" ${forgotten[$exp]} || others[$exp]=1
      fi
      # Each task's file, for the arrays SLURM still answers for (not read in Bash otherwise). A
      # map may have 10^5 items: one find lists the user's own regular files at their place
      # (never through a link: neither a task's folder nor its file), and one awk reads them
      # all: 'ARRAY_TASK STATE EXIT CHUNK FILE' each (hpc_map_status_fields).
      [[ -n ${others[$exp]-} ]] || continue
      hpc_map_status_fields "$root/$exp"
      for line in ${hpc_map_status_fields[@]+"${hpc_map_status_fields[@]}"}; do
        key=${line%% *} value=${line#* }
        state=${value%% *} value=${value#* }
        exit=${value%% *} value=${value#* }
        chunk=${value%% *} file=${value#* }
        if ((chunk)); then
          # An item of a chunk: counted by its newest state (its status.json), once checked
          # against the map's chunks (hpc_map_item_line); its task keeps SLURM's state (it writes
          # no file of its own).
          chunk_task[$key]=1
          [[ ${file##*/} == status.json ]] || continue
          folder=${file%/tasks/*} value=${file%/*}
          item_counts[$folder]=1 item_recs[$folder]+="$key ${value##*/} $state"$'\n'
          continue
        fi
        file_state[$key]=$state file_exit[$key]=$exit
      done
    fi
    [[ -z ${hpc_map_summary[$id]-} ]] || continue
    hpc_manage_keys "$id"
    for key in "${hpc_manage_keys[@]}"; do
      [[ -z ${chunk_task[$key]-} ]] || continue
      slurm=${hpc_st_state[$key]-}
      state=${file_state[$key]-}
      # Forgotten by SLURM (most tasks of an old map): the file's state, else LOST.
      if [[ $slurm == UNKNOWN* ]]; then
        [[ -n $state && $state != RUNNING ]] || state=LOST
        hpc_st_state["$key"]=$state hpc_st_exit["$key"]=${file_exit[$key]:--}
        continue
      fi
      # SLURM still runs it (or will), or SLURM ended it (hpc_facts.bash): asked once per state.
      if [[ -z ${slurm_live[s$slurm]-} ]]; then
        slurm_live[s$slurm]=0 slurm_ended[s$slurm]=0
        ! hpc_map_state_live "$slurm" || slurm_live[s$slurm]=1
        ! hpc_facts_state_ended "$slurm" || slurm_ended[s$slurm]=1
      fi
      live=${slurm_live[s$slurm]} ended=${slurm_ended[s$slurm]}
      if ((ended)); then
        if [[ $slurm == COMPLETED && (-z $state || $state == RUNNING) ]]; then state=LOST; else state=$slurm; fi
      elif ((live)); then
        [[ -n $state ]] || state=$slurm
      elif [[ -z $state || $state == RUNNING ]]; then
        state=LOST
      fi
      # shellcheck disable=SC2034 # hpc_st_exit: read by hpc_manage.bash
      if [[ $state != "$slurm" ]]; then
        hpc_st_state["$key"]=$state hpc_st_exit["$key"]=${file_exit[$key]:--}
        ((! ended)) || hpc_st_exit["$key"]=-
      elif [[ ${file_state[$key]-} == "$state" ]]; then
        # The file agrees: its exit code is the program's (SLURM's is the batch shell's).
        hpc_st_exit["$key"]=${file_exit[$key]}
      fi
    done
  done
  for folder in "${!item_counts[@]}"; do hpc_map_item_line "$folder"; done
}

# hpc_map_state_live STATE: true when SLURM's STATE of a task says it still runs (or will).
hpc_map_state_live() {
  case $1 in
    PENDING | CONFIGURING | RUNNING | COMPLETING | SUSPENDED | REQUEUED*) return 0 ;;
  esac
  return 1
}

# hpc_map_forgotten_counts DIR ID...: (hpc_map_task_states) for each array job ID that SLURM has
# forgotten whole (hpc_manage_forgotten) of the map folders in DIR, sets hpc_map_summary[ID] to
# its summary line's counts ('1000 items: 998 COMPLETED, 2 FAILED'), counted in one awk from the
# status files (hpc_map_status_read) as each task would be on its line: the ended state SLURM
# said before it forgot the task, kept in ID's states file (hpc_manage_states_kept; COMPLETED
# with no file, or one left RUNNING: LOST), else its file's state (the last file read of that
# task), else LOST (none, or one left RUNNING); the states SLURM runs first, then the others in
# the order of their first task (hpc_status_summary). No Bash step per task: the awk expands the
# array's indices itself. False, with no count set, for a chunked map (its items are counted
# apart), a file whose state asks for the task's log (UNKNOWN), a states file that may not be
# read or that keeps a state that has not ended, or an array whose indices it does not expand:
# then the tasks get their states (hpc_manage_states_kept) and are counted as any.
hpc_map_forgotten_counts() {
  local dir=$1 id prog out line states kept
  local -a counts=() words=()
  shift
  # shellcheck disable=SC2016 # awk's program, in single quotes
  prog='function slow() { print "slow"; bad = 1; exit }
    # K ID SPEC: the array spec of job ID (indices a, a-b or a-b:s, comma-separated; %N its throttle).
    $1 == "K" {
      id = $2; spec = $3; sub(/%[0-9]+$/, "", spec); ids[++m] = id; lo = -1; hi = -1
      k = split(spec, items, ",")
      if (k == 0) slow()
      for (i = 1; i <= k; i++) {
        if (items[i] !~ /^[0-9]+(-[0-9]+(:[0-9]+)?)?$/) slow()
        split(items[i], r, /[-:]/); a = r[1] + 0; b = (r[2] == "" ? a : r[2] + 0); st = (r[3] == "" ? 1 : r[3] + 0)
        if (st < 1 || b < a || b - a > 1000000) slow()
        for (j = a; j <= b; j += st) { mark[id, j] = 1; if (lo < 0 || j < lo) lo = j; if (j > hi) hi = j }
      }
      if (hi - lo > 1000000) slow()
      first[id] = lo; last[id] = hi; next
    }
    # S KEY RAW STATE EXIT (tab-separated): a line of a states file.
    $1 == "S" {
      split(substr($0, 3), f, "\t")
      if (f[1] == "" || f[3] == "") next
      if (index(ended, " " f[3] " ") == 0) slow()
      kept[f[1]] = f[3]; next
    }
    # ARRAY_TASK STATE EXIT CHUNK FILE: a status file (hpc_map_status_read).
    { if ($4 != 0) slow(); state[$1] = $2 }
    END {
      if (bad) exit
      for (j = 1; j <= m; j++) {
        id = ids[j]; k = 0; n = 0; split("", c); split("", o)
        for (i = first[id]; i <= last[id]; i++) {
          if (!((id, i) in mark)) continue
          key = id "_" i; n++; s = state[key]
          if (key in kept) {
            if (kept[key] != "COMPLETED" || (s != "" && s != "RUNNING")) s = kept[key]; else s = "LOST"
          } else if (s == "" || s == "RUNNING") s = "LOST"
          if (s ~ /^UNKNOWN/) slow()
          if (!(s in c)) o[++k] = s
          c[s]++
        }
        line = id " " n
        split("RUNNING COMPLETING PENDING", top, " ")
        for (i = 1; i <= 3; i++) if (top[i] in c) line = line " " c[top[i]] " " top[i]
        for (i = 1; i <= k; i++) if (o[i] !~ /^(RUNNING|COMPLETING|PENDING)$/) line = line " " c[o[i]] " " o[i]
        print line
      }
    }'
  kept=''
  for id in "$@"; do
    states=${hpc_manage_file[id]%.manifest}.states
    [[ -e $states || -L $states ]] || continue
    # As hpc_manage_states_kept reads it (which says why, where it may not be read).
    if ! hpc_trusted_read "$states" own 1048576; then
      kept=-
      break
    fi
    line=${hpc_trusted_text%$'\n'}
    [[ -z $line ]] || kept+="S ${line//$'\n'/$'\n'S }"$'\n'
  done
  out=slow
  if [[ $kept != - ]]; then
    out=$({
      for id in "$@"; do printf 'K %s %s\n' "$id" "${hpc_manage_array[$id]}"; done
      printf '%s' "$kept"
      hpc_map_status_read "$dir"
    } | LC_ALL=C awk -v ended="$hpc_facts_ended_states" "$prog") || out=slow
  fi
  if [[ $out != slow && -n $out ]]; then
    mapfile -t counts <<<"$out"
    for line in "${counts[@]}"; do
      read -r -a words <<<"$line"
      printf -v line '%s %s, ' "${words[@]:2}"
      hpc_map_summary[${words[0]}]="${words[1]} items: ${line%, }"
    done
  fi
  for id in "$@"; do [[ -n ${hpc_map_summary[$id]-} ]] || out=slow; done
  [[ $out == slow ]] || return 0
  # Not counted here: each task gets its state, as any.
  for id in "$@"; do
    unset 'hpc_map_summary[$id]'
    hpc_manage_states_kept "$id"
  done
  return 1
}

# hpc_map_item_line FOLDER: (hpc_map_task_states, whose item_recs lists each chunk item's status
# file of each folder: 'ARRAY_TASK INDEX STATE' lines) adds to hpc_map_item_lines the line of the
# chunked map in FOLDER: how many items in each state, those without a status file not started.
# An item's file that names an array task whose chunk (manifest.json's chunks) does not hold the
# item is INCONSISTENT, as the gather reads it (hpc_helpers.followup): a task writes only its own;
# one still RUNNING whose task SLURM has ended (or forgotten) is LOST.
hpc_map_item_line() {
  local folder=$1 state key count=0 seen=0 line text='' rest array index task
  local -A n=() first=() last=() k=() pos=()
  # The map's record, which its tasks could replace (a FIFO would hang status, a link to an endless
  # file fill its memory): the user's own regular file only, its first MiB (the count is near its head).
  if hpc_trusted_read "$folder/manifest.json" own 1048576; then
    text=$hpc_trusted_text
  else
    hpc_say "not read: $folder/manifest.json $hpc_trusted_problem; its items not started are not counted"
  fi
  [[ ! $text =~ \"count\":\ ([0-9]+) ]] || count=${BASH_REMATCH[1]}
  # The chunks, as the submitter and map-record write them: '"ARRAY": {"chunk": K, "first": F,
  # "last": L}' or '..., "indices": [I, ...]}'.
  rest=''
  [[ $text != *'"chunks": {'* ]] || rest=${text#*\"chunks\": \{}
  local re='^,? ?"([0-9]{1,18})": \{"chunk": ([0-9]{1,9}), '
  re+='"(first": ([0-9]{1,9}), "last": ([0-9]{1,9})|indices": \[([0-9, ]*)\])\}'
  while [[ $rest =~ $re ]]; do
    rest=${rest:${#BASH_REMATCH[0]}}
    array=${BASH_REMATCH[1]} k[${BASH_REMATCH[1]}]=$((10#${BASH_REMATCH[2]}))
    if [[ -n ${BASH_REMATCH[4]} ]]; then
      first[$array]=$((10#${BASH_REMATCH[4]})) last[$array]=$((10#${BASH_REMATCH[5]}))
    else
      task=0
      for index in ${BASH_REMATCH[6]//,/ }; do
        pos[${array}_$((10#$index))]=$task
        task=$((task + 1))
      done
    fi
  done
  while read -r key index state; do
    [[ -n $state ]] || continue
    if ((${#k[@]})); then
      array=${key%_*} task=${key#*_}
      if ! [[ $index =~ ^[0-9]{1,9}$ && -n ${k[$array]-} ]] || ((k[$array] < 1)); then
        state=INCONSISTENT
      elif index=$((10#$index)) task=$((10#$task)) && [[ -n ${first[$array]-} ]]; then
        ((index >= first[$array] && index <= last[$array])) &&
          (((index - first[$array]) / k[$array] == task)) || state=INCONSISTENT
      else
        [[ -n ${pos[${array}_$index]-} ]] && ((pos[${array}_$index] / k[$array] == task)) || state=INCONSISTENT
      fi
    fi
    # Killed hard (a node lost): the file was never ended. Its task's state: hpc_manage_states'.
    if [[ $state == RUNNING && -n ${hpc_st_state[$key]-} ]] && ! hpc_map_state_live "${hpc_st_state[$key]}"; then
      state=LOST
    fi
    n[$state]=$((${n[$state]:-0} + 1)) seen=$((seen + 1))
  done <<<"${item_recs[$folder]-}"
  ((count <= seen)) || n['not started']=$((count - seen))
  line="map ${folder#"${folder%/*/*}"/}: $((count > seen ? count : seen)) items:"
  for state in COMPLETED RUNNING FAILED NOT_RUN 'not started' "${!n[@]}"; do
    [[ -n ${n[$state]-} ]] || continue
    line+=" ${n[$state]} $state,"
    unset 'n[$state]'
  done
  hpc_map_item_lines+=("${line%,}")
}

# hpc_map_status_fields DIR: sets hpc_map_status_fields to the lines of hpc_map_status_read DIR.
hpc_map_status_fields() {
  local text
  hpc_map_status_fields=()
  text=$(hpc_map_status_read "$1") || true
  [[ -n $text ]] || return 0
  mapfile -t hpc_map_status_fields <<<"$text"
}

# hpc_map_status_read DIR: prints 'ARRAY_ID_TASK_ID STATE EXIT CHUNK FILE' (EXIT '-' when the file
# has none; CHUNK 1 for an item of a chunked map's task, else 0) for each task status file of the
# map folders in DIR (DIR/<map>/tasks/<index>/status*.json: any attempt) that is the user's own
# regular file, found without following a link, with its array_job_id, task_id and state as the
# toolkit writes them ('"name": value', hpc_followup_json_object). Three processes, however many
# items (find stops at the files' depth: what a task wrote below its folder is not walked).
hpc_map_status_read() {
  local prog
  # shellcheck disable=SC2016 # awk's program, in single quotes
  # Regexes written out (a regex made from a string is compiled at every use).
  prog='FILENAME ~ /\/tasks\/[^\/]+\/status[^\/]*\.json$/ {
      a = t = s = ""; e = "-"
      if (match($0, /"array_job_id": ?"[0-9]+"/)) {
        a = substr($0, RSTART, RLENGTH); gsub(/[^0-9]/, "", a)
      }
      if (match($0, /"task_id": ?"[0-9]+"/)) { t = substr($0, RSTART, RLENGTH); gsub(/[^0-9]/, "", t) }
      if (match($0, /"state": ?"[A-Z_]+"/)) {
        s = substr($0, RSTART, RLENGTH); sub(/^"state": ?"/, "", s); sub(/"$/, "", s)
      }
      if (match($0, /"exit_code": ?-?[0-9]+/)) { e = substr($0, RSTART, RLENGTH); sub(/^"exit_code": ?/, "", e) }
      c = index($0, "\"chunk\": ") ? 1 : 0
      if (a != "" && t != "" && s != "") print a "_" t " " s " " e " " c " " FILENAME
    }'
  [[ -d $1 && ! -L $1 ]] || return 0
  find "$1" -mindepth 4 -maxdepth 4 -name 'status*.json' -type f -user "$EUID" -print0 2>/dev/null |
    LC_ALL=C xargs -0 -r awk "$prog" 2>/dev/null
}

# hpc_map_gather_again ROOT: (job_submitter.sh gather EXP) submits the newest map's gather job
# again, now, without its dependency (the array has ended, and SLURM may have forgotten it).
hpc_map_gather_again() {
  local script line id kept=''
  hpc_group_newest_dir "$1" manifest.json gather map
  hpc_map_dir=$hpc_group_dir
  [[ -e $hpc_map_dir/gather.sh || -L $hpc_map_dir/gather.sh ]] ||
    hpc_die_usage "gather" "the map ${hpc_map_dir##*/} has no gather job (submitted without --gather)"
  hpc_map_group_facts
  hpc_group_lock "$hpc_map_dir" map "$hpc_group_lockers"
  hpc_trusted_check "$hpc_map_dir/manifest.json" ||
    hpc_die "the map's record $hpc_map_dir/manifest.json $hpc_trusted_problem: not read; nothing was submitted"
  hpc_trusted_read "$hpc_map_dir/gather.sh" ||
    hpc_die "the map's kept gather script $hpc_map_dir/gather.sh $hpc_trusted_problem: not run; nothing was submitted"
  while IFS= read -r line || [[ -n $line ]]; do
    case $line in
      '#SBATCH --dependency='* | '#SBATCH --kill-on-invalid-dep='*) ;;
      *) kept+=$line$'\n' ;;
    esac
  done <<<"${hpc_trusted_text%$'\n'}"
  script=$kept
  hpc_submit_pending_open "${hpc_manage_dir%/*}" "${1##*/}"
  if ! hpc_slurm_sbatch "the gather job" "$script"; then
    hpc_say "$hpc_slurm_error"
    hpc_submit_forget
    exit 1
  fi
  id=$hpc_slurm_id
  local -a ids=()
  mapfile -t ids < <(hpc_group_helpers map-info --dir "$hpc_map_dir" | sed -n 's/^gather_ids=//p' | tr ' ' '\n')
  hpc_group_helpers map-record --dir "$hpc_map_dir" --gather "$id" ||
    hpc_say "cannot record gather job $id in $hpc_map_dir/manifest.json"
  if [[ -n ${ids[0]-} && -n ${hpc_manage_file[${ids[0]}]-} ]]; then
    hpc_manifest_copy "${hpc_manage_file[${ids[0]}]}" "$id" '' gather ||
      hpc_say "gather job $id was submitted, but its manifest could not be written"
  fi
  hpc_pending_close
  printf 'Gather job %s of map %s: output %s\n' "$id" "${hpc_map_dir##*/}" "$hpc_map_dir/gather_$id.out"
}

# hpc_map_gather_here ROOT EXP: (job_submitter.sh gather EXP --here) runs the newest map's gather
# right here, as its job would: the tasks' status files read afresh into map_status.tsv/.json,
# the policy applied (not met: the verdict line, exit 1), the gather's variables and the job's
# (source_dir, project_name, scratch_dir, exp_name) exported, the command expanded from them and
# run in the project's venv from the project's folder; exits with its status.
hpc_map_gather_here() {
  local exp=$2 text first last policy runner rerun vars line rc=0
  local -a words=()
  hpc_group_newest_dir "$1" manifest.json gather map
  hpc_map_dir=$hpc_group_dir
  [[ -f $hpc_map_dir/gather.sh ]] ||
    hpc_die_usage "gather" "the map ${hpc_map_dir##*/} has no gather job (submitted without --gather)"
  # As the job's gather reads it (hpc_map_gather_again): the user's own file, no link, bounded.
  { hpc_trusted_check "$hpc_map_dir/manifest.json" && hpc_trusted_read "$hpc_map_dir/manifest.json" own 1048576; } ||
    hpc_die "the map's record $hpc_map_dir/manifest.json $hpc_trusted_problem: not read; nothing was run"
  text=$hpc_trusted_text
  if ! { [[ $text =~ \"first\":\ ([0-9]+) ]] && first=${BASH_REMATCH[1]} &&
    [[ $text =~ \"last\":\ ([0-9]+) ]] && last=${BASH_REMATCH[1]} &&
    [[ $text =~ \"policy\":\ \"([a-z0-9=%-]+)\" ]] && policy=${BASH_REMATCH[1]} &&
    [[ $text =~ \"kind\":\ \"([a-z][a-z0-9_]*)- ]] && runner=${BASH_REMATCH[1]}; }; then
    hpc_die "cannot read the map in $hpc_map_dir/manifest.json"
  fi
  # The runner's environment here, as the job would have it (a container's runs on a node only).
  hpc_runner_load "$runner" || hpc_die "the map's runner: $hpc_module_problem"
  if ! "hpc_runner_${runner}_here" "$hpc_source_dir"; then
    local msg="the map ${hpc_map_dir##*/} $hpc_runner_here_problem; accepted for a map"
    msg+=" whose runner runs here (a venv's): run its gather as a job (gather $exp)"
    hpc_die_usage "--here" "$msg"
  fi
  mapfile -d '' words < <(hpc_group_helpers gather-command --dir "$hpc_map_dir")
  ((${#words[@]})) || hpc_die "cannot read the gather command in $hpc_map_dir/manifest.json"
  [[ " ${words[*]} " != *'(masked)'* ]] ||
    hpc_die "the gather command holds a secret, masked in manifest.json: run it as a job (gather $exp)"
  printf -v rerun 'bash job_submitter.sh resubmit %q --failed' "$exp"
  vars=$(hpc_group_helpers read --dir "$hpc_map_dir/tasks" --keys "$first-$last" --policy "$policy" \
    --out "$hpc_map_dir/map_status" --rerun "$rerun") || rc=$?
  ((rc != 2)) || hpc_die "the tasks' status files could not be read (see above)"
  ((rc == 0)) || exit 1
  export map_dir=$hpc_map_dir map_count=$((last - first + 1))
  while IFS= read -r line; do
    case ${line%%=*} in
      ok) export map_ok=${line#*=} ;;
      failed) export map_failed=${line#*=} ;;
      n_ok) export map_n_ok=${line#*=} ;;
      n_failed) export map_n_failed=${line#*=} ;;
      status_file) export map_status_file=${line#*=} ;;
    esac
  done <<<"$vars"
  export source_dir=$hpc_source_dir project_name=$hpc_manage_project exp_name=$exp
  export scratch_dir=${hpc_manage_dir%/hpc_outputs/manifests}
  export PYTHONPATH=$hpc_python_helpers_dir/src${PYTHONPATH:+:$PYTHONPATH}
  ((${#hpc_runner_here_env[@]} == 0)) || export "${hpc_runner_here_env[@]}"
  ((${#hpc_runner_here_unset[@]} == 0)) || unset "${hpc_runner_here_unset[@]}"
  hpc_configs_expand "${words[@]}" || hpc_die "the gather command refers to a variable that is not defined here"
  cd -- "$source_dir" || hpc_die "cannot enter $source_dir"
  "${hpc_configs_argv[@]}" || exit
}

# ---------------------------------------------------------------------------------------------
# In the job

# hpc_map_task_setup: (an array task's batch shell) exports the task's variables, makes its own
# folder and writes its status RUNNING.
hpc_map_task_setup() {
  local i line
  if ((${hpc_plan_map_chunk:-0})); then
    hpc_map_chunk_setup
    return 0
  fi
  hpc_map_task_index || return 1
  i=$hpc_map_index
  export map_index=$i map_count=${hpc_plan_map_count:?}
  export map_dir=${hpc_plan_map_dir:-${hpc_plan_map_root:?}/${hpc_plan_map_stamp:?}-${SLURM_ARRAY_JOB_ID:?}}
  export task_dir=$map_dir/tasks/$i
  # The task's own folders are named by its index in the whole map (parts of a split array start at 0).
  # shellcheck disable=SC2034 # read by hpc_job.bash
  hpc_job_task_index=$i
  export map_item=$i
  if ((${hpc_plan_map_has_items:-0})); then
    local -a lines=()
    mapfile -t -s "$i" -n 1 lines <"$map_dir/items.txt" || hpc_job_fail "map" "cannot read $map_dir/items.txt"
    ((${#lines[@]})) || hpc_job_fail "map" "no item $i in $map_dir/items.txt"
    line=${lines[0]}
    map_item=$line
  fi
  if ((${hpc_plan_map_repeat:-0})); then
    # --repeat with a gather: what repeats get (hpc_job_own_folders makes checkpoints_dir/task_I).
    export seed=$i
  fi
  [[ ! -L $task_dir ]] || hpc_job_fail "map" "$task_dir is a symbolic link"
  mkdir -p -- "$task_dir" || hpc_job_fail "map" "cannot make $task_dir"
  hpc_followup_member_start
  hpc_map_status RUNNING '' '' || true
  hpc_job_log "map task $i of $map_count: $task_dir"
}

# hpc_map_task_index: sets hpc_map_index to this array task's index in the map: its task id,
# plus the part's first index (hpc_plan_map_offset, a map split above MaxArraySize), or the
# task id-th index of hpc_plan_map_indices (a resubmission of indices at or above MaxArraySize).
hpc_map_task_index() {
  local -a indices=()
  local task=${SLURM_ARRAY_TASK_ID:?}
  if [[ -n ${hpc_plan_map_indices:-} ]]; then
    read -ra indices <<<"$hpc_plan_map_indices"
    [[ -n ${indices[task]-} ]] ||
      hpc_job_fail "map" "array task $task has no index in the resubmission's list ($hpc_plan_map_indices)" ||
      return 1
    hpc_map_index=${indices[task]}
  else
    hpc_map_index=$((${hpc_plan_map_offset:-0} + task))
  fi
}

# hpc_map_status STATE EXIT_CODE END_UTC [END_S]: writes the task's status.json (a chunk's item:
# its own, naming its array task and the chunk's size).
hpc_map_status() {
  local log=${hpc_plan_map_log:-}
  local -a chunk=()
  ((${hpc_map_chunked:-0} == 0)) || chunk=("chunk:=$hpc_plan_map_chunk")
  log=${log//%A/${SLURM_ARRAY_JOB_ID:-}}
  log=${log//%a/${SLURM_ARRAY_TASK_ID:-}}
  hpc_followup_member_status "$task_dir/status.json" "$map_index" "$1" "$2" "$3" "${4:-}" "$log" \
    "index:=$map_index" "item=$map_item" "array_job_id=${SLURM_ARRAY_JOB_ID:-}" \
    "task_id=${SLURM_ARRAY_TASK_ID:-}" "attempt:=${hpc_plan_map_attempt:-1}" ${chunk[@]+"${chunk[@]}"} && return 0
  hpc_job_log "cannot write $task_dir/status.json"
  return 1
}

# hpc_map_task_end STATUS: (the batch shell, after the program) writes the task's final status.
# Returns STATUS, or 1 for a program that succeeded, when the file cannot be written: the gather
# would count the task LOST, so SLURM must not say COMPLETED.
hpc_map_task_end() {
  local end_utc end_s=${EPOCHREALTIME/,/.}
  hpc_followup_final_state "$1"
  hpc_followup_utc end_utc
  hpc_map_status "$hpc_followup_state" "$1" "$end_utc" "$end_s" && return 0
  hpc_job_log "FAILED at step 'map-status': the task's final status was not written"
  (($1 != 0)) || return 1
  return "$1"
}

# ---------------------------------------------------------------------------------------------
# A chunked map's task (--chunk K): its K items one after the other, each with its own variables,
# folders and status.json, started from this batch shell (no new bash per item).

# hpc_map_chunk_setup: (a chunked map's batch shell) the map's variables and this task's items:
# hpc_map_chunk_indices (the task id-th K indices: of the resubmission's list, hpc_plan_map_indices,
# else of the map's offset..offset+count-1) and their lines of items.txt (hpc_map_chunk_lines,
# read once for the whole chunk).
hpc_map_chunk_setup() {
  local task=${SLURM_ARRAY_TASK_ID:?} k=${hpc_plan_map_chunk:?} start i end
  local -a indices=()
  hpc_map_chunked=1 hpc_map_chunk_indices=() hpc_map_chunk_lines=() hpc_map_chunk_low=0
  export map_count=${hpc_plan_map_count:?}
  export map_dir=${hpc_plan_map_dir:-${hpc_plan_map_root:?}/${hpc_plan_map_stamp:?}-${SLURM_ARRAY_JOB_ID:?}}
  start=$((task * k))
  if [[ -n ${hpc_plan_map_indices:-} ]]; then
    read -ra indices <<<"$hpc_plan_map_indices"
    hpc_map_chunk_indices=("${indices[@]:start:k}")
  else
    end=$((start + k))
    ((end <= map_count)) || end=$map_count
    for ((i = start; i < end; i++)); do hpc_map_chunk_indices+=("$((${hpc_plan_map_offset:-0} + i))"); done
  fi
  ((${#hpc_map_chunk_indices[@]})) || hpc_job_fail "map" "array task $task has no items (chunks of $k)"
  if ((${hpc_plan_map_has_items:-0})); then
    # The indices are in ascending order: the lines from the first to the last, read once.
    hpc_map_chunk_low=${hpc_map_chunk_indices[0]}
    mapfile -t -s "$hpc_map_chunk_low" -n "$((hpc_map_chunk_indices[-1] - hpc_map_chunk_low + 1))" \
      hpc_map_chunk_lines <"$map_dir/items.txt" || hpc_job_fail "map" "cannot read $map_dir/items.txt"
  fi
  hpc_map_chunk_folders
  # The submitting shell's WANDB_DIR, if any, for every item (hpc_job_own_folders exports each
  # item's own, which the next item must not take for the submitting shell's).
  hpc_map_chunk_wandb=${WANDB_DIR-} hpc_map_chunk_wandb_set=${WANDB_DIR+1}
  local how='one after the other'
  ((${hpc_plan_map_chunk_stop:-0} == 0)) || how+=', the first failure stops the rest'
  hpc_job_log "map chunk: ${#hpc_map_chunk_indices[@]} item(s) of $map_count, indices ${hpc_map_chunk_indices[0]}" \
    "to ${hpc_map_chunk_indices[-1]}, $how"
}

# hpc_map_chunk_folders: (hpc_map_chunk_setup) makes the chunk's items' task folders and
# checkpoints folders (hpc_job_own_folders' task_I, not writable by others) in two processes, not
# two per item; each item still checks its own as it starts (never a link).
hpc_map_chunk_folders() {
  local i
  local -a tasks=() checkpoints=()
  for i in "${hpc_map_chunk_indices[@]}"; do
    tasks+=("$map_dir/tasks/$i") checkpoints+=("$scratch_dir/$exp_name/checkpoints/task_$i")
  done
  mkdir -p -- "${tasks[@]}" 2>/dev/null || true
  (umask go-w && mkdir -p -- "${checkpoints[@]}") 2>/dev/null || true
}

# hpc_map_item_vars INDEX: a chunk's item's variables (map_index, map_item, task_dir; seed for
# repeats); false when its line of items.txt is missing.
hpc_map_item_vars() {
  local i=$1
  export map_index=$i task_dir=$map_dir/tasks/$i map_item=$i
  # shellcheck disable=SC2034 # read by hpc_job.bash: the item's own folders
  hpc_job_task_index=$i
  ((${hpc_plan_map_repeat:-0} == 0)) || export seed=$i
  ((${hpc_plan_map_has_items:-0})) || return 0
  [[ -n ${hpc_map_chunk_lines[i - hpc_map_chunk_low]+x} ]] || return 1
  map_item=${hpc_map_chunk_lines[i - hpc_map_chunk_low]}
}

# hpc_map_item_begin INDEX N OF: (a chunk) the item's variables, its own folders and its status
# RUNNING; false (logged) when they cannot be made: the item does not run.
hpc_map_item_begin() {
  hpc_map_item_vars "$1" || {
    hpc_job_log "map item $1: no line $1 in $map_dir/items.txt: not run"
    return 1
  }
  if [[ -L $task_dir ]] || ! { [[ -d $task_dir ]] || mkdir -p -- "$task_dir"; }; then
    hpc_job_log "map item $1: $task_dir is a symbolic link or cannot be made: not run"
    return 1
  fi
  if [[ -n $hpc_map_chunk_wandb_set ]]; then export WANDB_DIR=$hpc_map_chunk_wandb; else unset WANDB_DIR; fi
  hpc_job_own_folders
  hpc_followup_member_start
  hpc_map_status RUNNING '' '' || true
  hpc_job_log "map item $1 ($2 of $3 in this task): $task_dir"
  hpc_job_task_variables_log
}

# hpc_map_item_end STATUS: (a chunk's item ended) its status: COMPLETED or FAILED by its exit
# STATUS, or SLURM's when SLURM ended the job, or PREEMPTED when the run was preempted (its
# program may have stopped early and exited 0: the requeued run runs it again);
# hpc_followup_final_state asks scontrol then only. False when it cannot be written.
hpc_map_item_end() {
  local end_utc state=COMPLETED
  ((${1} == 0)) || state=FAILED
  if ((${hpc_job_ended_by_slurm:-0} || ${hpc_job_preempted:-0})); then
    hpc_followup_final_state "$1"
    state=$hpc_followup_state
  fi
  hpc_followup_utc end_utc
  hpc_map_status "$state" "$1" "$end_utc" "${EPOCHREALTIME/,/.}" && return 0
  hpc_job_log "map item $map_index: its final status was not written"
  return 1
}

# hpc_map_item_done INDEX: (a chunk's task requeued: SLURM_RESTART_COUNT > 0) true, logged, when
# item INDEX's status.json says this array task completed it in this attempt, in an earlier run
# (read as the reader does: a regular file, not a link): it is not run again.
hpc_map_item_done() {
  local file=$map_dir/tasks/$1/status.json text=''
  [[ -f $file && ! -L $file && ! -L ${file%/*} ]] || return 1
  IFS= read -r -d '' text <"$file" || true
  [[ $text =~ \"state\":\ \"COMPLETED\" && $text == *"\"array_job_id\": \"${SLURM_ARRAY_JOB_ID:-}\""* &&
    $text == *"\"task_id\": \"${SLURM_ARRAY_TASK_ID:-}\""* && $text =~ \"attempt\":\ ([0-9]+) &&
    ${BASH_REMATCH[1]} == "${hpc_plan_map_attempt:-1}" ]] || return 1
  hpc_job_log "map item $1: COMPLETED by this task in an earlier run (restart $SLURM_RESTART_COUNT): not run again"
}

# hpc_map_item_not_run INDEX: (a chunk stopped: the time-limit warning, SLURM's TERM, a failure
# with --chunk-stop-on-failure) the item's status NOT_RUN, so that resubmit --failed runs it.
hpc_map_item_not_run() {
  hpc_map_item_vars "$1" || true
  [[ ! -L $task_dir ]] && { [[ -d $task_dir ]] || mkdir -p -- "$task_dir"; } || return 0
  hpc_followup_start_utc='' hpc_followup_start_s=''
  hpc_map_status NOT_RUN '' '' || true
}

# hpc_map_chunk_run: (the batch shell of a chunked map's task, in place of hpc_job_run_program)
# runs its items one after the other, each as the program alone would run (its own status). A
# failed item does not stop the rest, unless --chunk-stop-on-failure; after the time-limit
# warning the running item ends as it will and the rest are NOT_RUN. After SLURM's TERM the rest
# get no file (LOST to the reader, and resubmit --failed takes them): the time until SLURM's KILL
# is phase 3's, which must still clean up the nodes. Sets
# hpc_job_status: the last item's when it was stopped, else the first failure's; 1 when items
# were not run or their status not written although the last one succeeded (never COMPLETED for
# items that did not run).
hpc_map_chunk_run() {
  local n=${#hpc_map_chunk_indices[@]} k status=0 first=0 ok=0 failed=0 not_run=0 stop=0 stopped=0
  for ((k = 0; k < n; k++)); do
    # Done in an earlier run (requeued): first, so that a stop never writes NOT_RUN over its success.
    if ((${SLURM_RESTART_COUNT:-0} > 0)) && hpc_map_item_done "${hpc_map_chunk_indices[k]}"; then
      ok=$((ok + 1))
      continue
    fi
    if ((stop || hpc_job_warned || hpc_job_ended_by_slurm)); then
      ((hpc_job_ended_by_slurm)) || hpc_map_item_not_run "${hpc_map_chunk_indices[k]}"
      not_run=$((not_run + 1))
      continue
    fi
    if hpc_map_item_begin "${hpc_map_chunk_indices[k]}" "$((k + 1))" "$n"; then
      # shellcheck disable=SC2034 # read by hpc_job_task: the first item's command line is logged
      hpc_job_say_start=$((k == 0))
      hpc_job_run_program
      status=$hpc_job_status
      hpc_map_item_end "$status" || ((status)) || status=1
    else
      status=1
    fi
    if ((status == 0)); then
      ok=$((ok + 1))
    else
      failed=$((failed + 1))
      ((first)) || first=$status
      ((${hpc_plan_map_chunk_stop:-0} == 0)) || stop=1
    fi
  done
  ((hpc_job_warned || hpc_job_ended_by_slurm)) && stopped=1
  local how=NOT_RUN
  ((hpc_job_ended_by_slurm == 0)) || how='not run (no status: SLURM ended the task)'
  hpc_job_log "map chunk: $ok item(s) COMPLETED, $failed failed, $not_run $how"
  # Stopped by a signal: the running item's status tells how (hpc_job_main's last line).
  if ((stopped && status != 0)); then hpc_job_status=$status; else hpc_job_status=$first; fi
  ((hpc_job_status != 0 || failed + not_run == 0)) || hpc_job_status=1
}

# hpc_map_gather_setup: (the gather's batch shell) reads the tasks' status files into
# map_status.tsv/.json, exports the gather's variables, and ends the job FAILED, with the
# verdict line, when the policy is not met.
hpc_map_gather_setup() {
  local line name value
  export map_dir=${hpc_plan_map_dir:?} map_count=${hpc_plan_map_count:?}
  hpc_followup_read "$map_dir/tasks" "$hpc_plan_map_keys" "$hpc_plan_map_policy" \
    "$map_dir/map_status" "$hpc_plan_map_rerun"
  ((hpc_followup_rc != 2)) || hpc_job_fail "gather" "the tasks' status files could not be read (see above)"
  while IFS= read -r line; do
    name=${line%%=*} value=${line#*=}
    case $name in
      ok) export map_ok=$value ;;
      failed) export map_failed=$value ;;
      n_ok) export map_n_ok=$value ;;
      n_failed) export map_n_failed=$value ;;
      status_file) export map_status_file=$value ;;
    esac
  done <<<"$hpc_followup_vars"
  ((hpc_followup_rc == 0)) || exit 1
}
