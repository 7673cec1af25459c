# shellcheck shell=bash
# hpc_stage_submit.bash: data staging (--data), the submit side. At submission, the named paths
# under ${SCRATCH}/${project_name} (BASE) are validated and packed into one archive, cached under
# BASE/.staging/ and reused while nothing under the paths changed; in the job, every node unpacks
# it (hpc_stage_node.bash). Functions are prefixed hpc_stage_; none exits the caller's shell.
# The archive's format, the measurements behind it and the layout of the cache: docs/staging.md.

# shellcheck source=hpc_files/lib/hpc_common.bash
source "${BASH_SOURCE[0]%/*}/hpc_common.bash"
# The size and rate formats of the node side's messages, used here too.
# shellcheck source=hpc_files/lib/hpc_stage_node.bash
source "${BASH_SOURCE[0]%/*}/hpc_stage_node.bash"

# Seconds between progress lines of a build (they start after the first interval).
hpc_stage_progress_s=${hpc_stage_progress_s:-5}

# hpc_stage_realpath VAR OPTION... PATH: realpath's answer into VAR, exact (even a trailing newline).
hpc_stage_realpath() {
  local -n hpc_stage_out=$1
  local answer
  shift
  answer=$(realpath "$@" && printf x) || return 1
  answer=${answer%x}
  # shellcheck disable=SC2034 # a nameref: assigns the caller's VAR
  hpc_stage_out=${answer%$'\n'}
}

