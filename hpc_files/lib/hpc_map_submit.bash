# shellcheck shell=bash
# shellcheck disable=SC2034 # hpc_plan_* and hpc_map_* set here are read by hpc_plan.bash, hpc_submit.bash and the job
# hpc_map_submit.bash: map + gather at submission (the management commands and the job's side:
# hpc_map.bash, which loads this file too; the submitter loads only this one).
# Map + gather: --map-range A-B or --map-over FILE is one array job (one task per
# index or per item, a throttle always set); --gather CMD or --gather-configs FILE adds one gather
# job that runs when the array has ended, whatever its tasks' fate (hpc_followup.bash: afterany,
# --kill-on-invalid-dep=yes), applies the --gather-when policy to what the tasks wrote, and runs
# the command only when it is met. Loaded by the submitter only for these options, and by the job
# only for the modes 'map' and 'gather'.
#
# The map's folder, map_dir = ${scratch_dir}/hpc_outputs/map/<exp_name>/<map_id> with map_id =
# YYYYmmdd-HHMMSS-<array job id>, holds manifest.json, items.txt (the frozen list: comments and
# blank lines dropped, one item per line), tasks/<i>/status.json (hpc_followup.bash) and
# tasks/<i>/result.json (written by the task through hpc_helpers.mapreduce), map_status.tsv/.json
# (the gather's first step) and gather_<jobid>.out. The array is submitted held (--hold), its
# folder made, the gather submitted, then the array released: a task never starts before its
# items are frozen, and a failure in between cancels what was submitted.
#
# Task variables: map_index (SLURM_ARRAY_TASK_ID), map_item (line map_index of items.txt, else
# the index), map_count, map_dir, task_dir = ${map_dir}/tasks/${map_index}. Gather variables:
# map_dir, map_count, map_ok, map_failed (space-separated indices), map_n_ok, map_n_failed,
# map_status_file.

# What this library reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# The submitter's paths, argv, options, plan and profile; the configs file's argv
# (hpc_configs.bash); the job's plan (hpc_plan_map_*); hpc_manage.bash and hpc_manifest.bash
# (resubmit); hpc_followup_utc: the start time; hpc_plan.bash: the plan's record and file.
declare -g hpc_opt_count_max hpc_source_dir hpc_python_helpers_dir hpc_opt_time_accepted hpc_opt_wandb_offline \
  hpc_plan_cluster hpc_plan_exp_name hpc_plan_outputs_dir hpc_plan_partition hpc_plan_runner \
  hpc_plan_script hpc_plan_source_dir hpc_plan_mem_per_gpu hpc_profile_defaults_mem_no_gpu \
  hpc_profile_name hpc_plan_map_keys hpc_plan_map_policy hpc_plan_map_rerun \
  hpc_manage_dir hpc_plan_text hpc_plan_file hpc_files_dir hpc_plan_gpu_type hpc_slurm_fresh hpc_slurm_raw \
  hpc_plan_misfit_option hpc_plan_misfit hpc_plan_file_text \
  hpc_manage_project hpc_manifest_path hpc_manifest_ranges hpc_configs_max_word hpc_opt_chunk_stop_on_failure
declare -ga hpc_submit_argv hpc_configs_argv hpc_configs_names hpc_manage_keys hpc_mf_lines hpc_mf_argv
declare -gA hpc_mf

# shellcheck source=hpc_files/lib/hpc_followup.bash
source "${BASH_SOURCE[0]%/*}/hpc_followup.bash"
# shellcheck source=hpc_files/lib/hpc_group.bash
source "${BASH_SOURCE[0]%/*}/hpc_group.bash"

# The map's fields of the plan (hpc_plan.bash's list, where it is loaded: the submitter's). A
# task's: map_root, map_stamp (its folder, once the array's id is known), map_count,
# map_has_items, map_attempt, map_log, map_repeat, map_offset (a part's first index),
# map_indices (a resubmission's indices above MaxArraySize, or a chunked one's), map_dir (set by
# a part or a resubmission), map_chunk (items per task: 0, one item a task) and map_chunk_stop (a
# failed item ends its chunk); the gather's: map_dir, map_keys, map_count, map_policy, map_rerun, map_array_ids.
! declare -F hpc_plan_add_fields >/dev/null ||
  hpc_plan_add_fields map_root map_stamp map_count map_has_items map_attempt map_log map_repeat \
    map_offset map_indices map_dir map_keys map_policy map_rerun map_array_ids map_chunk map_chunk_stop

# ---------------------------------------------------------------------------------------------
# Submission

