# shellcheck shell=bash
# hpc_cleanup.bash: the per-node part of submit_plai_cleanup. On one node, finds the user's
# leftover emulated SLURM_TMPDIR folders (ROOT/hpc_tmpdir.<user>.<job id>.<16 hex digits>, made
# by hpc_files/lib/hpc_job.bash on clusters that give jobs none, the digits unguessable so that
# nobody can plant one in advance) and removes those of jobs that have ended. Sourced by cleanup_node.sh (the job each
# node gets) and by the bats tests, which stub squeue on PATH. Functions are prefixed hpc_cleanup_.
#
# The rule (hpc_cleanup_select; the dry run and the real run share it): an entry of ROOT is
# removed only when ALL of these hold, checked in this order; the first that fails keeps it and
# gives the reason (code: text):
#   name       its name is exactly hpc_tmpdir.<user>.<job id>.<16 hex digits>, or from earlier
#              versions hpc_tmpdir.<user>.<job id> (<user> compared as a string, never as a
#              pattern: bob's run never matches hpc_tmpdir.bobby.1; the job id is digits
#              without a leading zero, as SLURM writes it; the digits lower-case);
#   symlink    it is not a symbolic link (tested before anything looks inside; never followed);
#   not-dir    it is a directory;
#   owner      it is owned by the user running the cleanup;
#   other-fs   it is on ROOT's file system (stat %d), not a mount point of another one;
#   mount      no other file system is mounted anywhere inside it (/proc/self/mountinfo);
#   no-record  it holds the toolkit's record .hpc_tmpdir (a regular file) naming that job id;
#   job-active squeue, asked once for all the user's jobs in every state, does not show the job
#              in a state other than an ended one (COMPLETED, CANCELLED, FAILED, TIMEOUT,
#              NODE_FAIL, BOOT_FAIL, DEADLINE, OUT_OF_MEMORY, PREEMPTED: hpc_facts_state_ended,
#              the list status uses too); a job squeue no longer knows has
#              ended. When squeue fails, nothing at all is removed (code squeue).
# Removal: the entry checked again (a real folder, the user's), du -sbx (the bytes freed), then
# rm -rf --one-file-system -- "${path:?}" (once more after making the user's unwritable
# subfolders writable, when that stopped it). Whatever rm leaves is reported kept (rm-failed).