# hpc_stage_validate BASE PATH...: checks each PATH: relative to BASE (exists; inside BASE after
# resolving '..' and symlinks; not BASE itself or its .staging cache), or absolute: inside BASE it
# is BASE's (made relative), elsewhere (a site's /datasets, a lab's shared read-only folder) one
# the user can read, staged under its own name (hpc_stage_validate_outside). Sets hpc_stage_paths
# to the normalised paths ('..', '.' and '//' removed as written, not through symlinks, so that
# SLURM_TMPDIR gets the names the user gave; absolute ones stay absolute), sorted, without
# duplicates or relative paths inside another one. A bad path: one line '-d/--data: 'PATH':
# problem', return 2; creates nothing.
hpc_stage_validate() {
  local base=$1 base_real='' p rel norm real q nested top
  local -a norms=() sorted=()
  # The first name in SLURM_TMPDIR of each path, and the path given for it (two paths of one
  # name, one of them from outside BASE, would be unpacked over each other).
  local -A inside_names=() outside_names=() outside_norms=()
  shift
  hpc_stage_paths=()
  [[ $base == /* ]] || base=$PWD/$base
  base=${base%/}
  hpc_stage_realpath base_real -e -- "$base" 2>/dev/null || base_real=''
  if (($# == 0)); then
    hpc_say "-d/--data: needs at least one path relative to $base"
    return 2
  fi
  for p; do
    local problem=''
    rel=$p
    if [[ $p == /* ]] && hpc_stage_realpath norm -m -s --relative-to="$base" -- "$p" &&
      [[ $norm != .. && $norm != ../* ]]; then
      rel=$norm
    fi
    if [[ -z $p ]]; then
      problem="is empty"
    elif [[ $rel == /* ]]; then
      hpc_stage_validate_outside "$base" "$base_real" "$p"
      problem=$hpc_stage_problem norm=$hpc_stage_norm
      top=${norm##*/}
      if [[ -z $problem && -n ${outside_norms[$top]-} && ${outside_norms[$top]} != "$norm" ]]; then
        problem="would be staged as $top in SLURM_TMPDIR, as '${outside_names[$top]}' is; give only one of them"
      elif [[ -z $problem && -n ${inside_names[$top]-} ]]; then
        problem="would be staged as $top in SLURM_TMPDIR, as '${inside_names[$top]}' is; give only one of them"
      fi
      [[ -n $problem ]] || outside_names[$top]=$p outside_norms[$top]=$norm
    elif ! hpc_stage_realpath norm -m -s --relative-to="$base" -- "$base/$rel"; then
      problem="cannot be resolved"
    elif [[ $norm == . ]]; then
      problem="is $base itself; name the folders or files inside it"
    elif [[ $norm == .. || $norm == ../* ]]; then
      problem="is outside $base; a path elsewhere is given absolute (one you can read, e.g. /datasets/NAME),"
      problem+=" and is staged under its own name"
    elif [[ $norm == .staging || $norm == .staging/* ]]; then
      problem="is the toolkit's archive cache"
    elif [[ -z $base_real ]]; then
      problem="does not exist: there is no $base"
    elif [[ ! -e $base/$norm ]]; then
      if [[ -L $base/$norm ]]; then problem="is a symlink to something that does not exist"; else
        problem="does not exist in $base"
      fi
    elif ! hpc_stage_realpath real -e -- "$base/$norm"; then
      problem="cannot be resolved"
    elif [[ $real != "$base_real"/* ]]; then
      problem="resolves to $real, outside $base"
    elif [[ $real == "$base_real/.staging" || $real == "$base_real/.staging/"* ]]; then
      problem="resolves into the toolkit's archive cache"
    fi
    if [[ -z $problem && $norm != /* ]]; then
      top=${norm%%/*}
      if [[ -n ${outside_names[$top]-} ]]; then
        problem="would be staged as $top in SLURM_TMPDIR, as '${outside_names[$top]}' is; give only one of them"
      fi
      inside_names[$top]=$p
    fi
    if [[ -n $problem ]]; then
      hpc_say "-d/--data: '$p': $problem"
      return 2
    fi
    norms+=("$norm")
  done
  mapfile -d '' -t sorted < <(printf '%s\0' "${norms[@]}" | LC_ALL=C sort -zu)
  for p in "${sorted[@]}"; do
    nested=0
    for q in "${hpc_stage_paths[@]}"; do
      # Only BASE's paths nest: one from elsewhere is staged under its own name, whole.
      if [[ $p != /* && $q != /* && $p == "$q"/* ]]; then
        nested=1
        break
      fi
    done
    ((nested)) || hpc_stage_paths+=("$p")
  done
  return 0
}

# hpc_stage_validate_outside BASE BASE_REAL PATH: (hpc_stage_validate) the absolute PATH outside
# BASE: sets hpc_stage_norm to it normalised (not through symlinks) and hpc_stage_problem to why
# it cannot be staged (empty when it can): it must exist, be readable by this user (a folder
# searchable too; what is inside is tar's to read), and neither be the root nor hold BASE (whose
# archive cache would be archived into itself).
hpc_stage_validate_outside() {
  local base=$1 base_real=$2 p=$3 real up
  hpc_stage_problem='' hpc_stage_norm=''
  if ! hpc_stage_realpath hpc_stage_norm -m -s -- "$p"; then
    hpc_stage_problem="cannot be resolved"
  elif [[ $hpc_stage_norm == / ]]; then
    hpc_stage_problem="is the root folder; name the folders or files inside it"
  elif [[ ! -e $hpc_stage_norm ]]; then
    hpc_stage_problem="does not exist"
    [[ ! -L $hpc_stage_norm ]] || hpc_stage_problem="is a symlink to something that does not exist"
    # Hidden by a folder above it that this user cannot search: unreadable, not missing.
    up=$hpc_stage_norm
    while [[ $up == /*/* ]]; do
      up=${up%/*}
      if [[ -d $up ]]; then
        [[ -x $up ]] || hpc_stage_validate_unreadable
        break
      fi
    done
  elif ! hpc_stage_realpath real -e -- "$hpc_stage_norm"; then
    hpc_stage_problem="cannot be resolved"
  elif [[ -n $base_real && ($real == "$base_real/.staging" || $real == "$base_real/.staging/"*) ]]; then
    hpc_stage_problem="resolves into the toolkit's archive cache"
  elif [[ -n $base_real && ($real == / || $base_real == "$real" || $base_real == "$real"/*) ]]; then
    hpc_stage_problem="holds $base and its archive cache (.staging); name the folders or files inside it"
  elif [[ ! -r $real || (-d $real && ! -x $real) ]]; then
    hpc_stage_validate_unreadable
  fi
}

# hpc_stage_validate_unreadable: (hpc_stage_validate_outside) the path cannot be read by this user.
hpc_stage_validate_unreadable() {
  local who
  who=$(id -un 2>/dev/null) || who=${USER:-this user}
  hpc_stage_problem="cannot be read by you ($who); a shared path must be readable, folders searchable,"
  hpc_stage_problem+=" by whoever submits"
}

# hpc_stage_key PATH...: prints the cache key of a normalised, sorted path list.
hpc_stage_key() {
  local sum
  sum=$(printf '%s\0' "$@" | sha256sum) || return 1
  printf '%s\n' "${sum:0:16}"
}

# hpc_stage_snapshot BASE PATH...: prints the current state of the paths, one sorted line per
# entry (type, size, mtime, ctime, ./path, link target): one find and one sort, no per-file
# process. Top-level symlinks are followed (as the archive does); others are not.
hpc_stage_snapshot() {
  local base=$1 p
  local -a args=()
  shift
  for p; do [[ $p == /* ]] || args+=("./$p"); done
  (
    rc=0
    if ((${#args[@]})); then
      (cd -- "$base" && LC_ALL=C find -H "${args[@]}" -printf '%y\t%s\t%T@\t%C@\t%p\t%l\n') || rc=1
    fi
    # A path from outside BASE, listed as it lands in SLURM_TMPDIR: under its own name.
    for p; do
      [[ $p == /* ]] || continue
      (cd -- "${p%/*}/" && LC_ALL=C find -H "./${p##*/}" -printf '%y\t%s\t%T@\t%C@\t%p\t%l\n') || rc=1
    done
    exit "$rc"
  ) | LC_ALL=C sort
}

