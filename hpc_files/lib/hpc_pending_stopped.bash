# shellcheck shell=bash
# hpc_pending_stopped.bash: what is done with the records of submissions that stopped on the way
# (hpc_pending.bash): the jobs SLURM still holds with their tag (hpc_pending_jobs), those each left
# behind (hpc_pending_left), the removal of a record, of what it names and of what a held
# submission made (hpc_pending_remove, hpc_pending_unmake, hpc_pending_prune once
# hpc_pending_settled), and the files an interactive session names in its record
# (hpc_pending_files). Loaded by hpc_pending_stopped_load: by the commands that read the records
# (hpc_manage.bash: status, cancel), by an interactive session, and by a submission only when it
# finds a record that did not end (a plain submission finds none, and parses none of this).
# Functions are prefixed hpc_pending_.

# What this file reads, set by the others: declared here, not set. hpc_pending.bash: the scan's
# results and the tag; hpc_common.bash: the descriptor hpc_trusted_open opened.
declare -g hpc_pending_dir hpc_pending_now hpc_pending_settle_s hpc_pending_tag hpc_pending_file hpc_trusted_fd
declare -ga hpc_pending_tokens
declare -gA hpc_pending_exp hpc_pending_stopped hpc_pending_last hpc_pending_files

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

# hpc_pending_settled TOKEN: (after hpc_pending_scan) true when the submission of TOKEN has
# stopped and no job of it can come any more: it started no sbatch, or its last one started
# hpc_pending_settle_s seconds ago or more.
hpc_pending_settled() {
  ((hpc_pending_stopped[$1])) &&
    ((hpc_pending_last[$1] == 0 || hpc_pending_now - hpc_pending_last[$1] >= hpc_pending_settle_s))
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
