# shellcheck shell=bash
# hpc_manage.bash: what the commands that read the manifests share: the project's recorded
# submissions (hpc_manage_locate, hpc_manage_index), a target resolved to job ids
# (hpc_manage_target), their tasks' keys, and the SLURM state of each task (hpc_manage_states;
# the order of the sources: docs/architecture.md). Each command is one file of commands/
# (hpc_command_NAME), sourced by job_submitter.sh only for that command, whose --help is the
# usage block at the top of that file (hpc_help.bash); a submission does not load this file.

# What this library reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_facts.bash (sourced by hpc_common.bash): the ended and failed states.
declare -g hpc_facts_ended_states hpc_facts_failed_states
# hpc_common.bash: what hpc_trusted_read read, or why it did not.
declare -g hpc_trusted_text hpc_trusted_problem
# hpc_manifest_read.bash (loaded at hpc_manifest_read's first call): a manifest's fields.
declare -g hpc_mf hpc_mf_sbatch

# shellcheck source=hpc_files/lib/hpc_manifest.bash
source "${BASH_SOURCE[0]%/*}/hpc_manifest.bash"
# shellcheck source=hpc_files/lib/hpc_pending.bash
source "${BASH_SOURCE[0]%/*}/hpc_pending.bash"
hpc_pending_stopped_load

# shellcheck disable=SC2034 # hpc_manage_lib: read by the commands (the library's folder)
hpc_manage_lib=${BASH_SOURCE[0]}

# States after which a job or array task runs no more; and those that resubmit --failed redoes
# (one list for every command: hpc_facts.bash).
# shellcheck disable=SC2034 # hpc_manifest_failed_states: read by commands/resubmit.bash
hpc_manifest_ended_states=$hpc_facts_ended_states hpc_manifest_failed_states=$hpc_facts_failed_states

# hpc_manage_begin: what every command does first (job_submitter.sh has answered -h and --help
# already, without SCRATCH or SLURM): finds and reads the project's manifests
# (hpc_manage_locate, hpc_manage_index).
hpc_manage_begin() {
  hpc_manage_locate
  hpc_manage_index
  hpc_manage_task='' hpc_manage_target_exp=''
}