hpc_cleanup_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The toolkit's own libraries: hpc_files/ beside this folder (the repository), or this folder's
# parent when it is installed inside a project's hpc_files/.
if [[ -f $hpc_cleanup_lib_dir/../hpc_files/lib/hpc_common.bash ]]; then
  hpc_files_dir=${hpc_cleanup_lib_dir%/*}/hpc_files
else
  hpc_files_dir=${hpc_cleanup_lib_dir%/*}
fi
# shellcheck source=hpc_files/lib/hpc_common.bash
source "$hpc_files_dir/lib/hpc_common.bash"
# shellcheck source=hpc_files/lib/hpc_configs.bash
source "$hpc_files_dir/lib/hpc_configs.bash"

# Per job id of this user: its state (hpc_cleanup_query_jobs).
declare -gA hpc_cleanup_job_state=()

# hpc_cleanup_user: prints the user name in the folders' names, worked out as the job side does
# (hpc_job_tmpdir_path): $USER, else id -un.
hpc_cleanup_user() {
  printf '%s\n' "${USER:-$(id -un)}"
}

# hpc_cleanup_query_jobs: asks squeue once for every job of this user, in every state, and sets
# hpc_cleanup_job_state[ID]=STATE (%A: array tasks by their own job id, as in the folder names).
# On failure (squeue's exit status, or a line that is not "ID STATE") sets hpc_cleanup_error and
# returns 1; squeue's own message goes to stderr.
hpc_cleanup_query_jobs() {
  local out rc=0 line uid
  local -a cmd
  hpc_cleanup_job_state=()
  hpc_cleanup_error=''
  uid=$(id -u)
  cmd=(squeue -h -u "$uid" -t all -o '%A %T')
  # A controller that does not answer must not hold the job until its time limit.
  if command -v timeout >/dev/null 2>&1; then cmd=(timeout 120 "${cmd[@]}"); fi
  out=$("${cmd[@]}") || rc=$?
  if ((rc != 0)); then
    hpc_cleanup_error="squeue failed with exit status $rc: whether these jobs have ended is unknown"
    return 1
  fi
  while IFS= read -r line; do
    [[ -n $line ]] || continue
    if [[ ! $line =~ ^([0-9]+)\ ([A-Z_]+)$ ]]; then
      hpc_cleanup_error="squeue printed a line that is not 'JOBID STATE': $(printf '%q' "$line")"
      return 1
    fi
    hpc_cleanup_job_state[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
  done <<<"$out"
}

# hpc_cleanup_read_mounts: sets hpc_cleanup_mounts to every mount point of this node, decoded
# from /proc/self/mountinfo (empty when it cannot be read).
hpc_cleanup_read_mounts() {
  local _id _parent _devno _source point _rest
  hpc_cleanup_mounts=()
  [[ -r /proc/self/mountinfo ]] || return 0
  while read -r _id _parent _devno _source point _rest; do
    point=${point//\\040/ }
    point=${point//\\011/$'\t'}
    point=${point//\\012/$'\n'}
    point=${point//\\134/\\}
    hpc_cleanup_mounts+=("$point")
  done </proc/self/mountinfo
}

# hpc_cleanup_has_mount_inside PATH: true when a file system is mounted at PATH or below it
# (PATH physical, as mountinfo names mount points).
hpc_cleanup_has_mount_inside() {
  local point
  for point in "${hpc_cleanup_mounts[@]}"; do
    [[ $point == "$1" || $point == "$1"/* ]] && return 0
  done
  return 1
}

# _hpc_cleanup_keep NAME CODE TEXT: records that NAME is kept, and why.
_hpc_cleanup_keep() {
  hpc_cleanup_kept+=("$1")
  hpc_cleanup_kept_code+=("$2")
  hpc_cleanup_kept_text+=("$3")
}

# hpc_cleanup_static_reason ROOT ROOT_DEV ROOT_PHYSICAL USER NAME: every check of the rule but
# squeue's. Prints nothing and returns 0 when the entry ROOT/NAME passes them; else prints
# "CODE TEXT" (the first check it fails) and returns 1.
hpc_cleanup_static_reason() {
  local root=$1 root_dev=$2 root_phys=$3 user=$4 name=$5 id path
  path=$root/$name
  hpc_facts_tmpdir_name_id "$user" "$name" || true
  id=$hpc_facts_tmpdir_id
  if [[ -z $id ]]; then
    printf 'name not named %s.%s.<job id>.<16 hex digits>\n' "$hpc_facts_tmpdir_prefix" "$user"
  elif [[ -L $path ]]; then
    printf 'symlink a symbolic link, never followed\n'
  elif [[ ! -d $path ]]; then
    printf 'not-dir not a directory\n'
  elif [[ ! -O $path ]]; then
    printf 'owner not owned by %s\n' "$user"
  elif [[ $(stat -c %d -- "$path" 2>/dev/null) != "$root_dev" ]]; then
    printf 'other-fs a mount point of another file system than the root\n'
  elif hpc_cleanup_has_mount_inside "$root_phys/$name"; then
    printf 'mount another file system is mounted inside it\n'
  elif ! hpc_facts_tmpdir_record_matches "$path" "$id"; then
    printf 'no-record no %s record of job %s in it: not made by the toolkit for that job\n' "$hpc_facts_tmpdir_record" \
      "$id"
  else
    return 0
  fi
  return 1
}

# hpc_cleanup_select ROOT: the rule (see the top of this file), applied to every entry of the
# folder ROOT named hpc_tmpdir.*. Sets
#   hpc_cleanup_chosen   the names to remove (their jobs have ended), hpc_cleanup_chosen_why
#                        the job's last state for each;
#   hpc_cleanup_kept, hpc_cleanup_kept_code, hpc_cleanup_kept_text   the others, and why.
# Returns 1 (with hpc_cleanup_error, and every entry kept) when squeue fails.
hpc_cleanup_select() {
  local root=$1 user root_dev root_phys path name reason id state
  local -a pending=()
  hpc_cleanup_chosen=() hpc_cleanup_chosen_why=() hpc_cleanup_kept=() hpc_cleanup_kept_code=() hpc_cleanup_kept_text=()
  hpc_cleanup_error=''
  user=$(hpc_cleanup_user)
  root_dev=$(stat -c %d -- "$root/.") || {
    hpc_cleanup_error="cannot stat the root $root"
    return 1
  }
  root_phys=$(cd -P -- "$root" && pwd -P) || {
    hpc_cleanup_error="cannot enter the root $root"
    return 1
  }
  hpc_cleanup_read_mounts
  for path in "$root/$hpc_facts_tmpdir_prefix".*; do
    # No match leaves the pattern itself.
    [[ -e $path || -L $path ]] || continue
    name=${path##*/}
    if reason=$(hpc_cleanup_static_reason "$root" "$root_dev" "$root_phys" "$user" "$name"); then
      pending+=("$name")
    else
      _hpc_cleanup_keep "$name" "${reason%% *}" "${reason#* }"
    fi
  done
  ((${#pending[@]})) || return 0

  if ! hpc_cleanup_query_jobs; then
    for name in "${pending[@]}"; do
      _hpc_cleanup_keep "$name" squeue "$hpc_cleanup_error"
    done
    return 1
  fi
  for name in "${pending[@]}"; do
    hpc_facts_tmpdir_name_id "$user" "$name" || continue
    id=$hpc_facts_tmpdir_id
    state=${hpc_cleanup_job_state[$id]-}
    if [[ -n $state ]] && ! hpc_facts_state_ended "$state"; then
      _hpc_cleanup_keep "$name" job-active "job $id is $state"
    else
      hpc_cleanup_chosen+=("$name")
      hpc_cleanup_chosen_why+=("job $id ended: ${state:-squeue no longer lists it}")
    fi
  done
}

# hpc_cleanup_bytes PATH: prints the bytes in PATH on its own file system (du -sbx), 0 if unknown.
hpc_cleanup_bytes() {
  local out
  out=$(du -sbx -- "$1" 2>/dev/null) || true
  out=${out%%[[:space:]]*}
  [[ $out =~ ^[0-9]+$ ]] || out=0
  printf '%s\n' "$out"
}

# hpc_cleanup_rm PATH: removes the folder PATH and all it holds, never leaving its file system.
# Folders inside that the user made unwritable (chmod a-w) stop rm: those are made writable
# (find -xdev: on PATH's file system only; symlinks are not followed) and rm tries once more.
hpc_cleanup_rm() {
  local path=${1:?}
  rm -rf --one-file-system -- "${path:?}" 2>/dev/null && return 0
  [[ -d $path && ! -L $path ]] || return 0
  find "${path:?}" -xdev -type d ! -perm -u=rwx -exec chmod u+rwx -- {} + 2>/dev/null || true
  rm -rf --one-file-system -- "${path:?}" || true
}

# hpc_cleanup_list ROOT: prints every entry of ROOT named hpc_tmpdir.* as ls -ld would (mode,
# owner, name; a symlink's target), names quoted when they hold odd characters.
hpc_cleanup_list() {
  local root=$1 path n=0 line
  local -a lines=()
  for path in "$root/$hpc_facts_tmpdir_prefix".*; do
    [[ -e $path || -L $path ]] || continue
    n=$((n + 1))
    line=$(stat -c '%A %U' -- "$path" 2>/dev/null) || line='?'
    line+=" $(printf '%q' "${path##*/}")"
    [[ ! -L $path ]] || line+=" -> $(printf '%q' "$(readlink -- "$path")")"
    lines+=("  $line")
  done
  local word=entries
  ((n != 1)) || word=entry
  printf '%s %s named %s.* in %s\n' "$n" "$word" "$hpc_facts_tmpdir_prefix" "$root"
  ((n == 0)) || printf '%s\n' "${lines[@]}"
}

# hpc_cleanup_node ROOT_TEMPLATE DRY_RUN: the whole job of one node. Expands ROOT_TEMPLATE (the
# profile's tmpdir.root, e.g. ${HPC_LOCAL_SCRATCH:-/tmp}) from this node's environment, lists
# what is there, applies hpc_cleanup_select, removes the chosen folders (DRY_RUN 1: only lists
# them), lists again, and ends with one line
#   summary node=N mode=real|dry-run removed=N freed_bytes=N kept=N why=CODE:N,...|- status=S
# (status ok, squeue-failed, rm-failed or bad-root). Returns 0 when status is ok, else 1.
hpc_cleanup_node() {
  local template=$1 dry=${2:-0} node root mode=real status=ok what
  local name path bytes freed=0 removed=0 i code why=''
  local -A counts=()
  node=${SLURMD_NODENAME:-$(hostname)}
  ((dry == 0)) || mode='dry-run'
  if ! hpc_configs_expand "$template"; then
    printf 'cannot expand the root %s on %s\n' "$template" "$node"
    printf 'summary node=%s mode=%s removed=0 freed_bytes=0 kept=0 why=- status=bad-root\n' "$node" "$mode"
    return 1
  fi
  root=${hpc_configs_argv[0]%/}
  root=${root:-/}
  what=removing
  ((dry == 0)) || what='dry run: removing nothing'
  printf 'hpc-cleanup on %s: user %s (uid %s), root %s (from %s), %s\n' "$node" "$(hpc_cleanup_user)" \
    "$(id -u)" "$root" "$template" "$what"
  if [[ $root != /* ]]; then
    printf 'the root %s is not an absolute path: nothing done\n' "$root"
    printf 'summary node=%s mode=%s removed=0 freed_bytes=0 kept=0 why=- status=bad-root\n' "$node" "$mode"
    return 1
  fi
  if [[ ! -d $root ]]; then
    printf 'the root %s does not exist on %s: nothing to clean\n' "$root" "$node"
    printf 'summary node=%s mode=%s removed=0 freed_bytes=0 kept=0 why=- status=ok\n' "$node" "$mode"
    return 0
  fi

  printf 'before: '
  hpc_cleanup_list "$root"
  if ! hpc_cleanup_select "$root"; then
    printf 'NOTHING REMOVED: %s\n' "$hpc_cleanup_error"
    status=squeue-failed
  fi
  for i in "${!hpc_cleanup_chosen[@]}"; do
    name=${hpc_cleanup_chosen[i]}
    path=$root/$name
    # Checked again just before: the entry must still be this user's real folder.
    if [[ -L $path || ! -d $path || ! -O $path ]]; then
      printf 'gone: %s (it changed or disappeared since it was checked)\n' "$name"
      continue
    fi
    bytes=$(hpc_cleanup_bytes "$path")
    if ((dry)); then
      printf 'would remove: %s (%s; %s bytes)\n' "$name" "${hpc_cleanup_chosen_why[i]}" "$bytes"
    else
      hpc_cleanup_rm "$path"
      if [[ -e $path || -L $path ]]; then
        bytes=$((bytes - $(hpc_cleanup_bytes "$path")))
        _hpc_cleanup_keep "$name" rm-failed "rm could not remove all of it ($bytes bytes were freed)"
        freed=$((freed + bytes))
        status=rm-failed
        continue
      fi
      printf 'removed: %s (%s; %s bytes freed)\n' "$name" "${hpc_cleanup_chosen_why[i]}" "$bytes"
    fi
    removed=$((removed + 1))
    freed=$((freed + bytes))
  done
  for i in "${!hpc_cleanup_kept[@]}"; do
    code=${hpc_cleanup_kept_code[i]}
    printf 'kept: %s (%s: %s)\n' "$(printf '%q' "${hpc_cleanup_kept[i]}")" "$code" "${hpc_cleanup_kept_text[i]}"
    counts[$code]=$((${counts[$code]:-0} + 1))
  done
  for code in job-active name symlink not-dir owner other-fs mount no-record squeue rm-failed; do
    [[ -z ${counts[$code]:-} ]] || why+=${why:+,}$code:${counts[$code]}
  done
  printf 'after: '
  hpc_cleanup_list "$root"
  printf 'summary node=%s mode=%s removed=%s freed_bytes=%s kept=%s why=%s status=%s\n' "$node" "$mode" \
    "$removed" "$freed" "${#hpc_cleanup_kept[@]}" "${why:--}" "$status"
  [[ $status == ok ]]
}
