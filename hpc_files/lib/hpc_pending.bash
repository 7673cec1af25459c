# shellcheck shell=bash
# hpc_pending.bash: submissions in progress, recorded before their first sbatch, so that no job
# outlives its submitter's knowledge (how: at the end of this file). Functions are prefixed
# hpc_pending_.

# shellcheck disable=SC2034 # read by hpc_slurm.bash (the jobs' tag) and hpc_pending_stopped.bash
hpc_pending_tag=hpc-toolkit:
# Seconds after which a record written on another host is taken as a stopped submission (its
# process cannot be looked at from here; a submission's sbatch calls take seconds).
hpc_pending_foreign_s=${hpc_pending_foreign_s:-600}
# Seconds after its last sbatch started before a stopped submission's record may go: sbatch
# ignores the signals that stop the submitter and SIGKILL reaches the submitter alone, so a job
# may reach SLURM after the submitter died (sbatch retries for minutes when the controller is
# busy). Its record stays until then, so that the job is found when it comes.
hpc_pending_settle_s=${hpc_pending_settle_s:-600}

# What this file reads, set by the others: declared here, not set, so that the linter knows each
# name. hpc_common.bash: the text hpc_trusted_read read; hpc_pending_stopped.bash: the jobs a
# stopped submission left (hpc_pending_left); hpc_facts.bash: the digits.
declare -g hpc_trusted_text hpc_facts_digits
declare -ga hpc_pending_left

# hpc_pending_start_time PID VAR: sets VAR to the start time of process PID (field 22 of
# /proc/PID/stat, in clock ticks since boot): with the PID, it names one process (a PID is reused).
# False when there is no such process. No process started.
hpc_pending_start_time() {
  local -n _hpc_pending_out=$1
  local stat head
  local -a fields
  { IFS= read -r stat <"/proc/$2/stat"; } 2>/dev/null || return 1
  # The command's name, in parentheses, may hold spaces: the fields after its last ') ', found
  # as the shortest suffix (a longest prefix, ##*') ', costs Bash a match at every length).
  head=${stat%') '*}
  [[ $head != "$stat" ]] || return 1
  read -r -a fields <<<"${stat:${#head}+2}"
  [[ -n ${fields[19]-} && ${fields[19]} != *[!"$hpc_facts_digits"]* ]] || return 1
  _hpc_pending_out=${fields[19]}
}

# Ended records in the folder before one submission removes them (one rm for all). Every
# submission reads each ended record to know it ended (about 0.16 ms of CPU each, its checks
# included) and one rm costs about 1 ms: 4 keeps both low (about 0.5 ms a submission on average;
# 32 cost about 2.5 ms, 16 records read on average).
hpc_pending_sweep_at=${hpc_pending_sweep_at:-4}

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

# hpc_pending_sbatch_starts: (in hpc_slurm_sbatch_exec's subshell, just before sbatch) appends the time
# to the submission's record: the last sbatch that may still be answering (hpc_pending_settled).
hpc_pending_sbatch_starts() {
  [[ -n ${hpc_pending_file:-} && -f $hpc_pending_file && ! -L $hpc_pending_file ]] || return 0
  printf 'sbatch=%(%s)T\n' -1 >>"$hpc_pending_file" 2>/dev/null || true
}

# hpc_pending_sweep: (after hpc_pending_scan) once it found hpc_pending_sweep_at ended records or
# more, removes them, with one process: one every so many submissions. (A record being written
# is empty for a moment, never 'ended': it is never taken.)
hpc_pending_sweep() {
  ((${#hpc_pending_ended[@]} >= hpc_pending_sweep_at)) || return 0
  rm -f -- "${hpc_pending_ended[@]}"
}

# shellcheck disable=SC2034 # the arrays by token: read by hpc_pending_stopped.bash and the commands
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

# hpc_pending_stopped_load: loads hpc_pending_stopped.bash, what is done with the records of
# stopped submissions, once: only where one is found, or a command reads them.
hpc_pending_stopped_load() {
  # shellcheck source=hpc_files/lib/hpc_pending_stopped.bash
  declare -F hpc_pending_jobs >/dev/null || source "${BASH_SOURCE[0]%/*}/hpc_pending_stopped.bash"
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
  hpc_pending_stopped_load
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

[[ ${BASH_SOURCE[0]} == "$0" ]] || return 0
# The long comments of this file, after its last command, where Bash never reads them (it parses
# every comment it reads, and every submission reads this file).

# Submissions in progress (see the top of this file): no job
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
# must); the ended records are removed in batches (hpc_pending_sweep). What is done with a record
# that did not end is in hpc_pending_stopped.bash, loaded only then (hpc_pending_stopped_load).
# Functions are prefixed hpc_pending_.