# hpc_manage_locate: sets hpc_manage_project, hpc_manage_dir (the manifests' folder) from the
# submitter's place and SCRATCH, as a submission does; exit 2 when SCRATCH is unusable, 1 when the
# outputs folder or its records' folders are there but not the user's private ones
# (hpc_private_dir): what is in them may have been put there by others.
hpc_manage_locate() {
  local x
  [[ -n ${hpc_source_dir:-} ]] || hpc_submit_locate
  hpc_manage_project=${hpc_source_dir##*/}
  hpc_scratch_check
  hpc_manage_dir=${SCRATCH%/}/$hpc_manage_project/hpc_outputs/manifests
  for x in "${hpc_manage_dir%/*}" "$hpc_manage_dir" "${hpc_manage_dir%/*}/submissions"; do
    [[ ! -e $x && ! -L $x ]] || hpc_private_dirs_or_die "$x"
  done
}

# hpc_manage_index: reads every manifest of the project: hpc_manage_file[ID] (indexed by job id,
# so that "${!hpc_manage_file[@]}" is in submission order), and for each ID hpc_manage_exp,
# _kind, _array, _origin, _output, _name (the job name); hpc_manage_ids_of[EXP]: EXP's job ids.
# What it needs of a manifest comes from the index (manifests/.index, below) while the manifest is
# the file that was indexed (same inode, size and modification time): only the manifests new since
# are read, and the index is written anew when it changed (best effort, as the .states files). One
# find lists them all, with what is checked, and one awk matches them with the index
# (hpc_manage_index_check): a history of 10^4 jobs costs a few Bash steps per job.
# shellcheck disable=SC2034 # hpc_manage_kind, _origin, _mode: read by the commands (commands/*.bash)
hpc_manage_index() {
  local - i f name fd='' index=$hpc_manage_dir/.index
  local -a out=() head=() rows=()
  hpc_manage_file=()
  declare -gA hpc_manage_keys_of=() hpc_manage_exp=() hpc_manage_kind=() hpc_manage_array=() hpc_manage_origin=() \
  hpc_manage_output=() hpc_manage_name=() hpc_manage_mode=() hpc_manage_defer=() hpc_manage_ids_of=()
  [[ -d $hpc_manage_dir ]] || return 0
  # The index is trusted as a manifest is; one that may not be read is said once, never written.
  hpc_manage_index_ok=1
  if hpc_trusted_open "$index"; then
    fd=$hpc_trusted_fd
  elif [[ -e $index || -L $index ]]; then
    hpc_say "not read: $index $hpc_trusted_problem; remove it"
    hpc_manage_index_ok=0
  fi
  # A manifest names the script, options and jobs that resubmit and cancel act on: one that is
  # not the user's own regular file or that others can change (a group-writable scratch) is not
  # read. One find for all of them, not a process per manifest ('TSTAMP/NAME' for the others,
  # 'U/NAME' for those), in the order of their names.
  mapfile -d '' out < <(find "$hpc_manage_dir" -mindepth 1 -maxdepth 1 -name '*.manifest' ! -name '.*' \
    \( \( -type f -user "$EUID" ! -perm /022 -printf 'T%i:%s:%T@/%f\0' \) -o -printf 'U/%f\0' \) 2>/dev/null |
    LC_ALL=C sort -z -t/ -k2 | hpc_manage_index_check "${fd:+/dev/fd/$fd}")
  [[ -z $fd ]] || exec {fd}<&-
  # shellcheck disable=SC2206 # 'H LINES UNTRUSTED READ DECODE': numbers
  head=(${out[0]-H 0 0 0 0})
  local lines=${head[1]} untrusted=${head[2]} reread=${head[3]} decode=${head[4]} at
  if ((untrusted)); then
    local msg="not read: $untrusted manifest(s) in $hpc_manage_dir that others can change or that are not"
    msg+=" your own files (${out[1]}$( ((untrusted == 1)) || printf ', ...'));"
    msg+=" if they are yours, make them yours alone: chmod go-w"
    hpc_say "$msg"
  fi
  # The others, ten records each: the index's line, then its fields (hpc_manage_index_check).
  local rows_at=$((1 + untrusted + reread + decode))
  for ((i = rows_at; i < ${#out[@]}; i += 10)); do
    hpc_manage_file[${out[i + 2]}]=$hpc_manage_dir/${out[i + 1]} hpc_manage_exp[${out[i + 2]}]=${out[i + 3]} \
      hpc_manage_kind[${out[i + 2]}]=${out[i + 4]} hpc_manage_array[${out[i + 2]}]=${out[i + 5]} \
      hpc_manage_origin[${out[i + 2]}]=${out[i + 6]} hpc_manage_output[${out[i + 2]}]=${out[i + 7]} \
      hpc_manage_mode[${out[i + 2]}]=${out[i + 8]} hpc_manage_name[${out[i + 2]}]=${out[i + 9]} \
      hpc_manage_ids_of[${out[i + 3]}]+=" ${out[i + 2]}"
  done
  at=$((1 + untrusted))
  # The manifests new or replaced since they were indexed: read (after the others: where two
  # manifests name one job, hpc_manage_index_add keeps the one the glob lists last).
  for ((i = at; i < at + reread; i++)); do
    name=${out[i]%%/*} f=$hpc_manage_dir/${out[i]%%/*}
    hpc_manifest_read "$f" || continue
    hpc_manage_row=("$name" "${out[i]#*/}" "${hpc_mf[job_id]}" "${hpc_mf[exp_name]-}" "${hpc_mf[kind]-}"
      "${hpc_mf[array]-}" "${hpc_mf[origin]:-${hpc_mf[job_id]}}" "${hpc_mf[output]-}" "${hpc_mf[mode]-}" '')
    for f in ${hpc_mf_sbatch[@]+"${hpc_mf_sbatch[@]}"}; do
      [[ $f != --job-name=* ]] || hpc_manage_row[9]=${f#*=}
    done
    hpc_manage_index_line
    rows+=("$hpc_manage_index_line")
    hpc_manage_index_add
  done
  at=$((at + reread))
  # The indexed rows with an escaped value (rare): split on 0x1f alone, no glob, and decoded.
  set -f
  for ((i = at; i < at + decode; i++)); do
    IFS=$'\x1f'
    # shellcheck disable=SC2206
    hpc_manage_row=(${out[i]})
    IFS=$' \t\n'
    hpc_manage_index_decode
    hpc_manage_index_add
  done
  # Written anew when a manifest was read, or a line of the index names none.
  ((reread == 0 && (${#out[@]} - rows_at) / 10 + decode == lines)) || {
    for ((i = at; i < rows_at; i++)); do rows+=("${out[i]}"); done
    for ((i = rows_at; i < ${#out[@]}; i += 10)); do rows+=("${out[i]}"); done
    hpc_manage_index_save ${rows[@]+"${rows[@]}"}
  }
}

# hpc_manage_index_add: (hpc_manage_index) records the job of hpc_manage_row (the fields of a
# line of the index).
# shellcheck disable=SC2034 # hpc_manage_kind, _origin, _mode: read by the commands (commands/*.bash)
hpc_manage_index_add() {
  local id=${hpc_manage_row[2]} kept
  # Two manifests of one job id (a cluster that handed out an id again): the job is the one whose
  # name the glob lists last, as when every manifest was read in the glob's order.
  kept=${hpc_manage_file[id]-}
  [[ -z $kept || ! ${kept##*/} > ${hpc_manage_row[0]} ]] || return 0
  hpc_manage_file[id]=$hpc_manage_dir/${hpc_manage_row[0]} hpc_manage_exp[$id]=${hpc_manage_row[3]}
  hpc_manage_kind[$id]=${hpc_manage_row[4]} hpc_manage_array[$id]=${hpc_manage_row[5]}
  hpc_manage_origin[$id]=${hpc_manage_row[6]} hpc_manage_output[$id]=${hpc_manage_row[7]}
  hpc_manage_mode[$id]=${hpc_manage_row[8]} hpc_manage_name[$id]=${hpc_manage_row[9]}
  hpc_manage_ids_of[${hpc_manage_row[3]}]+=" $id"
}

# hpc_manage_index_check [INDEX]: (hpc_manage_index) reads find's NUL-separated records
# ('TSTAMP/NAME', 'U/NAME') and the index INDEX (its first 64 MiB; none when not given), and
# writes, NUL-separated: 'H LINES UNTRUSTED READ DECODE' (how many lines the index has after its
# first, and how many records of each kind follow); the NAMEs not to read; 'NAME/STAMP' of each
# manifest to read (not indexed, or not with its stamp); the index's lines with an escaped value;
# and for each other manifest ten records: its line of the index, then the line's first ten
# fields but the stamp. An index line counts only with 11 fields, its last '.', and a job id.
hpc_manage_index_check() {
  local prog
  # shellcheck disable=SC2016 # awk's program, in single quotes
  prog='BEGIN {
      RS = "\n"; FS = "\037"; max = 67108864
      if (index_file != "") {
        if ((getline line < index_file) > 0 && line == "hpc-manifest-index 1") {
          bytes = length(line) + 1
          while ((getline line < index_file) > 0) {
            bytes += length(line) + 1
            if (bytes > max) break
            lines++
            n = split(line, f, "\037")
            # A job id (the form hpc_facts_job_id takes; the length apart: mawk has no interval).
            if (n == 11 && f[11] == "." && length(f[3]) <= 18 && f[3] ~ /^[1-9][0-9]*$/) {
              row[f[1]] = line; at[f[1]] = f[2]
            }
          }
        }
        close(index_file)
      }
      RS = "\0"; ORS = "\0"
    }
    /^U\// { bad[++u] = substr($0, 3); next }
    /^T/ {
      i = index($0, "/"); name = substr($0, i + 1); stamp = substr($0, 2, i - 2)
      if (!(name in row) || at[name] != stamp) { reread[++r] = name "/" stamp; next }
      if (index(row[name], "\\")) { dec[++d] = row[name]; next }
      ok[++v] = row[name]
    }
    END {
      print "H " (lines + 0) " " (u + 0) " " (r + 0) " " (d + 0)
      for (i = 1; i <= u; i++) print bad[i]
      for (i = 1; i <= r; i++) print reread[i]
      for (i = 1; i <= d; i++) print dec[i]
      for (i = 1; i <= v; i++) {
        print ok[i]; split(ok[i], f, "\037")
        for (j = 1; j <= 10; j++) if (j != 2) print f[j]
      }
    }'
  LC_ALL=C awk -v index_file="${1-}" "$prog"
}

# The index of the manifests, manifests/.index: a first line 'hpc-manifest-index 1', then one
# line per manifest, its fields separated by the byte 0x1f: the manifest's name, its stamp
# (inode:size:mtime, as find prints them), job id, experiment, kind, array, origin, output
# pattern, mode, job name, and a last field '.'. A value is escaped as in a manifest (\\ \n
# \t \r), and 0x1f as \x1f. It is the user's own file that nobody else can write, read as
# trusted (hpc_trusted_read, its first 64 MiB), written whole and renamed over
# (hpc_private_write); one that may not be read is said once and left alone (never written over).

# hpc_manage_index_decode: decodes the escaped fields of hpc_manage_row (a line of the index).
hpc_manage_index_decode() {
  local i
  for i in "${!hpc_manage_row[@]}"; do
    [[ ${hpc_manage_row[i]} != *\\* ]] || printf -v "hpc_manage_row[i]" '%b' "${hpc_manage_row[i]}"
  done
}

# hpc_manage_index_line: sets hpc_manage_index_line to the index's line of hpc_manage_row.
hpc_manage_index_line() {
  local value
  local -a out=()
  for value in "${hpc_manage_row[@]}"; do
    [[ $value != *["$hpc_manifest_escapes"]* ]] || hpc_manifest_escape value
    out+=("$value")
  done
  printf -v hpc_manage_index_line '%s\x1f' "${out[@]}"
  hpc_manage_index_line+=.
}

# hpc_manage_index_save LINE...: writes the index anew with LINEs (best effort: whoever may read
# the manifests may not write them; never over an index that was not read).
hpc_manage_index_save() {
  ((hpc_manage_index_ok)) || return 0
  local text
  printf -v text '%s\n' 'hpc-manifest-index 1' "$@"
  hpc_private_write "$hpc_manage_dir/.index" "$text" 2>/dev/null || true
}

# hpc_manage_known: prints the known experiments for a message, in the order of their first
# submission.
hpc_manage_known() {
  local id
  local -A seen=()
  local -a exps=()
  for id in "${!hpc_manage_file[@]}"; do
    [[ -n ${seen[${hpc_manage_exp[$id]}]-} ]] || seen[${hpc_manage_exp[$id]}]=1 exps+=("${hpc_manage_exp[$id]}")
  done
  if ((${#exps[@]})); then
    printf 'known: %s' "${exps[*]}"
  else
    printf 'no submission of project %s is recorded in %s' "$hpc_manage_project" "$hpc_manage_dir"
  fi
}

# hpc_manage_target WORD: resolves an experiment, a job id or JOBID_TASK into hpc_manage_ids (the
# recorded job ids it names, ascending), hpc_manage_task (a task, or empty) and
# hpc_manage_target_exp (the experiment, when WORD names one); exit 2 when it names nothing
# recorded. A recorded job id wins over an experiment of the same name. An experiment whose only
# trace is the record of a submission that stopped before its first manifest (hpc_pending.bash)
# is known, with no recorded job.
hpc_manage_target() {
  local word=$1 id='' task=''
  hpc_manage_ids=() hpc_manage_task='' hpc_manage_target_exp=''
  if [[ $word =~ ^([0-9]{1,18})(_([0-9]{1,9}))?$ ]]; then
    id=$((10#${BASH_REMATCH[1]}))
    task=${BASH_REMATCH[3]}
    [[ -n ${hpc_manage_file[id]-} ]] || id=''
  fi
  if [[ -n $id ]]; then
    hpc_manage_ids=("$id")
    if [[ -n $task ]]; then
      hpc_manage_task=$((10#$task))
      hpc_manifest_expand_array "${hpc_manage_array[$id]}" || hpc_manifest_indices=()
      [[ " ${hpc_manifest_indices[*]} " == *" $hpc_manage_task "* ]] ||
        hpc_die_usage "$word" "job $id has no array task $hpc_manage_task (its array: ${hpc_manage_array[$id]:-none})"
    fi
    return 0
  fi
  [[ $word =~ ^[A-Za-z0-9_.+-]+$ && $word != .* ]] ||
    hpc_die_usage "$word" "not an experiment name or a job id; $(hpc_manage_known)"
  # shellcheck disable=SC2034 # read by commands/status.bash and cancel.bash
  hpc_manage_target_exp=$word
  # Its ids ascending (hpc_manage_index lists them in the order of the manifests' names).
  local -a ids=()
  for id in ${hpc_manage_ids_of[$word]-}; do
    # (Two manifests of one job id: the job is the last one's, as hpc_manage_file says.)
    [[ ${hpc_manage_exp[$id]} != "$word" ]] || ids[id]=$id
  done
  hpc_manage_ids=(${ids[@]+"${ids[@]}"})
  if ((${#hpc_manage_ids[@]} == 0)); then
    hpc_pending_scan "${hpc_manage_dir%/*}" "$word"
    ((${#hpc_pending_tokens[@]} == 0)) || return 0
    if [[ $word =~ ^[0-9]+(_[0-9]+)?$ ]]; then
      local msg="not a job or an experiment recorded for project $hpc_manage_project"
      msg+=" (see 'bash job_submitter.sh status')"
      hpc_die_usage "$word" "$msg; $(hpc_manage_known)"
    fi
    hpc_die_usage "$word" "unknown experiment of project $hpc_manage_project; $(hpc_manage_known)"
  fi
}

# hpc_manage_pending [EXP]: (status, cancel) what the submissions of the project (of EXP) that
# stopped on the way left in SLURM (hpc_pending.bash: one squeue, only where such a record is
# left): hpc_manage_unrecorded, the ids of their jobs that no manifest names; the rest in
# hpc_pending_*. Exit 1 when squeue fails.
hpc_manage_pending() {
  local id
  hpc_manage_unrecorded=()
  hpc_pending_scan "${hpc_manage_dir%/*}" "${1-}"
  ((${#hpc_pending_tokens[@]})) || return 0
  hpc_pending_jobs || exit 1
  for id in ${hpc_pending_ids[@]+"${hpc_pending_ids[@]}"}; do
    [[ -n ${hpc_manage_file[id]-} ]] || hpc_manage_unrecorded+=("$id")
  done
}

# hpc_manage_live: sets hpc_manage_live[ID] for every job (or array job) ID that SLURM still
# runs or holds for this user: one squeue for all of them, whatever the project's history
# (status's default view). False, with one line, when squeue fails.
# shellcheck disable=SC2034 # hpc_manage_live: read by commands/status.bash
hpc_manage_live() {
  local out line
  declare -gA hpc_manage_live=()
  out=$(hpc_slurm -t 60 squeue -h -u "$EUID" -o %F 2>&1) || {
    hpc_say "squeue failed: ${out//$'\n'/ }"
    return 1
  }
  while IFS= read -r line; do
    line=${line%%|*}
    [[ ! $line =~ ^[0-9]{1,18}$ ]] || hpc_manage_live[$line]=1
  done <<<"$out"
}

# hpc_manage_task_keys ID: hpc_manage_keys ID, or only the task that the target named.
hpc_manage_task_keys() {
  if [[ -n $hpc_manage_task ]]; then
    hpc_manage_keys=("$1_$hpc_manage_task")
  else
    hpc_manage_keys "$1"
  fi
}

# hpc_manage_keys ID: sets hpc_manage_keys to the keys of job ID's tasks: ID_TASK for each task
# of its array, else ID alone.
# Each ID's keys are made once per process (hpc_manage_keys_of: a map's array of 10^5 tasks is
# asked for them by every step of status).
hpc_manage_keys() {
  local i IFS=' '
  if [[ -n ${hpc_manage_keys_of[$1]-} ]]; then
    # shellcheck disable=SC2206 # split on spaces: keys are digits and '_', no glob character
    hpc_manage_keys=(${hpc_manage_keys_of[$1]})
    return 0
  fi
  hpc_manage_keys=()
  if [[ -n ${hpc_manage_array[$1]} ]] && hpc_manifest_expand_array "${hpc_manage_array[$1]}"; then
    hpc_manage_keys=("${hpc_manifest_indices[@]/#/$1_}")
  else
    hpc_manage_keys=("$1")
  fi
  hpc_manage_keys_of[$1]="${hpc_manage_keys[*]}"
}

# hpc_manage_count ID: sets hpc_manage_count to how many tasks job ID has (1 without an array),
# without making its keys where its array is one range of indices (a map's 10^5 tasks), as
# hpc_manifest_expand_array would count them.
# shellcheck disable=SC2034 # hpc_manage_count: read by commands/status.bash
hpc_manage_count() {
  local re='^([0-9]{1,9})-([0-9]{1,9})(:([0-9]{1,9}))?(%[0-9]+)?$'
  if [[ -z ${hpc_manage_keys_of[$1]-} && ${hpc_manage_array[$1]} =~ $re ]]; then
    local first=$((10#${BASH_REMATCH[1]})) last=$((10#${BASH_REMATCH[2]})) step=$((10#${BASH_REMATCH[4]:-1}))
    if ((step > 0 && last >= first && (last - first) / step < 1000000)); then
      hpc_manage_count=$(((last - first) / step + 1))
      return 0
    fi
  fi
  hpc_manage_keys "$1"
  hpc_manage_count=${#hpc_manage_keys[@]}
}

# ---------------------------------------------------------------------------------------------
# States

# hpc_manage_set KEY JOB_ID STATE EXIT: records what a source says of KEY, unless an earlier
# source already did.
hpc_manage_set() {
  [[ -z ${hpc_st_state[$1]-} ]] || return 0
  hpc_st_answered[${1%%_*}]=1
  hpc_st_state[$1]=${3%% *}
  hpc_st_raw[$1]=$2
  hpc_st_exit[$1]=$4
}

# hpc_manage_set_range ARRAY_ID TASKS JOB_ID STATE EXIT: hpc_manage_set for every task of TASKS
# (one index, or a spec such as 3-4%2 for tasks that are still pending together).
hpc_manage_set_range() {
  local i
  if [[ $2 =~ ^[0-9]+$ ]]; then
    hpc_manage_set "$1_$2" "$3" "$4" "$5"
  elif hpc_manifest_expand_array "$2"; then
    for i in "${hpc_manifest_indices[@]}"; do hpc_manage_set "$1_$i" "$3" "$4" "$5"; done
  fi
}

# hpc_manage_note_limit ID ARRAY_ID TASKS STATE REASON: (a line of squeue) a pending job or task
# that a limit of the site's QOS or association holds (REASON QOS...Limit or Assoc...Limit, e.g.
# QOSMaxJobsPerUserLimit) gets a note saying so: it waits for the user's other jobs, not for nodes.
# shellcheck disable=SC2034 # hpc_st_note: read by commands/status.bash
hpc_manage_note_limit() {
  local i note
  [[ ${4-} == PENDING && ${5-} =~ ^(QOS|Assoc)[A-Za-z]*Limit$ ]] || return 0
  note="held by a limit of the QOS or association: $5"
  if [[ $3 == N/A ]]; then
    hpc_st_note[$1]=$note
  elif [[ $3 =~ ^[0-9]+$ ]]; then
    hpc_st_note[$2_$3]=$note
  elif hpc_manifest_expand_array "$3"; then
    for i in "${hpc_manifest_indices[@]}"; do hpc_st_note[$2_$i]=$note; done
  fi
}

# hpc_manage_states ID...: the state of every task of the recorded jobs ID, into hpc_st_state,
# hpc_st_exit and hpc_st_raw (the task's own job id), by key (hpc_manage_keys): squeue first,
# then sacct, then scontrol show job, then the states file, else UNKNOWN. Each source is asked
# once, for every job it still has to answer for. An array job ID that the caller marked in
# hpc_manage_defer (status: a long map array shown as one line) and that no source answered for
# is put in hpc_manage_forgotten instead, its tasks left without a state (hpc_map_task_states
# counts them from their status files and its states file; hpc_manage_states_kept ID gives them
# theirs): 10^4 tasks SLURM has forgotten cost no work each.
hpc_manage_states() {
  local id key out line joined state user
  local -a missing=() fields=()
  declare -gA hpc_st_state=() hpc_st_exit=() hpc_st_raw=() hpc_st_note=() hpc_st_answered=() hpc_manage_forgotten=()
  (($#)) || return 0
  local IFS=,
  joined="$*"
  IFS=$' \t\n'

  # 1. squeue: pending and running jobs, array tasks one per line (-r), with the reason.
  if ! out=$(hpc_slurm -t 60 squeue -h -r -j "$joined" -o '%A|%F|%K|%T|%r' 2>&1); then
    # A list of jobs that SLURM has all forgotten is an error for squeue.
    [[ $out == *'Invalid job id'* ]] || hpc_die "squeue failed: ${out//$'\n'/ }"
    out=''
  fi
  local -a requeued=()
  while IFS='|' read -r -a fields; do
    ((${#fields[@]} >= 4)) && [[ ${fields[0]} =~ ^[0-9]+$ ]] || continue
    if [[ ${fields[2]} == N/A ]]; then
      hpc_manage_set "${fields[0]}" "${fields[0]}" "${fields[3]}" -
    else
      hpc_manage_set_range "${fields[1]}" "${fields[2]}" "${fields[0]}" "${fields[3]}" -
    fi
    hpc_manage_note_limit "${fields[@]}"
    # Requeued, or waiting for SLURM's delay before a requeued job restarts (Reason=BeginTime).
    if [[ ${fields[3]} == REQUEUED* || ${fields[3]}/${fields[4]-} == PENDING/BeginTime ]]; then
      if [[ ${fields[2]} == N/A ]]; then
        requeued+=("${fields[0]}|${fields[0]}")
      elif [[ ${fields[2]} =~ ^[0-9]+$ ]]; then
        requeued+=("${fields[0]}|${fields[1]}_${fields[2]}")
      fi
    fi
  done <<<"$out"
  ((${#requeued[@]} == 0)) || hpc_manage_requeued "${requeued[@]}"

  # The jobs with a task that squeue did not answer for.
  hpc_manage_missing "$@"
  ((${#hpc_manage_missing[@]})) || return 0

  # 2. sacct, where the cluster keeps accounting (elsewhere it fails: skipped); this user's jobs
  # only: job ids come again after a reset of the controller's state, another user's among them.
  IFS=,
  joined="${hpc_manage_missing[*]}"
  IFS=$' \t\n'
  hpc_user_name user
  if out=$(hpc_slurm -t 60 sacct -n -P -X -u "$user" -j "$joined" -o JobID,JobIDRaw,State,ExitCode 2>/dev/null); then
    while IFS='|' read -r -a fields; do
      ((${#fields[@]} == 4)) || continue
      if [[ ${fields[0]} =~ ^([0-9]+)_\[?([0-9,:%-]+)\]?$ ]]; then
        hpc_manage_set_range "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${fields[1]}" "${fields[2]}" "${fields[3]}"
      elif [[ ${fields[0]} =~ ^[0-9]+$ ]]; then
        hpc_manage_set "${fields[0]}" "${fields[1]}" "${fields[2]}" "${fields[3]}"
      fi
    done <<<"$out"
    hpc_manage_missing "${hpc_manage_missing[@]}"
  fi

  # 3. scontrol show job: ended jobs, until MinJobAge. One job: asked by id; more: all at once.
  missing=(${hpc_manage_missing[@]+"${hpc_manage_missing[@]}"})
  if ((${#missing[@]})); then
    if ((${#missing[@]} == 1)); then
      out=$(hpc_slurm scontrol -o show job "${missing[0]}" 2>/dev/null) || out=''
    else
      out=$(hpc_slurm scontrol -o show job 2>/dev/null) || out=''
    fi
    local -A wanted=()
    for id in "${missing[@]}"; do wanted[$id]=1; done
    while IFS= read -r line; do
      local job='' array='' task='' exit_code=''
      state=''
      read -r -a fields <<<"$line"
      for key in "${fields[@]}"; do
        case $key in
          JobId=*) job=${key#*=} ;;
          ArrayJobId=*) array=${key#*=} ;;
          ArrayTaskId=*) task=${key#*=} ;;
          JobState=*) state=${key#*=} ;;
          ExitCode=*) exit_code=${key#*=} ;;
        esac
      done
      [[ -n $job && -n $state ]] || continue
      if [[ -n $array && -n $task ]]; then
        [[ -n ${wanted[$array]-} ]] && hpc_manage_set_range "$array" "$task" "$job" "$state" "$exit_code"
      else
        [[ -n ${wanted[$job]-} ]] && hpc_manage_set "$job" "$job" "$state" "$exit_code"
      fi
    done <<<"$out"
    hpc_manage_missing "${missing[@]}"
  fi

  # 4. The ended states seen before; else unknown.
  for id in "$@"; do
    if [[ -n ${hpc_manage_defer[$id]-} && -z ${hpc_st_answered[$id]-} ]]; then
      # shellcheck disable=SC2034 # read by hpc_map.bash
      hpc_manage_forgotten[$id]=1
      continue
    fi
    hpc_manage_states_kept "$id"
  done
}

# hpc_manage_states_kept ID: (hpc_manage_states, step 4) the tasks of job ID that no source
# answered for: the ended state seen before (ID's states file), else UNKNOWN. New ended states are
# kept for next time. Only the user's own regular file is read (never through a link, never a
# FIFO: nothing waits), its first MiB at most, and it is written anew beside it, never into it
# (hpc_private_write).
hpc_manage_states_kept() {
  local id=$1 key states new raw code old state
  local -A kept=() kept_raw=() kept_exit=()
  unset 'hpc_manage_forgotten[$id]'
  hpc_manage_keys "$id"
  states=${hpc_manage_file[id]%.manifest}.states new='' old=''
  if hpc_trusted_read "$states" own 1048576; then
    old=$hpc_trusted_text
    while IFS=$'\t' read -r key raw state code; do
      [[ -n $key && -n $state ]] || continue
      kept[$key]=$state kept_raw[$key]=$raw kept_exit[$key]=$code
    done <<<"$old"
  elif [[ -e $states || -L $states ]]; then
    hpc_say "not read: $states $hpc_trusted_problem; remove it"
    old=-
  fi
  for key in "${hpc_manage_keys[@]}"; do
    [[ -z ${kept[$key]-} ]] || hpc_manage_set "$key" "${kept_raw[$key]}" "${kept[$key]}" "${kept_exit[$key]}"
    if [[ -z ${hpc_st_state[$key]-} ]]; then
      hpc_st_state[$key]='UNKNOWN (forgotten by SLURM)' hpc_st_exit[$key]=- hpc_st_raw[$key]=''
    elif
      [[ $hpc_manifest_ended_states == *" ${hpc_st_state[$key]} "* && ${kept[$key]-} != "${hpc_st_state[$key]}" ]]
    then
      new+=$key$'\t'${hpc_st_raw[$key]}$'\t'${hpc_st_state[$key]}$'\t'${hpc_st_exit[$key]}$'\n'
    fi
  done
  # Best effort: whoever may read the manifests may not write them. Never over one not read.
  [[ -z $new || $old == - ]] || hpc_private_write "$states" "$old$new" 2>/dev/null || true
}

# hpc_manage_requeued RAW|KEY...: for each job or task KEY (own job id RAW) that squeue shows
# REQUEUED, or PENDING for its begin time, asks scontrol whether SLURM restarted it (Restarts>0)
# and sets hpc_st_note[KEY] to 'requeued, restarts at TIME' (StartTime, else EligibleTime);
# 'preempted, requeued, ...' when the batch shell recorded that its last run was preempted (the
# record beside the job's log, hpc_job_preempt_record).
# shellcheck disable=SC2034 # hpc_st_note: read by commands/status.bash
hpc_manage_requeued() {
  local item raw key out word restarts start eligible when record
  for item in "$@"; do
    raw=${item%%|*} key=${item#*|}
    out=$(hpc_slurm scontrol -o show job "$raw" 2>/dev/null) || continue
    restarts=0 start='' eligible=''
    for word in ${out%%$'\n'*}; do
      case $word in
        Restarts=*) restarts=${word#*=} ;;
        StartTime=*) start=${word#*=} ;;
        EligibleTime=*) eligible=${word#*=} ;;
      esac
    done
    [[ ${hpc_st_state[$key]-} == REQUEUED* || $restarts =~ ^[1-9][0-9]*$ ]] || continue
    when=''
    for word in "$start" "$eligible"; do
      [[ -n $when || ! $word =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T ]] || when=$word
    done
    hpc_st_note[$key]="requeued${when:+, restarts at $when}"
    record=${hpc_manage_dir%/manifests}/.hpc_preempted.$raw.$((restarts - 1))
    [[ ! -f $record || -L $record ]] || hpc_st_note[$key]="preempted, ${hpc_st_note[$key]}"
  done
}

# hpc_manage_missing ID...: sets hpc_manage_missing to the IDs that have a task without a state.
hpc_manage_missing() {
  local id key
  hpc_manage_missing=()
  for id in "$@"; do
    # No source said anything of it: none of its tasks has a state (its keys not made).
    if [[ -z ${hpc_st_answered[$id]-} ]]; then
      hpc_manage_missing+=("$id")
      continue
    fi
    hpc_manage_keys "$id"
    for key in "${hpc_manage_keys[@]}"; do
      if [[ -z ${hpc_st_state[$key]-} ]]; then
        hpc_manage_missing+=("$id")
        break
      fi
    done
  done
}

# hpc_manage_task_output ID KEY: sets hpc_manifest_path to the output file of job ID's task KEY
# (ID itself for a job without an array).
hpc_manage_task_output() {
  local task='' job=$1
  if [[ $2 == *_* ]]; then
    task=${2#*_}
    job=${hpc_st_raw[$2]-}
  fi
  hpc_manifest_output "${hpc_manage_output[$1]}" "$1" "$task" "$job" "${hpc_manage_name[$1]}"
}
