# shellcheck shell=bash
# hpc_pending.bash: submissions in progress, recorded before their first sbatch, so that no job
# outlives its submitter's knowledge: whatever moment the submitter dies at (SIGKILL included,
# which no trap sees), every job that reached SLURM can be found and removed with the toolkit's
# own commands. A submission writes OUTPUTS/submissions/TOKEN (its experiment, host and process;
# OUTPUTS is the project's hpc_outputs folder) before its first sbatch (hpc_pending_open), tags
# every job with --comment=hpc-toolkit:TOKEN (hpc_slurm_sbatch_exec), and marks the record 'ended'
# once each job it submitted is recorded and released, or removes it once they are cancelled
# (hpc_pending_close). A record left as it was written names a submission that stopped on the way:
# 'status' lists the jobs SLURM still has with its tag (those without a manifest too), 'cancel
# EXP' cancels them, and the next submission of EXP warns of them. SLURM is asked (one squeue)
# only where such a record is left. Marking starts no process (a submission forks only what it
# must); the ended records are removed in batches (hpc_pending_sweep). Functions are prefixed
# hpc_pending_.

hpc_pending_tag=hpc-toolkit:
# hpc_common.bash (hpc_trusted_open): the descriptor it opened.
declare -g hpc_trusted_fd
# Seconds after which a record written on another host is taken as a stopped submission (its
# process cannot be looked at from here; a submission's sbatch calls take seconds).
hpc_pending_foreign_s=${hpc_pending_foreign_s:-600}
# Seconds after its last sbatch started before a stopped submission's record may go: sbatch
# ignores the signals that stop the submitter and SIGKILL reaches the submitter alone, so a job
# may reach SLURM after the submitter died (sbatch retries for minutes when the controller is
# busy). Its record stays until then, so that the job is found when it comes.
hpc_pending_settle_s=${hpc_pending_settle_s:-600}

# What this file reads, set by the others: declared here, not set, so that the linter knows each
# name. hpc_common.bash: the text hpc_trusted_read read.
declare -g hpc_trusted_text

# hpc_pending_start_time PID VAR: sets VAR to the start time of process PID (field 22 of
# /proc/PID/stat, in clock ticks since boot): with the PID, it names one process (a PID is reused).
# False when there is no such process. No process started.
hpc_pending_start_time() {
  local -n _hpc_pending_out=$1
  local stat
  local -a fields
  { IFS= read -r stat <"/proc/$2/stat"; } 2>/dev/null || return 1
  # The command's name, in parentheses, may hold spaces: the fields after its last ')'.
  read -r -a fields <<<"${stat##*) }"
  [[ ${fields[19]-} =~ ^[0-9]+$ ]] || return 1
  _hpc_pending_out=${fields[19]}
}

# Ended records in the folder before one submission removes them (one rm for all).
hpc_pending_sweep_at=${hpc_pending_sweep_at:-32}

# hpc_pending_open OUTPUTS EXP: (before a submission's first sbatch) warns of the jobs that an
# earlier, stopped submission of EXP left in SLURM (hpc_pending_warn), then records this one as
# OUTPUTS/submissions/TOKEN (0600; the folder private, hpc_private_dir); sets hpc_pending_token,
# which hpc_slurm_sbatch_exec puts on every job, and hpc_pending_file. False when the record cannot
# be written (then nothing may be submitted).
hpc_pending_open() {
  local dir=$1/submissions exp=$2 start='' now text
  hpc_private_dir "$dir" || return 1
  hpc_pending_warn "$1" "$exp"
  hpc_pending_start_time start "$$" || true
  printf -v now '%(%s)T' -1
  hpc_pending_token=$now.$$.$RANDOM
  hpc_pending_file=$dir/$hpc_pending_token hpc_pending_held=0
  printf -v text 'exp=%s\nhost=%s\npid=%s\nstart=%s\ntime=%s\n' "$exp" "${HOSTNAME:-}" "$$" "$start" "$now"
  hpc_private_write "$hpc_pending_file" "$text" && return 0
  # A full disk: no part of a record is left behind.
  rm -f -- "${hpc_pending_file:?}" 2>/dev/null
  hpc_pending_token='' hpc_pending_file=''
  return 1
}

# hpc_pending_close [rm]: (once every job of the submission is recorded and released) marks its
# record 'ended', without a process; with rm (its jobs cancelled, or none submitted) removes it,
# so that a failed submission leaves nothing. Never through a link.
hpc_pending_close() {
  local f=${hpc_pending_file:-}
  hpc_pending_file='' hpc_pending_token=''
  [[ -n $f && -f $f && ! -L $f ]] || return 0
  if [[ ${1-} == rm ]]; then
    rm -f -- "${f:?}"
  else
    printf 'ended\n' >"$f"
  fi
}