# hpc_map_read_items FILE: reads the list FILE into hpc_map_items: one item per line, exactly as
# written (a CR before the newline dropped), without blank lines and lines whose first non-blank
# character is '#'. Exit 2 when FILE is missing, not a regular file, holds a NUL byte (which Bash
# cannot hold: the item would be cut short), holds no item, or an item longer than the most
# Linux passes as one argument (hpc_configs_max_word: the task would fail at its start with
# 'Argument list too long').
hpc_map_read_items() {
  local file=$1 line n=0
  local -a lines
  [[ -e $file ]] || hpc_die_usage "--map-over" "'$file': no such file; accepted: a list file, one item per line"
  [[ -f $file && -r $file ]] ||
    hpc_die_usage "--map-over" "'$file' is not a readable regular file; accepted: a list file, one item per line"
  if ! cmp -s -- "$file" <(LC_ALL=C tr -d '\000' <"$file"); then
    hpc_die_usage "--map-over" \
      "'$file' holds a NUL byte (a binary file?); accepted: a text list file, one item per line"
  fi
  mapfile -t lines <"$file"
  hpc_map_items=()
  for line in "${lines[@]}"; do
    n=$((n + 1))
    line=${line%$'\r'}
    if ! ((${#line} <= hpc_configs_max_word)); then
      local msg="'$file' line $n: an item of ${#line} bytes, longer than $hpc_configs_max_word, the"
      msg+=" most Linux passes as one argument; accepted: items of at most $hpc_configs_max_word bytes"
      hpc_die_usage "--map-over" "$msg"
    fi
    [[ $line == *[![:space:]]* ]] || continue
    [[ $line =~ ^[[:space:]]*# ]] && continue
    hpc_map_items+=("$line")
  done
  ((${#hpc_map_items[@]})) ||
    hpc_die_usage "--map-over" \
      "'$file' has no items (only blank lines and comments); accepted: a list file, one item per line"
}

# hpc_map_parse_command OPTION TEXT: reads TEXT, a command written as in the configs file, into
# hpc_map_gather_words (templates; nothing evaluated). Exit 2 naming OPTION on a malformed one.
hpc_map_parse_command() {
  local LC_ALL=C option=$1 _hpc_configs_text=$2
  local -a _hpc_configs_lines=() _hpc_configs_found=()
  local -A _hpc_configs_run_text=() _hpc_configs_run_lines=()
  local _hpc_configs_next=0 _hpc_configs_long='' _hpc_configs_rest='' _hpc_configs_line=0
  local _hpc_configs_at=0 _hpc_configs_size=0
  local _hpc_configs_word='' _hpc_configs_depth=0 _hpc_configs_error=''
  [[ $_hpc_configs_text == *$'\n' ]] || _hpc_configs_text+=$'\n'
  _hpc_configs_split_lines
  _hpc_configs_parse || true
  [[ -z $_hpc_configs_error ]] ||
    hpc_die_usage "$option" "$_hpc_configs_error; accepted: one command written as in a shell"
  ((${#_hpc_configs_found[@]})) ||
    hpc_die_usage "$option" "no command in it; accepted: one command written as in a shell"
  hpc_map_gather_words=("${_hpc_configs_found[@]}")
}

# hpc_map_gather_option_given: sets hpc_map_given to the first gather setting given
# (--gather-when, --gather-cpus, --gather-gpus or --gather-time), for a message.
hpc_map_gather_option_given() {
  local name variable
  for name in when cpus gpus time; do
    variable=hpc_opt_gather_$name
    hpc_map_given=--gather-$name
    [[ -z ${!variable} ]] || return 0
  done
}

# hpc_map_check_options: the map and gather options on their own and together; exit 2 with one
# line on bad input. Sets hpc_map_first, hpc_map_last, hpc_map_count and hpc_map_items.
hpc_map_check_options() {
  local re='^([0-9]{1,9})-([0-9]{1,9})$'
  hpc_map_items=()
  if [[ -n $hpc_opt_map_range && -n $hpc_opt_map_over ]]; then
    hpc_die_usage "--map-range/--map-over" "choose one: a range of indices or a list file"
  fi
  hpc_map_repeat=0
  if [[ -n $hpc_opt_repeat && -z $hpc_opt_map_range$hpc_opt_map_over &&
    -n $hpc_opt_gather$hpc_opt_gather_configs ]]; then
    # --repeat K with a gather: a map over 0..K-1 whose tasks also get seed and their own
    # checkpoints_dir, as repeats do.
    hpc_opt_map_range=0-$((hpc_opt_repeat - 1)) hpc_opt_repeat='' hpc_map_repeat=1
  fi
  if [[ -z $hpc_opt_map_range$hpc_opt_map_over ]]; then
    [[ -z $hpc_opt_chunk ]] ||
      hpc_die_usage "--chunk" "runs a map's items several per task; accepted with --map-range or --map-over"
    ((hpc_opt_chunk_stop_on_failure == 0)) ||
      hpc_die_usage "--chunk-stop-on-failure" "is for a chunked map; accepted with --chunk and a map"
    [[ -z $hpc_opt_gather$hpc_opt_gather_configs ]] ||
      hpc_die_usage "--gather" "needs a map or repeats to gather; accepted with --map-range, --map-over or --repeat"
    hpc_map_gather_option_given
    hpc_die_usage "$hpc_map_given" "is for a gather; accepted with --map-range or --map-over and --gather"
  fi
  if [[ -n $hpc_opt_wandb_sweepid || $hpc_opt_wandb_offline == 1 || -n $hpc_opt_repeat ]]; then
    hpc_die_usage "--map-range/--map-over" "a map is its own array; accepted without -w, --wandb-offline and --repeat"
  fi
  if [[ -n $hpc_opt_map_range ]]; then
    if ! [[ $hpc_opt_map_range =~ $re ]] || ((10#${BASH_REMATCH[1]} > 10#${BASH_REMATCH[2]})); then
      hpc_die_usage "--map-range" \
        "'$hpc_opt_map_range' is not accepted; accepted: A-B, whole numbers with A <= B, e.g. 0-3"
    fi
    hpc_map_first=$((10#${BASH_REMATCH[1]})) hpc_map_last=$((10#${BASH_REMATCH[2]}))
  else
    hpc_map_read_items "$hpc_opt_map_over"
    hpc_map_first=0 hpc_map_last=$((${#hpc_map_items[@]} - 1))
  fi
  hpc_map_count=$((hpc_map_last - hpc_map_first + 1))
  if [[ $hpc_opt_chunk =~ ^[0-9]+$ ]] && ((hpc_opt_chunk > hpc_map_count)); then
    hpc_die_usage "--chunk" \
      "$hpc_opt_chunk items per task is more than the map has ($hpc_map_count); accepted: auto or 1 to $hpc_map_count"
  fi
  [[ -n $hpc_opt_chunk ]] || ((hpc_opt_chunk_stop_on_failure == 0)) ||
    hpc_die_usage "--chunk-stop-on-failure" "is for a chunked map; accepted with --chunk"
  if [[ -n $hpc_opt_gather && -n $hpc_opt_gather_configs ]]; then
    hpc_die_usage "--gather/--gather-configs" "choose one: the command, or a file holding it"
  fi
  if [[ -z $hpc_opt_gather$hpc_opt_gather_configs &&
    -n $hpc_opt_gather_when$hpc_opt_gather_cpus$hpc_opt_gather_gpus$hpc_opt_gather_time ]]; then
    hpc_map_gather_option_given
    hpc_die_usage "$hpc_map_given" "is for a gather; accepted with --gather or --gather-configs"
  fi
  hpc_map_policy=${hpc_opt_gather_when:-all-ok}
  if [[ $hpc_map_policy =~ ^min-ok=([0-9]{1,9})%$ ]]; then
    ((10#${BASH_REMATCH[1]} >= 1 && 10#${BASH_REMATCH[1]} <= 100)) ||
      hpc_die_usage "--gather-when" "'$hpc_map_policy': a percentage must be 1 to 100"
  elif [[ $hpc_map_policy =~ ^min-ok=([0-9]{1,9})$ ]]; then
    ((10#${BASH_REMATCH[1]} >= 1)) ||
      hpc_die_usage "--gather-when" \
        "'$hpc_map_policy': at least 1 task must be ok; accepted: min-ok=1 to min-ok=$hpc_map_count"
    if ! ((10#${BASH_REMATCH[1]} <= hpc_map_count)); then
      local msg="'$hpc_map_policy' asks for more tasks than the map has"
      msg+=" ($hpc_map_count); accepted: min-ok=1 to min-ok=$hpc_map_count"
      hpc_die_usage "--gather-when" "$msg"
    fi
  elif [[ $hpc_map_policy != all-ok && $hpc_map_policy != always ]]; then
    hpc_die_usage "--gather-when" "'$hpc_map_policy' is not accepted; accepted: all-ok, always, min-ok=K or min-ok=P%"
  fi
  if [[ -n $hpc_opt_gather_cpus ]]; then
    hpc_opt_is_count "$hpc_opt_gather_cpus" 1 ||
      hpc_die_usage "--gather-cpus" \
        "'$hpc_opt_gather_cpus' is not accepted; accepted: a whole number of CPUs, 1 to $hpc_opt_count_max"
  fi
  if [[ -n $hpc_opt_gather_gpus ]]; then
    hpc_opt_is_count "$hpc_opt_gather_gpus" 0 ||
      hpc_die_usage "--gather-gpus" \
        "'$hpc_opt_gather_gpus' is not accepted; accepted: a whole number of GPUs, 0 to $hpc_opt_count_max"
  fi
  if [[ -n $hpc_opt_gather_time ]]; then
    hpc_opt_check_time "$hpc_opt_gather_time" ||
      hpc_die_usage "--gather-time" "'$hpc_opt_gather_time' is not accepted; accepted: $hpc_opt_time_accepted"
  fi
  hpc_map_gather_words=()
  if [[ -n $hpc_opt_gather ]]; then
    hpc_map_parse_command --gather "$hpc_opt_gather"
  elif [[ -n $hpc_opt_gather_configs ]]; then
    local saved=("${hpc_configs_words[@]}") rc=0
    hpc_configs_read "$hpc_opt_gather_configs" 2>/dev/null || rc=$?
    if ((rc)); then
      # The reader's own message names -C/--configs: read again for it, under this option's name.
      local message
      message=$(hpc_configs_read "$hpc_opt_gather_configs" 2>&1) || true
      message=${message#*: -C/--configs: }
      hpc_die_usage "--gather-configs" "$message"
    fi
    hpc_map_gather_words=("${hpc_configs_words[@]}")
    hpc_configs_words=("${saved[@]}")
  fi
}

# hpc_map_plan: after hpc_plan_make: the array (range and throttle), the tasks' output files,
# and the lines of the tasks' job script that say which map they belong to.
hpc_map_plan() {
  local throttle i max
  hpc_plan_mode=map
  throttle=${hpc_opt_max_concurrent:-${hpc_profile_array_throttle:-10}}
  if [[ -n $hpc_opt_gather_gpus && -n $hpc_profile_gpu_max_per_node ]] &&
    ((hpc_opt_gather_gpus > hpc_profile_gpu_max_per_node)); then
    local msg="$hpc_opt_gather_gpus GPUs is more than a node of cluster"
    msg+=" $hpc_profile_name has; accepted: 0 to $hpc_profile_gpu_max_per_node"
    hpc_die_usage "--gather-gpus" "$msg"
  fi
  hpc_manifest_check_array_size 1 0
  # K items per task (--chunk): hpc_map_tasks array tasks.
  hpc_map_chunk_plan "$throttle"
  hpc_map_fit_room
  max=${hpc_manifest_max_job_count:-}
  # A kept MaxJobCount is asked again before refusing (hpc_manifest_limits_recheck).
  if [[ -n $max ]] && ((hpc_map_tasks > max)) && hpc_manifest_limits_recheck; then
    hpc_manifest_check_array_size 1 0
    max=${hpc_manifest_max_job_count:-}
  fi
  # More tasks than SLURM keeps jobs could never all be submitted (and each part is an sbatch).
  if [[ -n $max ]] && ((hpc_map_tasks > max)); then
    local option=--map-range
    [[ -z $hpc_opt_map_over ]] || option=--map-over
    ((hpc_map_repeat == 0)) || option=--repeat
    ((hpc_map_chunk == 0)) || option=--chunk
    hpc_die_usage "$option" \
      "$hpc_map_tasks tasks are more than this cluster can hold (MaxJobCount $max); accepted: at most $max tasks"
  fi
  [[ -z $hpc_map_chunk_note ]] || hpc_say "$hpc_map_chunk_note"
  max=${hpc_manifest_max_array_size:-}
  # Indices at or above MaxArraySize: several arrays (parts) of at most MaxArraySize tasks,
  # task ids from 0, each part's first index added in the job (hpc_plan_map_offset). A part
  # starts after the one before it (afterany), so that the throttle holds for the whole map.
  hpc_map_parts=()
  if ((hpc_map_chunk)); then
    # Task t runs items first+t*K .. first+t*K+K-1 (hpc_map_chunk_indices): ids 0..T-1.
    hpc_plan_array=0-$((hpc_map_tasks - 1))%$throttle
  elif [[ -n $max ]] && ((hpc_map_last >= max && max > 0)); then
    local start
    for ((start = hpc_map_first; start <= hpc_map_last; start += max)); do
      hpc_map_parts+=("$start-$((start + max - 1 < hpc_map_last ? start + max - 1 : hpc_map_last))")
    done
    hpc_plan_array=0-$((max - 1 < hpc_map_last - hpc_map_first ? max - 1 : hpc_map_last - hpc_map_first))%$throttle
  else
    hpc_plan_array=$hpc_map_first-$hpc_map_last%$throttle
  fi
  hpc_plan_array_count=$hpc_map_count
  hpc_plan_output=${hpc_plan_output%_%j.out}_%A_%a.out
  for i in "${!hpc_plan_sbatch_args[@]}"; do
    [[ ${hpc_plan_sbatch_args[i]} != --output=* ]] || hpc_plan_sbatch_args[i]=--output=$hpc_plan_output
  done
  hpc_plan_sbatch_args+=(--array="$hpc_plan_array")
  printf -v hpc_map_stamp '%(%Y%m%d-%H%M%S)T' -1
  hpc_map_root=$hpc_plan_outputs_dir/map/$hpc_plan_exp_name
  # Its folder is removed when the submission fails: never one reached through a link.
  hpc_group_check_root "$hpc_map_root" "map's"
  hpc_plan_map_root=$hpc_map_root hpc_plan_map_stamp=$hpc_map_stamp hpc_plan_map_count=$hpc_map_count
  hpc_plan_map_has_items=$((${#hpc_map_items[@]} > 0)) hpc_plan_map_attempt=1 hpc_plan_map_log=$hpc_plan_output
  hpc_plan_map_repeat=$hpc_map_repeat hpc_plan_map_offset=$((${#hpc_map_parts[@]} ? hpc_map_first : 0))
  hpc_plan_map_chunk=$hpc_map_chunk hpc_plan_map_chunk_stop=$hpc_opt_chunk_stop_on_failure
  ((hpc_map_chunk == 0)) || hpc_plan_map_offset=$hpc_map_first
  # Held until its folder and items exist and its gather is submitted (hpc_map_after_submit).
  hpc_submit_hold=(--hold)
  hpc_map_check_gather_references
}

# hpc_map_chunk_rule COUNT THROTTLE MAX: sets hpc_map_chunk_auto to --chunk auto's K for COUNT
# items: as few tasks as keep the parallelism allowed (THROTTLE tasks at once: more tasks would
# only pay more starts) and fit MaxArraySize MAX (empty: unknown), so the larger of
# ceil(COUNT/THROTTLE) and ceil(COUNT/MAX).
hpc_map_chunk_rule() {
  local count=$1 throttle=$2 max=${3:-}
  ((throttle > 0)) || throttle=1
  hpc_map_chunk_auto=$(((count + throttle - 1) / throttle))
  [[ -z $max ]] || ((max <= 0 || (count + max - 1) / max <= hpc_map_chunk_auto)) ||
    hpc_map_chunk_auto=$(((count + max - 1) / max))
}

# hpc_map_chunk_plan THROTTLE: (hpc_map_plan, MaxArraySize known) sets hpc_map_chunk (K items per
# task, 0 without --chunk) and hpc_map_tasks (the array's tasks); exit 2 when --chunk K makes more
# tasks than MaxArraySize. Without --chunk, for a map of many items, hpc_map_chunk_note: the line
# that says --chunk auto would run them in fewer tasks (said once the map is accepted).
hpc_map_chunk_plan() {
  local throttle=$1 max=${hpc_manifest_max_array_size:-}
  hpc_map_chunk=0 hpc_map_tasks=$hpc_map_count hpc_map_chunk_note=''
  hpc_map_chunk_rule "$hpc_map_count" "$throttle" "$max"
  if [[ -z $hpc_opt_chunk ]]; then
    if ((hpc_map_count >= 100 && hpc_map_chunk_auto >= 4)); then
      hpc_map_chunk_note="note: $hpc_map_count items are $hpc_map_count array tasks (at most $throttle at once),"
      hpc_map_chunk_note+=" each paying a job's start; for short items, --chunk auto runs them"
      hpc_map_chunk_note+=" $hpc_map_chunk_auto per task"
    fi
    return 0
  fi
  hpc_map_chunk=$hpc_opt_chunk
  [[ $hpc_map_chunk != auto ]] || hpc_map_chunk=$hpc_map_chunk_auto
  hpc_map_tasks=$(((hpc_map_count + hpc_map_chunk - 1) / hpc_map_chunk))
  if [[ -n $max ]] && ((max > 0 && hpc_map_tasks > max)); then
    local msg="$hpc_map_chunk items per task make $hpc_map_tasks tasks, more than MaxArraySize $max;"
    msg+=" accepted: auto or $(((hpc_map_count + max - 1) / max)) to $hpc_map_count"
    hpc_die_usage "--chunk" "$msg"
  fi
}

# hpc_map_submit.bash's own reading of the plan: the account (-a/--account) the map is charged to.
declare -g hpc_plan_account

# hpc_map_fit_room: (hpc_map_plan, after hpc_map_chunk_plan) where a limit on the jobs the user
# may have submitted at once is known (hpc_map_submit_room; each array task counts as one job),
# the map's tasks and its gather must fit in what is left of it: with --chunk auto, K items per
# task so that they do (hpc_map_chunk_note says so); a map with a gather that does not fit is
# refused before anything is submitted (SLURM would take its array, then refuse the gather), in
# one line naming the limit and the fix. A map without a gather is left to sbatch, whose
# refusal of the array leaves nothing behind (hpc_slurm_sbatch says the fix).
hpc_map_fit_room() {
  local gather=$((${#hpc_map_gather_words[@]} > 0)) fit what="the map's array" user
  [[ $hpc_opt_chunk == auto ]] || ((gather)) || return 0
  hpc_user_name user
  hpc_map_submit_room
  [[ -n $hpc_map_room ]] && ((hpc_map_tasks + gather > hpc_map_room)) || return 0
  fit=$((hpc_map_room - gather))
  ((gather == 0)) || what+=" and its gather"
  if [[ $hpc_opt_chunk != auto ]]; then
    hpc_die "the map's $hpc_map_tasks tasks and its gather are $((hpc_map_tasks + 1)) jobs, more than the" \
      "$hpc_map_room left under $hpc_map_room_limit; --chunk auto runs its items several per task, within" \
      "the limit (or submit it once earlier jobs have ended: squeue -u $user shows them); nothing was submitted"
  fi
  if ((fit < 1)); then
    hpc_die "--chunk auto: no room for $what: $hpc_map_room_limit;" \
      "submit it once earlier jobs have ended (squeue -u $user shows them)"
  fi
  hpc_map_chunk=$(((hpc_map_count + fit - 1) / fit))
  hpc_map_tasks=$(((hpc_map_count + hpc_map_chunk - 1) / hpc_map_chunk))
  hpc_map_chunk_note="note: --chunk auto: $hpc_map_chunk items per task, so that the $hpc_map_tasks tasks"
  ((gather == 0)) || hpc_map_chunk_note+=" and the gather"
  hpc_map_chunk_note+=" fit $hpc_map_room_limit"
}

# hpc_map_submit_room: sets hpc_map_room to how many more jobs (each array task one) the user may
# submit now under the tightest limit on submitted jobs that the accounting shows for this
# submission: its QOS's MaxSubmitJobsPerUser (the QOS: SBATCH_QOS, else the association's
# default) and its association's MaxSubmitJobs (the account: -a, SBATCH_ACCOUNT, else the user's
# default; the row of the plan's partition, else the one of no partition), less the user's jobs
# that squeue shows in that QOS or account; hpc_map_room_limit to its words ('MaxSubmitJobsPerUser
# 4 of QOS limited, 1 already submitted'). Empty where none is known (no accounting: sacctmgr
# fails; or no limit): sbatch judges.
hpc_map_submit_room() {
  local user out qos=${SBATCH_QOS:-} account=${hpc_plan_account:-${SBATCH_ACCOUNT:-}}
  local part=${hpc_plan_partition:-} default row_account row_part max def_qos used room
  hpc_user_name user
  local assoc_max='' qos_max='' part_row='' plain_row=''
  hpc_map_room='' hpc_map_room_limit=''
  out=$(hpc_slurm -t 20 sacctmgr -n -P show user "$user" withassoc \
    format=DefaultAccount,Account,Partition,MaxSubmit,DefaultQOS 2>/dev/null) || return 0
  while IFS='|' read -r default row_account row_part max def_qos; do
    [[ -n $row_account ]] || continue
    account=${account:-$default}
    [[ $row_account == "$account" ]] || continue
    if [[ -n $part && $row_part == "$part" ]]; then
      part_row=$max\|$def_qos
    elif [[ -z $row_part ]]; then
      plain_row=$max\|$def_qos
    fi
  done <<<"$out"
  # The partition's own row wins over the account's row of no partition.
  IFS='|' read -r max def_qos <<<"${part_row:-$plain_row}"
  # SLURM's limits are 32-bit numbers: anything longer is garbage, not a limit (bash would wrap
  # it); read in base 10 (a leading 0 is no octal).
  [[ ! $max =~ ^[0-9]{1,10}$ ]] || assoc_max=$((10#$max))
  qos=${qos:-$def_qos}
  if [[ -n $qos ]]; then
    out=$(hpc_slurm -t 20 sacctmgr -n -P show qos "$qos" format=MaxSubmitPU 2>/dev/null) || out=''
    out=${out%%$'\n'*}
    [[ ! $out =~ ^[0-9]{1,10}$ ]] || qos_max=$((10#$out))
  fi
  [[ -n $assoc_max$qos_max ]] || return 0
  # The user's jobs SLURM holds now, each array task on a line of its own.
  out=$(hpc_slurm -t 60 squeue -h -r -u "$user" -o '%q|%a' 2>/dev/null) || return 0
  if [[ -n $qos_max ]]; then
    used=$(awk -F'|' -v q="$qos" '$1 == q { n++ } END { print n + 0 }' <<<"$out")
    room=$((qos_max - used))
    hpc_map_room=$room hpc_map_room_limit="MaxSubmitJobsPerUser $qos_max of QOS $qos, $used already submitted"
  fi
  if [[ -n $assoc_max ]]; then
    used=$(awk -F'|' -v a="$account" '$2 == a { n++ } END { print n + 0 }' <<<"$out")
    room=$((assoc_max - used))
    if [[ -z $hpc_map_room ]] || ((room < hpc_map_room)); then
      hpc_map_room=$room hpc_map_room_limit="MaxSubmitJobs $assoc_max of account $account, $used already submitted"
    fi
  fi
  ((hpc_map_room >= 0)) || hpc_map_room=0
}

# hpc_map_check_gather_fit: (after hpc_submit_check_fit, which leaves what sinfo said in
# hpc_slurm_text) exit 2 when the gather asks for more CPUs, GPUs or memory than the largest
# node of the partition has, or GPUs of a type (-G) that it lacks.
hpc_map_check_gather_fit() {
  # The plan's partition (-p, the profile's or SBATCH_PARTITION: hpc_plan_make), else the default.
  local text=$'\n'${hpc_slurm_text:-}$'\n' part=${hpc_plan_partition:-} line cpus mb gpus types
  local hpc_plan_mb gather_gpus=${hpc_opt_gather_gpus:-0}
  ((${#hpc_map_gather_words[@]})) || return 0
  if [[ -z $part ]]; then
    part=${hpc_slurm_text%%$'\n'*}
    part=${part#d}
    part=${part# }
  fi
  [[ -n $part && $text == *$'\n'"p $part "* ]] || return 0
  line=${text#*$'\n'"p $part "}
  read -r _ cpus mb gpus types <<<"${line%%$'\n'*}"
  # The gather's GPUs are of the tasks' type (-G, or the profile's gpu.default_type), judged as
  # the tasks' are (hpc_fit_gpu_type); a refusal from the cache is judged again from a fresh sinfo.
  if ((gather_gpus > 0)) && [[ -n ${hpc_plan_gpu_type:-} ]]; then
    # hpc_fit.bash is checked on its own: followed from here (and from hpc_map.bash, which
    # sources this file), its local arrays n, c, m, g would pass for those files' scalars.
    # shellcheck source=/dev/null
    source "$hpc_files_dir/lib/hpc_fit.bash"
    hpc_plan_misfit_option='' hpc_plan_misfit=''
    hpc_fit_gpu_type "$gather_gpus" "partition $part" --gather-gpus GPUs "$types"
    if [[ -n $hpc_plan_misfit ]] && ((hpc_slurm_fresh == 0)); then
      hpc_profile_slurm_facts 1
      hpc_fit_summarize "$hpc_slurm_raw"
      hpc_map_check_gather_fit
      return 0
    fi
    [[ -z $hpc_plan_misfit ]] || hpc_die_usage "$hpc_plan_misfit_option" "$hpc_plan_misfit"
  fi
  if [[ $cpus =~ ^[0-9]+$ ]] && ((cpus > 0 && ${hpc_opt_gather_cpus:-1} > cpus)); then
    hpc_die_usage "--gather-cpus" \
      "$hpc_opt_gather_cpus CPUs is more than a node of partition $part has ($cpus); accepted: 1 to $cpus"
  fi
  if [[ $gpus =~ ^[0-9]+$ ]] && ((gather_gpus > gpus)); then
    hpc_die_usage "--gather-gpus" \
      "$hpc_opt_gather_gpus GPUs is more than a node of partition $part has ($gpus); accepted: 0 to $gpus"
  fi
  # The gather's memory as hpc_map_gather_plan asks for it: -m per GPU times its GPUs, else the
  # profile's mem_no_gpu. Nodes without a RealMemory show 1 MB: nothing to compare with then.
  [[ $mb =~ ^[0-9]+$ ]] && ((mb > 1)) || return 0
  if ((gather_gpus > 0)) && [[ -n ${hpc_plan_mem_per_gpu:-} ]]; then
    hpc_plan_mem_mb "$hpc_plan_mem_per_gpu"
    if ! ((hpc_plan_mb * gather_gpus <= mb)); then
      local msg
      printf -v msg '%s' "$gather_gpus GPUs x $hpc_plan_mem_per_gpu (-m/--mem-per-gpu) is more" \
        " memory than a node of partition $part has (${mb}M); accepted: 0 to $((mb / hpc_plan_mb))"
      hpc_die_usage "--gather-gpus" "$msg"
    fi
  elif [[ -n $hpc_profile_defaults_mem_no_gpu ]]; then
    hpc_plan_mem_mb "$hpc_profile_defaults_mem_no_gpu"
    if ! ((hpc_plan_mb <= mb)); then
      local msg="the profile's defaults.mem_no_gpu $hpc_profile_defaults_mem_no_gpu (the gather's) is more than a node"
      msg+=" of partition $part has (${mb}M); accepted: at most ${mb}M in hpc_files/clusters/$hpc_profile_name.yaml"
      hpc_die_usage "memory" "$msg"
    fi
  fi
  return 0
}

# hpc_map_dry_run: (--dry-run, after the tasks' part) prints the map: the array and throttle,
# the first and last task's variables, the gather job's script, sbatch options and dependency.
# The last step of a dry run: it leaves the plan the gather's.
hpc_map_dry_run() {
  local last_item=$hpc_map_last first_item=$hpc_map_first
  if ((${#hpc_map_items[@]})); then first_item=${hpc_map_items[0]} last_item=${hpc_map_items[-1]}; fi
  hpc_map_dir=$hpc_map_root/$hpc_map_stamp-ARRAYID
  if ((hpc_map_chunk)); then
    printf '\n== map\n%s items in chunks of %s: one array of %s task(s): --array=%s (at most %s at once), folder %s\n' \
      "$hpc_map_count" "$hpc_map_chunk" "$hpc_map_tasks" "$hpc_plan_array" "${hpc_plan_array#*%}" "$hpc_map_dir"
  elif ((${#hpc_map_parts[@]} == 0)); then
    printf '\n== map\nOne array of %s task(s): --array=%s (at most %s at once), folder %s\n' \
      "$hpc_map_count" "$hpc_plan_array" "${hpc_plan_array#*%}" "$hpc_map_dir"
  else
    # Split: the first part's --array alone would read as the whole map.
    printf '\n== map\n%s tasks in %s arrays (MaxArraySize %s), each after the one before (afterany), ' \
      "$hpc_map_count" "${#hpc_map_parts[@]}" "$hpc_manifest_max_array_size"
    printf 'indices %s: at most %s at once, folder %s\n' "${hpc_map_parts[*]}" \
      "${hpc_plan_array#*%}" "$hpc_map_dir"
  fi
  printf 'first task: map_index=%s map_item=%s map_count=%s task_dir=%s\n' \
    "$hpc_map_first" "$first_item" "$hpc_map_count" "$hpc_map_dir/tasks/$hpc_map_first"
  printf 'last task:  map_index=%s map_item=%s map_count=%s task_dir=%s\n' \
    "$hpc_map_last" "$last_item" "$hpc_map_count" "$hpc_map_dir/tasks/$hpc_map_last"
  ((${#hpc_map_gather_words[@]})) || return 0
  hpc_map_array_ids=(ARRAYID)
  hpc_map_gather_plan
  local plan=$hpc_plan_outputs_dir/${hpc_plan_exp_name}_${hpc_plan_kind}_STAMP.plan
  hpc_plan_record
  hpc_plan_render "$plan"
  printf '\n== gather job: after the array, policy %s\nsbatch' "$hpc_map_policy"
  printf ' %q' "${hpc_plan_sbatch_args[@]}"
  printf ' GATHER_SCRIPT\n\n== gather plan (written as %s when submitted)\n' "$plan"
  printf '%s' "$hpc_plan_text" | hpc_mask_stream
  printf '\n== gather job script\n'
  printf '%s\n' "$hpc_plan_script" | hpc_mask_stream
}

# hpc_map_check_gather_references: warns when the gather command uses a task's own variable
# (map_index, map_item, task_dir), which the gather job does not define.
hpc_map_check_gather_references() {
  local name
  ((${#hpc_map_gather_words[@]})) || return 0
  # The names in this shell (no process): hpc_configs_reference_names.
  hpc_configs_reference_names "${hpc_map_gather_words[@]}" || return 0
  for name in ${hpc_configs_names[@]+"${hpc_configs_names[@]}"}; do
    case ${name%:-} in
      map_item | map_index | task_dir)
        hpc_say \
          "warning: the gather command uses \${${name%:-}}, which is each task's own and undefined in the gather job"
        ;;
    esac
  done
}

# hpc_map_manifest_json: writes map_dir/manifest.json (atomically): the command, the resolved
# options, the array and gather ids, the git commit and its dirty flag.
hpc_map_manifest_json() {
  local argv command sbatch gather array_ids gather_ids json
  # The user's words and commands with every secret masked, as in the toolkit's manifest.
  local -a words=(${hpc_submit_argv[@]+"${hpc_submit_argv[@]}"}) templates=("${hpc_configs_words[@]}")
  local -a gather_templates=(${hpc_map_gather_words[@]+"${hpc_map_gather_words[@]}"})
  hpc_mask_vars words templates gather_templates
  hpc_followup_json_list argv ${words[@]+"${words[@]}"}
  hpc_followup_json_list command "${templates[@]}"
  hpc_followup_json_list sbatch "${hpc_plan_sbatch_args[@]}"
  hpc_followup_json_list gather ${gather_templates[@]+"${gather_templates[@]}"}
  hpc_followup_json_list array_ids "${hpc_map_array_ids[@]}"
  hpc_followup_json_list gather_ids ${hpc_map_gather_ids[@]+"${hpc_map_gather_ids[@]}"}
  # The git commit: hpc_manifest_write has just asked git (one process per submission).
  [[ -v hpc_manifest_git_commit ]] || hpc_manifest_git "$hpc_plan_source_dir"
  hpc_followup_json_object json "map_id=$hpc_map_id" "exp_name=$hpc_plan_exp_name" "map_dir=$hpc_map_dir" \
    "array=$hpc_plan_array" "count:=$hpc_map_count" "first:=$hpc_map_first" "last:=$hpc_map_last" \
    "policy=$hpc_map_policy" "kind=$hpc_plan_kind" "cluster=$hpc_plan_cluster" \
    "git_commit=${hpc_manifest_git_commit:-}" "git_dirty=${hpc_manifest_git_dirty:-}"
  json=${json%\}}
  json+=", \"array_ids\": $array_ids, \"gather_ids\": $gather_ids"
  # A chunked array: which task runs which items (the reader's check that a task writes only its
  # own items' status: hpc_helpers.followup).
  ((hpc_map_chunk == 0)) || printf -v json '%s, "chunk": %s, "chunks": {"%s": {"chunk": %s, "first": %s, "last": %s}}' \
    "$json" "$hpc_map_chunk" "${hpc_map_array_ids[0]}" "$hpc_map_chunk" "$hpc_map_first" "$hpc_map_last"
  json+=", \"argv\": $argv, \"command\": $command, \"sbatch\": $sbatch, \"gather_command\": $gather}"
  # Written once, before any task can start (the array is still held): no reader sees it half.
  hpc_private_write "$hpc_map_dir/manifest.json" "$json"$'\n'
}

# hpc_map_gather_plan: turns the plan into the gather job's: one node, one task, --gather-cpus
# CPUs (1), --gather-gpus GPUs (0), --gather-time (00:30:00), no launcher, the same runner;
# after every array of the map (afterany), output in the map's folder.
hpc_map_gather_plan() {
  local gpus=${hpc_opt_gather_gpus:-0} arg
  local -a keep=()
  hpc_plan_mode=gather hpc_plan_launcher=none hpc_plan_nodes=1 hpc_plan_ntasks_per_node=1 hpc_plan_array=''
  hpc_plan_cpus_per_task=${hpc_opt_gather_cpus:-1} hpc_plan_gpus=$gpus
  hpc_plan_time=${hpc_opt_gather_time:-00:30:00}
  hpc_plan_kind=$hpc_plan_runner-gather
  hpc_plan_output=$hpc_map_dir/gather_%j.out
  hpc_plan_mem=$hpc_profile_defaults_mem_no_gpu hpc_plan_gres=''
  ((gpus == 0)) || hpc_plan_gpus_ask "$gpus"
  hpc_followup_sbatch_args "${hpc_map_array_ids[@]}"
  for arg in "${hpc_plan_sbatch_args[@]}"; do
    case $arg in
      --job-name=*) keep+=("$arg-gather") ;;
      --nodes=* | --ntasks-per-node=* | --cpus-per-task=* | --mem=* | \
        --time=* | --output=* | --gres=* | --array=* | --signal=*) ;;
      --requeue | --open-mode=*) ;;
      *) keep+=("$arg") ;;
    esac
  done
  hpc_plan_sbatch_args=("${keep[@]}" --nodes=1 --ntasks-per-node=1 --cpus-per-task="$hpc_plan_cpus_per_task"
    --time="$hpc_plan_time" --output="$hpc_plan_output" "${hpc_followup_sbatch[@]}")
  [[ -z $hpc_plan_mem ]] || hpc_plan_sbatch_args+=(--mem="$hpc_plan_mem")
  [[ -z $hpc_plan_gres ]] || hpc_plan_sbatch_args+=(--gres="$hpc_plan_gres")
  local rerun keys
  printf -v rerun 'bash job_submitter.sh resubmit %q --failed' "$hpc_plan_exp_name"
  keys=$hpc_map_first-$hpc_map_last
  hpc_plan_clear_mode_fields
  hpc_plan_map_dir=$hpc_map_dir hpc_plan_map_keys=$keys hpc_plan_map_count=$hpc_map_count
  hpc_plan_map_policy=$hpc_map_policy hpc_plan_map_rerun=$rerun hpc_plan_map_array_ids=${hpc_map_array_ids[*]}
  hpc_configs_words=("${hpc_map_gather_words[@]}") hpc_plan_command=("${hpc_map_gather_words[@]}")
  hpc_submit_hold=()
}

# hpc_map_submit_gather: (in a subshell: the plan it changes stays the array's) writes the gather
# job's plan file, renders its script into map_dir/gather.sh, submits it, records it in a
# manifest of its own (hpc_manifest_write) and prints its plan file's text ('text LINE' lines),
# its plan file ('plan PATH') and its job id ('id ID').
hpc_map_submit_gather() {
  local id
  local -a lines
  # Run in a command substitution, where the submitter's traps are reset: a Ctrl-C, hangup or a
  # TERM to the group must not end it before it says the id sbatch gave; the submitter acts on
  # the signal then.
  trap '' INT HUP TERM
  hpc_map_gather_plan
  hpc_plan_write || return 1
  # Named before sbatch, with the text it was written with (the plan's lines, each one line:
  # %q): the caller removes it when the map is undone, only while it still holds that text; what
  # it holds after sbatch may be a file someone put in its place meanwhile.
  mapfile -t lines <<<"${hpc_plan_file_text%$'\n'}"
  printf 'text %s\n' "${lines[@]}"
  printf 'plan %s\n' "$hpc_plan_file"
  hpc_plan_render
  hpc_private_write "$hpc_map_dir/gather.sh" "$hpc_plan_script" || return 1
  # The caller's hpc_submit_unsure (this runs in a subshell): 'lost' tells it.
  hpc_submit_unsure=0
  if ! hpc_slurm_sbatch "the gather job" "$hpc_plan_script" "${hpc_plan_sbatch_args[@]}"; then
    printf '%s\n' "$hpc_slurm_error" >&2
    ((hpc_submit_unsure == 0)) || printf 'lost\n'
    return 1
  fi
  id=$hpc_slurm_id
  # Its own manifest: status and cancel of the experiment show and cancel the gather too (the
  # git commit is the one just asked for the array's: hpc_manifest_git asks once).
  hpc_manifest_write "$id" "$hpc_map_dir/gather.sh" "$hpc_plan_file" ||
    hpc_say "gather job $id was submitted, but its manifest could not be written"
  printf 'id %s\n' "$id"
}

# hpc_map_submit_part A-B: (a map above MaxArraySize) submits indices A..B as one more held
# array, task ids 0..B-A, after the previous part (afterany), with a plan file (the array's
# record, its first index and the map's folder appended: the last assignment wins) and a manifest
# of its own; adds its id to hpc_map_array_ids.
hpc_map_submit_part() {
  local first=${1%-*} last=${1#*-} text prev=${hpc_map_array_ids[-1]} plan
  printf -v text '%s# A part of the map: its first index, the map folder.\nhpc_plan_map_offset=%q\n' \
    "$hpc_plan_text" "$first"
  printf -v text '%shpc_plan_map_dir=%q\n' "$text" "$hpc_map_dir"
  hpc_plan_write_file "$hpc_plan_outputs_dir/${hpc_plan_exp_name}_$hpc_plan_kind" "$text" ||
    hpc_group_undo "cannot write the plan of part $1 of the map in $hpc_plan_outputs_dir"
  plan=$hpc_plan_file
  hpc_group_script_for "$hpc_plan_script" "$plan"
  hpc_group_sbatch "part $1 of the map" "$hpc_group_script" --dependency="afterany:$prev" \
    "${hpc_plan_sbatch_args[@]/#--array=*/--array=0-$((last - first))%${hpc_plan_array#*%}}"
  hpc_map_array_ids+=("$hpc_group_id")
  # Its own manifest: status and cancel of the experiment show and cancel this part too (the
  # git commit is the one just asked for the first part's: hpc_manifest_git asks once).
  hpc_plan_array=0-$((last - first))%${hpc_plan_array#*%} hpc_plan_map_offset=$first hpc_plan_map_dir=$hpc_map_dir \
    hpc_manifest_write "$hpc_group_id" "$hpc_map_dir/task.sh" "$plan" ||
    hpc_say "part $1 of the map (job $hpc_group_id) was submitted, but its manifest could not be written"
}

# hpc_map_group_cancelled: what an undo of the map says it cancelled.
hpc_map_group_cancelled() {
  hpc_group_text="the map (job ${hpc_map_array_ids[*]}"
  hpc_group_text+="${hpc_map_gather_ids[*]:+, gather ${hpc_map_gather_ids[*]}}) was cancelled"
}

# hpc_map_after_submit ARRAY_ID: the array was accepted, held: makes the map's folder (items.txt,
# tasks/), submits the gather, writes manifest.json, then releases the array (the group workflow,
# hpc_group.bash). On any failure, also an unexpected one (the EXIT trap), the jobs are cancelled
# and the folder removed; exit 1.
hpc_map_after_submit() {
  local id=$1 out gather_id='' items
  hpc_map_array_ids=("$id") hpc_map_gather_ids=()
  hpc_group_begin map "the submission stopped before the map was released"
  # A signal while the held array was submitted.
  hpc_group_add "$id" held
  hpc_map_id=$hpc_map_stamp-$id
  hpc_map_dir=$hpc_map_root/$hpc_map_id
  hpc_group_make_dir "$hpc_map_root" "$hpc_map_dir" tasks
  if ((${#hpc_map_items[@]})); then
    # Never more readable than the user's list: the user's alone.
    printf -v items '%s\n' "${hpc_map_items[@]}"
    hpc_private_write "$hpc_map_dir/items.txt" "$items" || hpc_group_undo "cannot write $hpc_map_dir/items.txt"
  fi
  hpc_private_write "$hpc_map_dir/task.sh" "$hpc_plan_script" || hpc_group_undo "cannot write $hpc_map_dir/task.sh"
  local part
  for part in "${hpc_map_parts[@]:1}"; do
    hpc_map_submit_part "$part"
  done
  if ((${#hpc_map_gather_words[@]})); then
    local line rc=0 text=''
    out=$(hpc_map_submit_gather) || rc=$?
    while IFS= read -r line; do
      case $line in
        'text '*) text+=${line#text }$'\n' ;;
        'plan '*) hpc_plan_written_add "${line#plan }" "$text" ;;
        'id '*) gather_id=${line#id } ;;
        # Its sbatch's answer was lost: SLURM may hold a gather job nobody knows the id of.
        lost) hpc_submit_unsure=1 ;;
      esac
    done <<<"$out"
    # An id it printed is the gather's, whatever came after: cancelled with the map.
    if [[ -n $gather_id ]]; then
      hpc_map_gather_ids=("$gather_id")
      hpc_group_ids+=("$gather_id")
    fi
    ((rc == 0)) || hpc_group_undo "the gather job was not submitted (see above)"
    hpc_group_signalled
  fi
  hpc_map_manifest_json || hpc_group_undo "cannot write $hpc_map_dir/manifest.json"
  hpc_group_release "$hpc_plan_exp_name"
  printf 'Map %s: array job %s (%s), folder %s\n' "$hpc_map_id" "$id" "$hpc_plan_array" "$hpc_map_dir"
  ((hpc_map_chunk == 0)) ||
    printf '%s items, %s per task: %s tasks, each running its items one after the other\n' \
      "$hpc_map_count" "$hpc_map_chunk" "$hpc_map_tasks"
  ((${#hpc_map_parts[@]} == 0)) ||
    printf 'The map is above MaxArraySize %s: %s arrays, one after the other: %s (indices %s)\n' \
      "$hpc_manifest_max_array_size" "${#hpc_map_parts[@]}" "${hpc_map_array_ids[*]}" "${hpc_map_parts[*]}"
  ((${#hpc_map_gather_ids[@]} == 0)) ||
    printf 'Gather job %s: after the array ends (afterany), policy %s; output %s\n' \
      "$gather_id" "$hpc_map_policy" "$hpc_map_dir/gather_$gather_id.out"
}