# hpc_stage_is_current BASE KEY PATH...: true when BASE/.staging/KEY names a complete archive
# (size as recorded) whose manifest equals the paths' current state.
hpc_stage_is_current() {
  local base=$1 key=$2 ver dir size
  shift 2
  ver=$(readlink -- "$base/.staging/$key" 2>/dev/null) || return 1
  [[ $ver == "$key".v* ]] || return 1
  dir=$base/.staging/$ver
  [[ -f $dir/manifest && -f $dir/data.tar && -f $dir/size ]] || return 1
  size=$(stat -c %s -- "$dir/data.tar") || return 1
  [[ $(<"$dir/size") == "$size" ]] || return 1
  hpc_stage_snapshot "$base" "$@" 2>/dev/null | cmp -s - "$dir/manifest"
}

# hpc_stage_progress FILE TOTAL: (in the background) every hpc_stage_progress_s seconds, one line
# on stderr with FILE's size, TOTAL and the rate; ends on SIGTERM.
hpc_stage_progress() {
  local file=$1 total=$2 start=$EPOCHREALTIME size pct sleeper='' msg
  # shellcheck disable=SC2317,SC2329 # invoked by the trap
  hpc_stage_progress_end() {
    [[ -z $sleeper ]] || kill "$sleeper" 2>/dev/null || true
    exit 0
  }
  trap hpc_stage_progress_end TERM
  while :; do
    # Its sleep writes to none of the caller's outputs: one stopped in the instant after it started
    # outlives the monitor, and held the caller's output (a caller reading it waited) for seconds.
    sleep "$hpc_stage_progress_s" >/dev/null 2>&1 &
    sleeper=$!
    wait "$sleeper" || true
    sleeper=''
    size=$(stat -c %s -- "$file" 2>/dev/null) || continue
    pct=$((total > 0 ? size * 100 / total : 0))
    ((pct < 100)) || pct=99
    printf -v msg '%s' "archiving: $(hpc_human_size "$size") of about $(hpc_human_size "$total")" \
      " ($pct%) in $(hpc_stage_rate "$size" "$start")"
    hpc_say "$msg"
  done
}