# hpc_pending_files PATH...: (after hpc_pending_open) names in the record files of the submission
# that nothing else removes if it stops on the way (an interactive session's plan file and job
# script): a stopped record's removal (hpc_pending_remove) removes them too. False when the record
# cannot be appended to.
hpc_pending_files() {
  local path text=''
  [[ -n ${hpc_pending_file:-} && -f $hpc_pending_file && ! -L $hpc_pending_file ]] || return 1
  for path in "$@"; do text+="file=$path"$'\n'; done
  printf '%s' "$text" >>"$hpc_pending_file"
}

# hpc_pending_remove TOKEN: (after hpc_pending_scan) removes the record of TOKEN and the files it
# names (hpc_pending_files): each only in the records' outputs folder, the user's own regular
# file, never through a link.
hpc_pending_remove() {
  local path
  local -a paths=()
  [[ -z ${hpc_pending_files[$1]-} ]] || mapfile -t paths <<<"${hpc_pending_files[$1]}"
  for path in ${paths[@]+"${paths[@]}"}; do
    [[ $path == "$hpc_pending_dir"/* && $path != */../* && -f $path && ! -L $path && -O $path ]] || continue
    rm -f -- "${path:?}"
  done
  rm -f -- "${hpc_pending_dir:?}/submissions/${1:?}"
}

# hpc_pending_made PATH: (before a submission creates the file or folder PATH: a plan file, a kept
# script, a manifest, a map's or a study's folder) names it in the submission's record, so that
# 'cancel EXP' of a submission that stopped before it released its held jobs removes what it made
# (hpc_pending_unmake). Only for a submission whose jobs are held (hpc_pending_mark held): a
# single job's may run at once, and what it made stays. A path holding a newline is not named (the
# record is read by lines).
hpc_pending_made() {
  ((${hpc_pending_held:-0})) || return 0
  [[ -n ${hpc_pending_file:-} && -f $hpc_pending_file && ! -L $hpc_pending_file && $1 != *$'\n'* ]] || return 0
  printf 'made=%s\n' "$1" >>"$hpc_pending_file" 2>/dev/null || true
}

# hpc_pending_mark WORD: appends the line WORD to the submission's record: 'held' (its jobs are
# held until it releases them: a map, a study, a resubmission of their failed members), then
# 'released' just before it releases them (from then on its jobs may run: what it made stays).
hpc_pending_mark() {
  [[ -n ${hpc_pending_file:-} && -f $hpc_pending_file && ! -L $hpc_pending_file ]] || return 0
  [[ $1 != held ]] || hpc_pending_held=1
  printf '%s\n' "$1" >>"$hpc_pending_file" 2>/dev/null || true
}

# hpc_pending_unmake TOKEN: (cancel EXP, once the jobs of the stopped submission TOKEN are
# cancelled) when it was held and never released (hpc_pending_mark), removes what its record says
# it made (hpc_pending_made): each path only under the project's folder (hpc_pending_dir's
# parent), with no link on the way, and only while it is the user's own file or folder (a folder
# with what it holds: nothing of it ever ran). Reads the record as the user's own, 1 MiB at most.
hpc_pending_unmake() {
  local record=${hpc_pending_dir:?}/submissions/${1:?} top=${hpc_pending_dir%/*} text line path part fd
  local -a paths=()
  hpc_trusted_open "$record" || return 0
  fd=$hpc_trusted_fd
  text=''
  IFS= read -r -d '' -N 1048576 text <&"$fd" || true
  exec {fd}<&-
  [[ $text == *$'\nheld\n'* && $text != *$'\nreleased\n'* ]] || return 0
  while IFS= read -r line; do
    if [[ $line == made=* ]]; then paths=("${line#made=}" ${paths[@]+"${paths[@]}"}); fi
  done <<<"$text"
  # The newest first: files in a folder before it.
  for path in ${paths[@]+"${paths[@]}"}; do
    [[ $path == "$top"/* && $path != *'/../'* && $path != *'/..' && $path != *'/./'* ]] || continue
    part=$path
    while [[ $part != "$top" ]]; do
      [[ ! -L $part ]] || continue 2
      part=${part%/*}
    done
    if [[ -f $path && -O $path ]]; then
      rm -f -- "${path:?}"
    elif [[ -d $path && -O $path ]]; then
      rm -rf -- "${path:?}"
    fi
  done
  # The manifests' index (hpc_manage_index) that this cancel wrote while the removed manifests were
  # there: an index of no manifest is not kept (with manifests left, a row naming none is ignored).
  path=$hpc_pending_dir/manifests
  for part in "$path"/*.manifest; do [[ ! -e $part ]] || return 0; done
  [[ ! -f $path/.index || -L $path/.index || ! -O $path/.index ]] || rm -f -- "${path:?}/.index"
}

# hpc_pending_sbatch_starts: (in hpc_slurm_sbatch_exec's subshell, just before sbatch) appends the time
# to the submission's record: the last sbatch that may still be answering (hpc_pending_settled).
hpc_pending_sbatch_starts() {
  [[ -n ${hpc_pending_file:-} && -f $hpc_pending_file && ! -L $hpc_pending_file ]] || return 0
  printf 'sbatch=%(%s)T\n' -1 >>"$hpc_pending_file" 2>/dev/null || true
}

# hpc_pending_settled TOKEN: (after hpc_pending_scan) true when the submission of TOKEN has
# stopped and no job of it can come any more: it started no sbatch, or its last one started
# hpc_pending_settle_s seconds ago or more.
hpc_pending_settled() {
  ((hpc_pending_stopped[$1])) &&
    ((hpc_pending_last[$1] == 0 || hpc_pending_now - hpc_pending_last[$1] >= hpc_pending_settle_s))
}

# hpc_pending_sweep: (after hpc_pending_scan) once it found hpc_pending_sweep_at ended records or
# more, removes them, with one process: one every so many submissions. (A record being written
# is empty for a moment, never 'ended': it is never taken.)
hpc_pending_sweep() {
  ((${#hpc_pending_ended[@]} >= hpc_pending_sweep_at)) || return 0
  rm -f -- "${hpc_pending_ended[@]}"
}

# hpc_pending_scan OUTPUTS [EXP]: reads the records in OUTPUTS/submissions (those of EXP only,
# when given) that have not ended: the user's own regular files that nobody else can write, never
# through a link. Sets hpc_pending_dir (OUTPUTS), hpc_pending_ended (the paths of the ended
# records), hpc_pending_now, hpc_pending_tokens and, by token, hpc_pending_exp, hpc_pending_files
# (the files it names, a line each),
# hpc_pending_stopped (1: the submission no longer runs), hpc_pending_last (when its last sbatch
# started; 0: none did) and hpc_pending_where ('pid P on HOST, TIME'). A record is read
# only as the user's own file, 64 KiB of it at most (a map's or a study's names what it made:
# hpc_pending_made). No process unless a record has not ended.
hpc_pending_scan() {
  local want=${2-} f token key value exp host pid start time last current text when files
  hpc_pending_dir=$1 hpc_pending_tokens=() hpc_pending_ended=()
  declare -gA hpc_pending_exp=() hpc_pending_stopped=() hpc_pending_where=() hpc_pending_last=() hpc_pending_files=()
  printf -v hpc_pending_now '%(%s)T' -1
  for f in "$hpc_pending_dir"/submissions/*; do
    # Empty: being written (or no record at all: the pattern itself).
    if [[ ! -s $f ]] || ! hpc_trusted_read "$f" own 65536; then continue; fi
    text=$hpc_trusted_text
    if [[ $text == $'ended\n' ]]; then
      hpc_pending_ended+=("$f")
      continue
    fi
    hpc_trusted_check "$f" || continue
    exp='' host='' pid='' start='' time='' last=0 files=''
    while IFS='=' read -r key value; do
      case $key in
        exp) exp=$value ;;
        host) host=$value ;;
        pid) pid=$value ;;
        start) start=$value ;;
        time) time=$value ;;
        sbatch) [[ ! $value =~ ^[0-9]{1,15}$ ]] || ((10#$value <= last)) || last=$((10#$value)) ;;
        file) files+=$value$'\n' ;;
      esac
    done <<<"$text"
    # Numbers as written by hpc_pending_open (decimal, whatever their leading zeros).
    [[ -n $exp && $pid =~ ^[0-9]{1,15}$ && $time =~ ^[0-9]{1,15}$ ]] || continue
    pid=$((10#$pid)) time=$((10#$time))
    [[ -z $want || $exp == "$want" ]] || continue
    # Named as hpc_pending_open names them: the name is a key of the arrays below.
    token=${f##*/}
    [[ $token =~ ^[0-9]{1,15}\.[0-9]{1,10}\.[0-9]{1,5}$ ]] || continue
    hpc_pending_tokens+=("$token")
    hpc_pending_exp[$token]=$exp
    hpc_pending_last[$token]=$last
    hpc_pending_files[$token]=${files%$'\n'}
    if [[ $host == "${HOSTNAME:-}" ]]; then
      # Here: stopped unless that very process (PID and start time) still runs.
      current=''
      hpc_pending_start_time current "$pid" || true
      [[ -n $current && $current == "$start" ]] && hpc_pending_stopped[$token]=0 || hpc_pending_stopped[$token]=1
    else
      ((hpc_pending_now - time < hpc_pending_foreign_s)) && hpc_pending_stopped[$token]=0 ||
        hpc_pending_stopped[$token]=1
    fi
    printf -v when '%(%Y-%m-%d %H:%M:%S)T' "$time"
    hpc_pending_where[$token]="pid $pid on ${host:-an unknown host}, $when"
  done
}

# hpc_pending_jobs: (after hpc_pending_scan found records) asks squeue once for the user's jobs
# tagged with the tokens found: hpc_pending_ids (their job ids, ascending; an array's id once) and, by id,
# hpc_pending_job_token, hpc_pending_job_key (squeue's id: ID or ID_[TASKS]),
# hpc_pending_job_state ('STATE (REASON)', of its first line) and hpc_pending_job_left (1: held
# by the toolkit, or without a manifest: what the stopped submission left behind). False when
# squeue fails.
hpc_pending_jobs() {
  local out id key state reason comment token
  local -A wanted=()
  hpc_pending_ids=()
  declare -gA hpc_pending_job_token=() hpc_pending_job_key=() hpc_pending_job_state=() hpc_pending_job_left=()
  ((${#hpc_pending_tokens[@]})) || return 0
  for token in "${hpc_pending_tokens[@]}"; do wanted[$hpc_pending_tag$token]=$token; done
  # The comment last: whatever it holds, the fields before it are SLURM's own.
  # Bounded: a controller that does not answer must not hold a submission up.
  out=$(hpc_slurm -t 60 squeue -h -u "$EUID" -o '%F|%i|%T|%r|%k' 2>&1) || {
    hpc_say "squeue failed: ${out//$'\n'/ }"
    return 1
  }
  while IFS='|' read -r id key state reason comment; do
    [[ -n $comment && -n ${wanted[$comment]-} && $id =~ ^[0-9]+$ ]] || continue
    [[ -z ${hpc_pending_job_token[$id]-} ]] || continue
    token=${wanted[$comment]}
    hpc_pending_job_token[$id]=$token
    hpc_pending_job_key[$id]=$key
    # shellcheck disable=SC2034 # read by commands/status.bash and cancel.bash
    hpc_pending_job_state[$id]="$state${reason:+ ($reason)}"
    [[ $reason == JobHeldUser || ! -e $hpc_pending_dir/manifests/${hpc_pending_exp[$token]}_$id.manifest ]] &&
      hpc_pending_job_left[$id]=1 || hpc_pending_job_left[$id]=0
  done <<<"$out"
  # Ascending, as submitted (squeue lists pending jobs by priority).
  ((${#hpc_pending_job_token[@]} == 0)) ||
    mapfile -t hpc_pending_ids < <(printf '%s\n' "${!hpc_pending_job_token[@]}" | sort -n)
}

# hpc_pending_left TOKEN: (after hpc_pending_jobs) sets hpc_pending_left to the squeue ids of the
# jobs that the submission of TOKEN left behind (held, or without a manifest).
hpc_pending_left() {
  local id
  hpc_pending_left=()
  for id in ${hpc_pending_ids[@]+"${hpc_pending_ids[@]}"}; do
    [[ ${hpc_pending_job_token[$id]} != "$1" ]] || ((hpc_pending_job_left[$id] == 0)) ||
      hpc_pending_left+=("${hpc_pending_job_key[$id]}")
  done
}

# hpc_pending_prune: (after hpc_pending_jobs) removes the records of stopped submissions that
# left nothing behind in SLURM, once no job of theirs can come any more (hpc_pending_settled).
hpc_pending_prune() {
  local token
  for token in ${hpc_pending_tokens[@]+"${hpc_pending_tokens[@]}"}; do
    hpc_pending_settled "$token" || continue
    hpc_pending_left "$token"
    ((${#hpc_pending_left[@]} == 0)) || continue
    hpc_pending_remove "$token"
  done
}

# hpc_pending_warn OUTPUTS EXP: (at a submission of EXP) when an earlier submission of EXP
# stopped on the way, names the jobs it left in SLURM and how to cancel them; removes the records
# of those that left none. Never fails the submission.
hpc_pending_warn() {
  local token stopped=0 msg
  hpc_pending_scan "$1" "$2"
  hpc_pending_sweep
  for token in ${hpc_pending_tokens[@]+"${hpc_pending_tokens[@]}"}; do
    ((stopped += hpc_pending_stopped[$token]))
  done
  ((stopped)) || return 0
  hpc_pending_jobs || return 0
  for token in "${hpc_pending_tokens[@]}"; do
    ((hpc_pending_stopped[$token])) || continue
    hpc_pending_left "$token"
    ((${#hpc_pending_left[@]})) || continue
    msg="warning: an earlier submission of $2 stopped before it had recorded and released its jobs"
    msg+=" (${hpc_pending_where[$token]}); SLURM still holds ${hpc_pending_left[*]}: see them with"
    msg+=" 'bash job_submitter.sh status $2', cancel them with 'bash job_submitter.sh cancel $2'"
    hpc_say "$msg"
  done
  hpc_pending_prune
}
