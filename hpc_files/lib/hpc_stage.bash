# shellcheck shell=bash
# hpc_stage.bash: data staging (--data). At submission, the named paths under
# ${SCRATCH}/${project_name} (BASE) are validated and packed into one archive, cached under
# BASE/.staging/; in the job, every node unpacks it once into its SLURM_TMPDIR, where the same
# relative paths appear. Functions are prefixed hpc_stage_; none exits the caller's shell.
#
# Format: an uncompressed tar (GNU tar, 1 MiB records: -b 2048). Measured with
# `bench/staging --formats` (3 rounds, medians, one run) on the repository's 2-core test machine
# (ext4 on a shared virtual disk, warm page cache), on (a) 50,000 files of 3-5 KiB in 100 folders
# and (b) 4 files of 256 MiB, both random bytes (as JPEGs, audio or compressed shards are):
#                          (a) 50,000 small files              (b) 4 x 256 MiB
#   format              size      build    extract            size     build    extract
#   tar                 230.5 MiB 0.69 s   3.47 s (1.00x)     1.0 GiB  1.54 s   1.73 s (1.00x)
#   tar | zstd -1 -T0   195.2 MiB 1.41 s   2.66 s (0.77x)     1.0 GiB  1.57 s   2.91 s (1.68x)
#   tar | lz4 -1        196.2 MiB 1.35 s   3.14 s (0.91x)     1.0 GiB  2.51 s   3.68 s (2.12x)
# On (a) extraction is file creation, whatever the format: across runs the compressed formats
# came out between 0.8x and 1.2x of tar (the disk's noise); on (b) decompression makes extraction
# 1.7-2.1x slower and saves nothing. Data sets are mostly stored compressed already, so
# compression would save only tar's header padding (15% on (a)) while costing a second process
# and CPU on every node at every job start, CPUs that belong to the program. An uncompressed tar
# also needs nothing but GNU tar on the nodes, can be appended to (used for top-level symlinks to
# files), and its size alone tells whether it is truncated. 1 MiB records make the reads from the
# shared file system large and sequential (and made (b)'s extraction 0.5-0.9x of a default tar -xf).
#
# Layout of BASE/.staging/ (KEY: 16 hex digits of the sha256 of the sorted, NUL-separated list
# of normalised paths; one archive per distinct set of paths):
#   KEY -> KEY.vSTAMP.RANDOM     symlink to the current version, swapped atomically (rename)
#   KEY.vSTAMP.RANDOM/           one complete build, never modified once published:
#       data.tar                 the archive (members ./PATH/...)
#       manifest                 the paths' state when it was built: one line per entry,
#                                type, size, mtime, ctime, path, link target (find -printf),
#                                sorted; compared with cmp to today's to decide "unchanged"
#       paths                    the staged paths, NUL-separated
#       size                     data.tar's size in bytes: a shorter file is truncated
#   KEY.lock                     flock(1) lock file: concurrent submissions build at most once
#   .tmp.KEY.XXXXXXXX/           a build in progress (unique per process; renamed when done)
# Archive and manifest sit in one folder that appears (rename) only when complete, so a reader
# never pairs a manifest with an archive it does not describe. Superseded versions are removed
# by the next build of the same paths (under the lock; without working locks, a builder removes
# only its own version once superseded, and anything superseded for a day). A job that opened an
# old version keeps reading it (POSIX unlink semantics).

# shellcheck source=hpc_files/lib/hpc_common.bash
source "${BASH_SOURCE[0]%/*}/hpc_common.bash"

# Seconds between progress lines of a build (they start after the first interval).
hpc_stage_progress_s=${hpc_stage_progress_s:-5}
# Extraction needs the data's size (rounded up to 4 KiB blocks) plus 2% plus this many bytes free.
hpc_stage_margin_bytes=${hpc_stage_margin_bytes:-16777216}