# hpc_stage_monitor_stop PID: stops the progress monitor PID (this shell's child) and reaps it,
# bounded: a TERM that reaches it before its own trap is set (on a loaded machine the build can end
# before the monitor has run its first line) is lost, and an unbounded wait then held the build for
# ever. KILL once it is still running (not a zombie) after 2 s.
hpc_stage_monitor_stop() {
  local pid=$1 i state=''
  kill "$pid" 2>/dev/null || true
  for ((i = 0; i < 20; i++)); do
    { read -r _ _ state _ <"/proc/$pid/stat"; } 2>/dev/null || break
    [[ $state != Z ]] || break
    sleep 0.1
  done
  [[ $state == Z ]] || kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# hpc_stage_prune STAGING KEY LOCKED [MINE]: removes superseded versions of KEY: all of them when
# LOCKED is 1, else only MINE (once superseded) and those superseded for over a day; and build
# folders abandoned for over a day. Never the current one, never through a symlink.
hpc_stage_prune() {
  local staging=$1 key=$2 locked=$3 mine=${4:-} current d name
  local -a old=()
  current=$(readlink -- "$staging/$key" 2>/dev/null) || return 0
  mapfile -d '' -t old < \
    <(find "$staging" -mindepth 1 -maxdepth 1 \( -name '.tmp.*' -o -name "$key.v*" \) -mmin +1440 -print0 2>/dev/null)
  for d in "$staging/$key".v*; do
    name=${d##*/}
    [[ $locked == 1 || $name == "$mine" ]] && old+=("$d")
  done
  for d in "${old[@]}"; do
    name=${d##*/}
    [[ $name != "$current" && -e $d && ! -L $d ]] || continue
    rm -rf -- "${d:?}" 2>/dev/null || true
  done
  return 0
}

# hpc_stage_archive_once BASE PATH...: (hpc_stage_build's subshell) archives the paths into
# hpc_stage_tmp/data.tar, the progress lines on stderr; sets hpc_stage_build's nfiles, data and
# total (Bash's dynamic scope) from the listing in hpc_stage_tmp/manifest; exits 1 when tar fails.
hpc_stage_archive_once() {
  local base=$1 p rc dir name
  local -a targs=() hargs=() names=()
  shift
  # The names in SLURM_TMPDIR: a path from outside BASE lands under its own name.
  for p; do [[ $p == /* ]] && names+=("${p##*/}") || names+=("$p"); done
  printf '%s\0' "${names[@]}" >"$hpc_stage_tmp/paths" || exit 1
  # The data's size (the files' bytes), and the archive's expected size, for the progress lines:
  # a 512-byte header per entry, file data in 512-byte blocks, the two zero blocks at the end,
  # all padded to tar's records of 2048 blocks (-b 2048: 1 MiB).
  read -r nfiles data total < <(awk -F '\t' '{s += 512} $1 == "f" {n++; d += $2; s += int(($2 + 511) / 512) * 512}
    END {r = 1048576; printf "%d %.0f %.0f\n", n, d, int((s + 1024 + r - 1) / r) * r}' "$hpc_stage_tmp/manifest")
  for p; do
    # Each from its folder (-C): BASE, or the folder above a path from outside it.
    dir=$base name=$p
    [[ $p != /* ]] || dir=${p%/*}/ name=${p##*/}
    # A top-level symlink is staged as what it points to (validated): a folder through
    # 'PATH/.', a file appended with -h. Deeper symlinks stay symlinks.
    if [[ -L $dir/$name && -d $dir/$name ]]; then
      targs+=(-C "$dir" "./$name/.")
    elif [[ -L $dir/$name ]]; then
      hargs+=(-C "$dir" "./$name")
    else
      targs+=(-C "$dir" "./$name")
    fi
  done
  # Without the build's lock (hpc_stage_build's lock_fd): a monitor, or its sleep, left running
  # for a moment would keep the next build of the same data waiting for it.
  if [[ -n ${lock_fd-} ]]; then
    hpc_stage_progress "$hpc_stage_tmp/data.tar" "$total" {lock_fd}>&- &
  else
    hpc_stage_progress "$hpc_stage_tmp/data.tar" "$total" &
  fi
  hpc_stage_monitor=$!
  rc=0
  if ((${#targs[@]})); then
    tar -b 2048 -cf "$hpc_stage_tmp/data.tar" "${targs[@]}" || rc=$?
    if ((rc == 0 && ${#hargs[@]})); then tar -b 2048 -rhf "$hpc_stage_tmp/data.tar" "${hargs[@]}" ||
      rc=$?; fi
  else
    tar -b 2048 -chf "$hpc_stage_tmp/data.tar" "${hargs[@]}" || rc=$?
  fi
  hpc_stage_monitor_stop "$hpc_stage_monitor"
  hpc_stage_monitor=''
  if ((rc == 1)); then
    hpc_say "the data changed while it was being archived (see tar's message above); submit again once it is stable"
    exit 1
  elif ((rc != 0)); then
    hpc_say "archiving the data into $base/.staging failed: tar exited with $rc (see above)"
    exit 1
  fi
}

# hpc_stage_build BASE KEY PATH...: builds BASE/.staging/KEY for the paths, unless a current one
# appears while waiting for the lock. Run it in a subshell (hpc_stage_prepare does): it sets
# traps and exits.
hpc_stage_build() {
  local base=$1 key=$2 staging=$1/.staging lock_fd='' locked=0 rc=0
  local total nfiles data size start ver link_tmp msg
  shift 2
  # Not local (this runs in a subshell): the EXIT trap reads them after this function's scope is gone.
  hpc_stage_tmp='' hpc_stage_monitor=''
  # shellcheck disable=SC2317,SC2329 # invoked by the traps
  hpc_stage_build_end() {
    [[ -z $hpc_stage_monitor ]] || { kill "$hpc_stage_monitor" 2>/dev/null || true; }
    [[ -z $hpc_stage_tmp ]] || rm -rf -- "${hpc_stage_tmp:?}"
  }
  hpc_trap_exit hpc_stage_build_end
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP

  # The lock: where flock works, one build at a time for these paths; elsewhere, correct anyway.
  if command -v flock >/dev/null 2>&1 && { exec {lock_fd}>>"$staging/$key.lock"; } 2>/dev/null; then
    flock -n -E 75 "$lock_fd" 2>/dev/null || rc=$?
    if ((rc == 75)); then
      hpc_say "waiting for another submission that is archiving the same data ($staging/$key.lock)"
      rc=0
      flock "$lock_fd" 2>/dev/null || rc=$?
    fi
    if ((rc == 0)); then locked=1; else hpc_say "note: no file locking in $staging; archiving without a lock"; fi
  fi
  if ((locked)) && hpc_stage_is_current "$base" "$key" "$@"; then
    hpc_say "another submission has just archived the same data: reusing it"
    exit 0
  fi

  start=$EPOCHREALTIME
  hpc_stage_tmp=$(mktemp -d "$staging/.tmp.$key.XXXXXXXX") || { hpc_say "cannot create a folder in $staging" &&
    exit 1; }
  # mktemp makes it 0700: give the build the permissions of any new folder (umask).
  chmod -- "$(umask -S)" "$hpc_stage_tmp" || exit 1
  # A listing that differs after tar (the data changed meanwhile) archives again, twice at most:
  # a file still being written fails the submission, a change that has ended does not.
  local attempt changed
  for attempt in 1 2 3; do
    if ! hpc_stage_snapshot "$base" "$@" >"$hpc_stage_tmp/manifest"; then
      hpc_say "cannot list the data under $base (see above)"
      exit 1
    fi
    hpc_stage_archive_once "$base" "$@"
    hpc_stage_snapshot "$base" "$@" >"$hpc_stage_tmp/manifest.after" 2>&1 || true
    cmp -s -- "$hpc_stage_tmp/manifest" "$hpc_stage_tmp/manifest.after" && break
    # The first entry that differs, by its path (the listing's fifth field), for the message.
    changed=$(diff -- "$hpc_stage_tmp/manifest" "$hpc_stage_tmp/manifest.after" | sed -n '/^[<>] /{s/^..//p;q}') || true
    IFS=$'\t' read -r _ _ _ _ changed _ <<<"$changed" || true
    if ((attempt == 3)); then
      msg="the data changed while it was being archived (${changed:-the listing}, three times);"
      msg+=" submit again once it is stable"
      hpc_say "$msg"
      exit 1
    fi
    hpc_say "the data changed while it was being archived (${changed:-the listing}): archiving it again"
  done
  rm -f -- "$hpc_stage_tmp/manifest.after"
  size=$(stat -c %s -- "$hpc_stage_tmp/data.tar") && printf '%s\n' "$size" >"$hpc_stage_tmp/size" || exit 1

  # Publish: the complete folder gets its version name, then the KEY symlink is swapped to it.
  ver=$key.v$(printf '%(%Y%m%dT%H%M%S)T' -1).${hpc_stage_tmp##*.}
  mv -T -- "$hpc_stage_tmp" "$staging/$ver" || { hpc_say "cannot rename the archive folder into $staging/$ver" &&
    exit 1; }
  hpc_stage_tmp=''
  link_tmp=$staging/.tmp.link.$key.$BASHPID
  if ! ln -s -- "$ver" "$link_tmp" || ! mv -T -- "$link_tmp" "$staging/$key"; then
    rm -f -- "$link_tmp"
    rm -rf -- "${staging:?}/${ver:?}"
    hpc_say "cannot publish $staging/$ver as $staging/$key"
    exit 1
  fi
  hpc_stage_prune "$staging" "$key" "$locked" "$ver"
  # The data's size and the archive's apart: a small data set makes a 1 MiB archive (tar's padding).
  printf -v msg '%s' "archived $nfiles files, $(hpc_human_size "$data") of data (archive $(hpc_human_size "$size"))" \
    " in $(hpc_stage_rate "$size" "$start"): $staging/$key/data.tar"
  hpc_say "$msg"
  exit 0
}

# hpc_stage_prepare BASE PATH...: validates the paths (return 2 when one is bad, nothing made),
# then reuses BASE/.staging/KEY/data.tar while nothing under the paths changed, else builds it
# (return 1 when that fails). Sets hpc_stage_paths, hpc_stage_archive (absolute, through the
# KEY symlink: the job reads the newest version), hpc_stage_bytes and hpc_stage_manifest.
hpc_stage_prepare() {
  local base=$1 staging key rc=0
  shift
  # shellcheck disable=SC2034 # results for the caller
  hpc_stage_archive='' hpc_stage_bytes='' hpc_stage_manifest=''
  hpc_stage_validate "$base" "$@" || return $?
  [[ $base == /* ]] || base=$PWD/$base
  base=${base%/}
  staging=$base/.staging
  # The user's alone (hpc_private_dir): a job unpacks the archive its link names when it starts.
  if ! hpc_private_dir "$staging"; then
    hpc_say "cannot use the archive cache: $hpc_private_dir_problem"
    return 1
  fi
  key=$(hpc_stage_key "${hpc_stage_paths[@]}") || return 1
  if hpc_stage_is_current "$base" "$key" "${hpc_stage_paths[@]}"; then
    hpc_say "data unchanged: reusing $staging/$key/data.tar"
  else
    (hpc_stage_build "$base" "$key" "${hpc_stage_paths[@]}") || rc=$?
    # Stopped by a signal (Ctrl-C: 130): said as such by the caller, not as a failure.
    ((rc < 128)) || return "$rc"
    ((rc == 0)) || return 1
  fi
  hpc_stage_archive=$staging/$key/data.tar
  # shellcheck disable=SC2034 # results for the caller
  hpc_stage_manifest=$staging/$key/manifest
  # shellcheck disable=SC2034 # a result for the caller
  hpc_stage_bytes=$(stat -L -c %s -- "$hpc_stage_archive") || return 1
  return 0
}

# hpc_stage_cached BASE PATH...: for --dry-run: validates (return 2) and returns 0 when a current
# archive of the paths exists (sets hpc_stage_archive), 1 when one would be built. Creates nothing.
hpc_stage_cached() {
  local base=$1 key
  shift
  hpc_stage_archive=''
  hpc_stage_validate "$base" "$@" || return $?
  [[ $base == /* ]] || base=$PWD/$base
  base=${base%/}
  key=$(hpc_stage_key "${hpc_stage_paths[@]}") || return 1
  hpc_stage_is_current "$base" "$key" "${hpc_stage_paths[@]}" || return 1
  hpc_stage_archive=$base/.staging/$key/data.tar
  return 0
}