# hpc_stage_human BYTES: prints BYTES for people: 512 B, 12.0 KiB, 1.2 GiB.
hpc_stage_human() {
  local b=$1 div=1 unit=B
  if ((b >= 1 << 40)); then
    div=$((1 << 40)) unit=TiB
  elif ((b >= 1 << 30)); then
    div=$((1 << 30)) unit=GiB
  elif ((b >= 1 << 20)); then
    div=$((1 << 20)) unit=MiB
  elif ((b >= 1 << 10)); then
    div=$((1 << 10)) unit=KiB
  fi
  if ((div == 1)); then
    printf '%d B' "$b"
  else
    printf '%d.%d %s' "$((b / div))" "$(((b % div) * 10 / div))" "$unit"
  fi
}

# hpc_stage_rate BYTES START_EPOCHREALTIME: prints 'S.S s (R MB/s)' from START to now.
hpc_stage_rate() {
  local bytes=$1 us
  us=$((${EPOCHREALTIME/[.,]/} - ${2/[.,]/}))
  ((us > 0)) || us=1
  printf '%d.%d s (%d MB/s)' "$((us / 1000000))" "$(((us % 1000000) / 100000))" "$((bytes / us))"
}

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

# hpc_stage_validate BASE PATH...: checks each PATH (relative to BASE; exists; inside BASE after
# resolving '..' and symlinks; not BASE itself or its .staging cache). Sets hpc_stage_paths to the
# normalised paths ('..', '.' and '//' removed as written, not through symlinks, so that
# SLURM_TMPDIR gets the names the user gave), sorted, without duplicates or paths inside another
# one. A bad path: one line '-d/--data: 'PATH': problem', return 2; creates nothing.
hpc_stage_validate() {
  local base=$1 base_real='' p norm real q nested
  local -a norms=() sorted=()
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
    if [[ -z $p ]]; then
      problem="is empty"
    elif [[ $p == /* ]]; then
      problem="is an absolute path; give it relative to $base"
    elif ! hpc_stage_realpath norm -m -s --relative-to="$base" -- "$base/$p"; then
      problem="cannot be resolved"
    elif [[ $norm == . ]]; then
      problem="is $base itself; name the folders or files inside it"
    elif [[ $norm == .. || $norm == ../* ]]; then
      problem="is outside $base"
    elif [[ $norm == .staging || $norm == .staging/* ]]; then
      problem="is the toolkit's archive cache"
    elif [[ -z $base_real ]]; then
      problem="does not exist: there is no $base"
    elif [[ ! -e $base/$norm ]]; then
      if [[ -L $base/$norm ]]; then problem="is a symlink to something that does not exist"; else problem="does not exist in $base"; fi
    elif ! hpc_stage_realpath real -e -- "$base/$norm"; then
      problem="cannot be resolved"
    elif [[ $real != "$base_real"/* ]]; then
      problem="resolves to $real, outside $base"
    elif [[ $real == "$base_real/.staging" || $real == "$base_real/.staging/"* ]]; then
      problem="resolves into the toolkit's archive cache"
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
      if [[ $p == "$q"/* ]]; then
        nested=1
        break
      fi
    done
    ((nested)) || hpc_stage_paths+=("$p")
  done
  return 0
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
  for p; do args+=("./$p"); done
  (cd -- "$base" && LC_ALL=C find -H "${args[@]}" -printf '%y\t%s\t%T@\t%C@\t%p\t%l\n') | LC_ALL=C sort
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
  local file=$1 total=$2 start=$EPOCHREALTIME size pct sleeper=''
  # shellcheck disable=SC2317,SC2329 # invoked by the trap
  hpc_stage_progress_end() {
    [[ -z $sleeper ]] || kill "$sleeper" 2>/dev/null || true
    exit 0
  }
  trap hpc_stage_progress_end TERM
  while :; do
    sleep "$hpc_stage_progress_s" &
    sleeper=$!
    wait "$sleeper" || true
    sleeper=''
    size=$(stat -c %s -- "$file" 2>/dev/null) || continue
    pct=$((total > 0 ? size * 100 / total : 0))
    ((pct < 100)) || pct=99
    hpc_say "archiving: $(hpc_stage_human "$size") of about $(hpc_stage_human "$total") ($pct%) in $(hpc_stage_rate "$size" "$start")"
  done
}

# hpc_stage_prune STAGING KEY LOCKED [MINE]: removes superseded versions of KEY: all of them when
# LOCKED is 1, else only MINE (once superseded) and those superseded for over a day; and build
# folders abandoned for over a day. Never the current one, never through a symlink.
hpc_stage_prune() {
  local staging=$1 key=$2 locked=$3 mine=${4:-} current d name
  local -a old=()
  current=$(readlink -- "$staging/$key" 2>/dev/null) || return 0
  mapfile -d '' -t old < <(find "$staging" -mindepth 1 -maxdepth 1 \( -name '.tmp.*' -o -name "$key.v*" \) -mmin +1440 -print0 2>/dev/null)
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

# hpc_stage_build BASE KEY PATH...: builds BASE/.staging/KEY for the paths, unless a current one
# appears while waiting for the lock. Run it in a subshell (hpc_stage_prepare does): it sets
# traps and exits.
hpc_stage_build() {
  local base=$1 key=$2 staging=$1/.staging lock_fd='' locked=0 rc=0 p
  local total nfiles size start ver link_tmp
  local -a targs=() hargs=()
  shift 2
  # Not local (this runs in a subshell): the EXIT trap reads them after this function's scope is gone.
  hpc_stage_tmp='' hpc_stage_monitor=''
  # shellcheck disable=SC2317,SC2329 # invoked by the traps
  hpc_stage_build_end() {
    [[ -z $hpc_stage_monitor ]] || { kill "$hpc_stage_monitor" 2>/dev/null || true; }
    [[ -z $hpc_stage_tmp ]] || rm -rf -- "${hpc_stage_tmp:?}"
  }
  trap hpc_stage_build_end EXIT
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
  hpc_stage_tmp=$(mktemp -d "$staging/.tmp.$key.XXXXXXXX") || { hpc_say "cannot create a folder in $staging" && exit 1; }
  # mktemp makes it 0700: give the build the permissions of any new folder (umask).
  chmod -- "$(umask -S)" "$hpc_stage_tmp" || exit 1
  if ! hpc_stage_snapshot "$base" "$@" >"$hpc_stage_tmp/manifest"; then
    hpc_say "cannot list the data under $base (see above)"
    exit 1
  fi
  printf '%s\0' "$@" >"$hpc_stage_tmp/paths" || exit 1
  # The archive's expected size, for the progress lines: a 512-byte header per entry, file data
  # in 512-byte blocks.
  read -r nfiles total < <(awk -F '\t' '{s += 512} $1 == "f" {n++; s += int(($2 + 511) / 512) * 512} END {printf "%d %.0f\n", n, s}' "$hpc_stage_tmp/manifest")
  for p; do
    # A top-level symlink is staged as what it points to (inside BASE, validated): a folder
    # through 'PATH/.', a file appended with -h. Deeper symlinks stay symlinks.
    if [[ -L $base/$p && -d $base/$p ]]; then
      targs+=("./$p/.")
    elif [[ -L $base/$p ]]; then
      hargs+=("./$p")
    else
      targs+=("./$p")
    fi
  done
  hpc_stage_progress "$hpc_stage_tmp/data.tar" "$total" &
  hpc_stage_monitor=$!
  rc=0
  if ((${#targs[@]})); then
    tar -C "$base" -b 2048 -cf "$hpc_stage_tmp/data.tar" "${targs[@]}" || rc=$?
    if ((rc == 0 && ${#hargs[@]})); then tar -C "$base" -b 2048 -rhf "$hpc_stage_tmp/data.tar" "${hargs[@]}" || rc=$?; fi
  else
    tar -C "$base" -b 2048 -chf "$hpc_stage_tmp/data.tar" "${hargs[@]}" || rc=$?
  fi
  kill "$hpc_stage_monitor" 2>/dev/null || true
  wait "$hpc_stage_monitor" 2>/dev/null || true
  hpc_stage_monitor=''
  if ((rc == 1)); then
    hpc_say "the data changed while it was being archived (see tar's message above); submit again once it is stable"
    exit 1
  elif ((rc != 0)); then
    hpc_say "archiving the data into $staging failed: tar exited with $rc (see above)"
    exit 1
  fi
  if ! hpc_stage_snapshot "$base" "$@" 2>/dev/null | cmp -s - "$hpc_stage_tmp/manifest"; then
    hpc_say "the data changed while it was being archived; submit again once it is stable"
    exit 1
  fi
  size=$(stat -c %s -- "$hpc_stage_tmp/data.tar") && printf '%s\n' "$size" >"$hpc_stage_tmp/size" || exit 1

  # Publish: the complete folder gets its version name, then the KEY symlink is swapped to it.
  ver=$key.v$(printf '%(%Y%m%dT%H%M%S)T' -1).${hpc_stage_tmp##*.}
  mv -T -- "$hpc_stage_tmp" "$staging/$ver" || { hpc_say "cannot rename the archive folder into $staging/$ver" && exit 1; }
  hpc_stage_tmp=''
  link_tmp=$staging/.tmp.link.$key.$BASHPID
  if ! ln -s -- "$ver" "$link_tmp" || ! mv -T -- "$link_tmp" "$staging/$key"; then
    rm -f -- "$link_tmp"
    rm -rf -- "${staging:?}/${ver:?}"
    hpc_say "cannot publish $staging/$ver as $staging/$key"
    exit 1
  fi
  hpc_stage_prune "$staging" "$key" "$locked" "$ver"
  hpc_say "archived $nfiles files, $(hpc_stage_human "$size") in $(hpc_stage_rate "$size" "$start"): $staging/$key/data.tar"
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
  if [[ ! -d $staging ]] && ! mkdir -p -- "$staging"; then
    hpc_say "cannot create the archive cache $staging"
    return 1
  fi
  key=$(hpc_stage_key "${hpc_stage_paths[@]}") || return 1
  if hpc_stage_is_current "$base" "$key" "${hpc_stage_paths[@]}"; then
    hpc_say "data unchanged: reusing $staging/$key/data.tar"
  else
    (hpc_stage_build "$base" "$key" "${hpc_stage_paths[@]}") || rc=$?
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

# hpc_stage_log MESSAGE...: one line to the job's output: '[stage NODE] MESSAGE'.
hpc_stage_log() {
  printf '[stage %s] %s\n' "${SLURMD_NODENAME:-${HOSTNAME%%.*}}" "$*" >&2
}

# hpc_stage_is_owned REL: true when REL is, or is inside, a path that an earlier staging put
# into this TMPDIR (hpc_stage_owned, read from its record .hpc_staged.paths).
hpc_stage_is_owned() {
  local r
  for r in "${hpc_stage_owned[@]}"; do
    [[ $1 == "$r" || $1 == "$r"/* ]] && return 0
  done
  return 1
}

# hpc_stage_place DEST PATH check|move: where the unpacked PATH (in hpc_stage_tmp) goes in DEST:
# the shallowest level of it that DEST lacks; an existing PATH is replaced only when an earlier
# staging put it there. 'check' only says whether that is possible (one FAILED line, return 1);
# 'move' does it. Never through a symlink in DEST.
hpc_stage_place() {
  local dest=$1 p=$2 how=$3 q='' rest=$2
  while :; do
    q=${q:+$q/}${rest%%/*}
    [[ $rest == */* ]] && rest=${rest#*/} || rest=''
    if [[ ! -e $dest/$q && ! -L $dest/$q ]]; then
      [[ $how == check ]] && return 0
      mv -T -- "$hpc_stage_tmp/$q" "$dest/$q" && return 0
      hpc_stage_log "FAILED: cannot move $q into $dest"
      return 1
    fi
    if [[ -z $rest ]]; then
      if ! hpc_stage_is_owned "$q"; then
        hpc_stage_log "FAILED: $dest/$q is in the way: it was not staged by the toolkit, and nothing was removed"
        return 1
      fi
      [[ $how == check ]] && return 0
      if [[ -L $dest/$q ]]; then rm -f -- "$dest/$q"; else rm -rf --one-file-system -- "${dest:?}/${q:?}"; fi
      mv -T -- "$hpc_stage_tmp/$q" "$dest/$q" && return 0
      hpc_stage_log "FAILED: cannot move $q into $dest"
      return 1
    fi
    if [[ -L $dest/$q || ! -d $dest/$q ]]; then
      hpc_stage_log "FAILED: $dest/$q is in the way (a symlink or a file where the data has a folder); nothing was removed"
      return 1
    fi
  done
}

# hpc_stage_extract ARCHIVE TMPDIR: unpacks ARCHIVE into the folder TMPDIR (this node's
# SLURM_TMPDIR), unless TMPDIR/.hpc_staged says this very archive (path, size, mtime) is there
# already. Checks free space first; unpacks into TMPDIR/.hpc_stage.tmp.XXXXXX and moves the staged
# paths into place only when complete, replacing only what an earlier staging put there (recorded
# in TMPDIR/.hpc_staged.paths); writes the marker last; logs time and throughput. Returns 1
# with a clear message (and nothing new left in TMPDIR) on failure. One caller per TMPDIR at a
# time (a lock on TMPDIR makes a second one wait).
hpc_stage_extract() {
  (hpc_stage_extract_run "$@")
}

# hpc_stage_extract_run ARCHIVE TMPDIR: hpc_stage_extract's work, in its own subshell (traps, fds).
hpc_stage_extract_run() {
  local archive=$1 dest=${2%/} real='' afd='' lfd='' size mtime id expected='' verdir need margin avail
  local start err reason p
  local -a paths=() hpc_stage_owned=()
  # Not local (this runs in a subshell): the EXIT trap reads it after this function's scope is gone.
  hpc_stage_tmp=''
  # shellcheck disable=SC2317,SC2329 # invoked by the trap
  hpc_stage_extract_end() {
    [[ -z $hpc_stage_tmp ]] || rm -rf -- "${hpc_stage_tmp:?}"
  }
  trap hpc_stage_extract_end EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
  dest=${dest:-/}
  if [[ ! -d $dest ]]; then
    hpc_stage_log "FAILED: $dest is not a folder"
    return 1
  fi
  # Open the archive once: a newer build may replace the KEY symlink meanwhile; this one stays
  # readable while open.
  for _ in 1 2 3; do
    real=$(readlink -e -- "$archive" 2>/dev/null) || real=''
    [[ -n $real ]] && { exec {afd}<"$real"; } 2>/dev/null && break
    afd=''
  done
  if [[ -z $afd ]]; then
    hpc_stage_log "FAILED: cannot read the archive $archive"
    return 1
  fi
  read -r size mtime < <(stat -L -c '%s %Y' "/dev/fd/$afd") || true
  if [[ ! $size =~ ^[0-9]+$ ]]; then
    hpc_stage_log "FAILED: cannot read the size of the archive $archive"
    return 1
  fi
  id="$real $size $mtime"
  verdir=${real%/*}
  # One extractor per folder: array tasks and requeued jobs on this node wait, then skip.
  { exec {lfd}<"$dest"; } 2>/dev/null && flock "$lfd" 2>/dev/null || true
  if [[ -f $dest/.hpc_staged && ! -L $dest/.hpc_staged && $(<"$dest/.hpc_staged") == "$id" ]]; then
    hpc_stage_log "already staged into $dest: $archive; nothing to do"
    return 0
  fi
  [[ ! -f $verdir/size ]] || expected=$(<"$verdir/size")
  if [[ -n $expected && $expected != "$size" ]]; then
    hpc_stage_log "FAILED: the archive $archive is truncated or damaged ($size bytes; it was built with $expected); nothing was extracted. Submit again to rebuild it."
    return 1
  fi
  rm -f -- "$dest/.hpc_staged"
  for p in "$dest"/.hpc_stage.tmp.*; do
    [[ -d $p && ! -L $p ]] && rm -rf -- "${p:?}"
  done

  # Free space: the files rounded up to 4 KiB blocks and the folders (from the manifest built
  # with the archive), else the archive's size; plus 2% and hpc_stage_margin_bytes.
  need=$size
  if [[ -f $verdir/manifest ]]; then
    need=$(awk -F '\t' '$1 == "f" {n += int(($2 + 4095) / 4096) * 4096} $1 == "d" {n += 4096} END {printf "%.0f\n", n}' "$verdir/manifest") || need=$size
  fi
  margin=$((need / 50 + hpc_stage_margin_bytes))
  avail=$(df -B1 --output=avail -- "$dest" 2>/dev/null) || avail=''
  avail=${avail##*[!0-9]}
  if [[ -n $avail ]] && ((need + margin > avail)); then
    hpc_stage_log "FAILED: not enough space in $dest: the data needs $(hpc_stage_human "$need") (plus a margin of $(hpc_stage_human "$margin")), $(hpc_stage_human "$avail") is free; nothing was extracted"
    return 1
  fi

  start=$EPOCHREALTIME
  hpc_stage_tmp=$(mktemp -d "$dest/.hpc_stage.tmp.XXXXXX") || {
    hpc_stage_log "FAILED: cannot create a folder in $dest"
    return 1
  }
  if ! err=$(tar -b 2048 -xf - -C "$hpc_stage_tmp" --no-same-owner --warning=no-timestamp <&"$afd" 2>&1); then
    case $err in
      *'No space left on device'*) reason="the disk of $dest is full" ;;
      *'Unexpected EOF'* | *'does not look like a tar archive'* | *'Skipping to next header'* | *'Damaged'* | *'checksum'*)
        reason="the archive is truncated or corrupt; submit again to rebuild it"
        ;;
      *) reason="tar failed" ;;
    esac
    [[ -z $err ]] || printf '%s\n' "$err" | head -n 5 >&2
    rm -rf -- "${hpc_stage_tmp:?}"
    hpc_stage_tmp=''
    hpc_stage_log "FAILED: extracting $archive into $dest: $reason; nothing was left in $dest"
    return 1
  fi

  # Move the staged paths into place: each as a whole, at the shallowest level that is not
  # there yet (a fresh TMPDIR: the top-level entries). Something already at a staged path is
  # replaced only when an earlier staging put it there (its record .hpc_staged.paths); anything
  # else stops the staging before a single path is moved or removed.
  if [[ -f $verdir/paths ]]; then
    mapfile -d '' -t paths <"$verdir/paths"
  else
    mapfile -d '' -t paths < <(find "$hpc_stage_tmp" -mindepth 1 -maxdepth 1 -printf '%f\0')
  fi
  if [[ -f $dest/.hpc_staged.paths && ! -L $dest/.hpc_staged.paths && -O $dest/.hpc_staged.paths ]]; then
    mapfile -d '' -t hpc_stage_owned <"$dest/.hpc_staged.paths"
  fi
  for p in "${paths[@]}"; do
    hpc_stage_place "$dest" "$p" check || return 1
  done
  if ! printf '%s\0' "${hpc_stage_owned[@]}" "${paths[@]}" | LC_ALL=C sort -zu >"$dest/.hpc_staged.paths.tmp" ||
    ! mv -T -- "$dest/.hpc_staged.paths.tmp" "$dest/.hpc_staged.paths"; then
    hpc_stage_log "FAILED: cannot write $dest/.hpc_staged.paths; nothing was moved into $dest"
    return 1
  fi
  for p in "${paths[@]}"; do
    [[ -e $hpc_stage_tmp/$p || -L $hpc_stage_tmp/$p ]] || continue # moved with a folder above it
    hpc_stage_place "$dest" "$p" move || return 1
  done
  if ! printf '%s\n' "$id" >"$dest/.hpc_staged.tmp" || ! mv -T -- "$dest/.hpc_staged.tmp" "$dest/.hpc_staged"; then
    hpc_stage_log "FAILED: cannot write $dest/.hpc_staged"
    return 1
  fi
  hpc_stage_log "$(hpc_stage_human "$size") in $(hpc_stage_rate "$size" "$start") into $dest"
  return 0
}
