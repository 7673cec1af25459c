# shellcheck shell=bash
# hpc_stage_node.bash: data staging (--data), the node side. In the job, every node unpacks the
# archive the submission built (hpc_stage_submit.bash) once into its SLURM_TMPDIR, where the same
# relative paths appear (hpc_stage_extract, called by hpc_job.bash). Also the rate format that
# both sides print (sizes: hpc_human_size). Functions are prefixed hpc_stage_; none exits the
# caller's shell.
# The archive's format, the measurements behind it and the layout of the cache: docs/staging.md.

# Read once: the job's guard loads this file inside a function, after hpc_common.bash.
# shellcheck source=hpc_files/lib/hpc_common.bash
declare -F hpc_module_load >/dev/null || source "${BASH_SOURCE[0]%/*}/hpc_common.bash"

# Extraction needs the data's size (rounded up to 4 KiB blocks) plus 2% plus this many bytes free.
hpc_stage_margin_bytes=${hpc_stage_margin_bytes:-16777216}

# hpc_stage_rate BYTES START_EPOCHREALTIME: prints 'S.S s (R MB/s)' from START to now.
hpc_stage_rate() {
  local bytes=$1 us
  us=$((${EPOCHREALTIME/[.,]/} - ${2/[.,]/}))
  ((us > 0)) || us=1
  printf '%d.%d s (%d MB/s)' "$((us / 1000000))" "$(((us % 1000000) / 100000))" "$((bytes / us))"
}

# hpc_stage_log MESSAGE...: one line to the job's output: '[hpc NODE] staging: MESSAGE' (hpc_log).
hpc_stage_log() {
  hpc_log "staging: $*"
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
  local dest=$1 how=$3 q='' rest=$2
  while :; do
    q=${q:+$q/}${rest%%/*}
    [[ $rest == */* ]] && rest=${rest#*/} || rest=''
    [[ -e $dest/$q || -L $dest/$q ]] || break
    if [[ -z $rest ]]; then
      if ! hpc_stage_is_owned "$q"; then
        hpc_stage_log "FAILED: $dest/$q is in the way: it was not staged by the toolkit, and nothing was removed"
        return 1
      fi
      [[ $how == check ]] && return 0
      if [[ -L $dest/$q ]]; then rm -f -- "$dest/$q"; else rm -rf --one-file-system -- "${dest:?}/${q:?}"; fi
      break
    fi
    if [[ -L $dest/$q || ! -d $dest/$q ]]; then
      hpc_stage_log \
        "FAILED: $dest/$q is in the way (a symlink or a file where the data has a folder); nothing was removed"
      return 1
    fi
  done
  [[ $how == check ]] && return 0
  mv -T -- "$hpc_stage_tmp/$q" "$dest/$q" && return 0
  hpc_stage_log "FAILED: cannot move $q into $dest"
  return 1
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
  local archive=$1 dest=${2%/} real='' afd='' lfd='' size mtime id expected='' verdir start p msg
  # Not local (this runs in a subshell): the EXIT trap reads it after this function's scope is gone.
  hpc_stage_tmp=''
  # shellcheck disable=SC2317,SC2329 # invoked by the trap
  hpc_stage_extract_end() {
    [[ -z $hpc_stage_tmp ]] || rm -rf -- "${hpc_stage_tmp:?}"
  }
  hpc_trap_exit hpc_stage_extract_end
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
  dest=${dest:-/}
  if [[ ! -d $dest ]]; then
    hpc_stage_log "FAILED: $dest is not a folder"
    return 1
  fi
  hpc_stage_open "$archive" || return 1
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
    msg="FAILED: the archive $archive is truncated or damaged ($size bytes; it was built with $expected);"
    msg+=" nothing was extracted. Submit again to rebuild it."
    hpc_stage_log "$msg"
    return 1
  fi
  rm -f -- "$dest/.hpc_staged"
  for p in "$dest"/.hpc_stage.tmp.*; do
    [[ -d $p && ! -L $p ]] && rm -rf -- "${p:?}"
  done

  hpc_stage_space_check "$dest" "$size" "$verdir" || return 1
  start=$EPOCHREALTIME
  hpc_stage_untar "$archive" "$dest" || return 1
  hpc_stage_place_all "$dest" "$verdir" || return 1
  if ! printf '%s\n' "$id" >"$dest/.hpc_staged.tmp" || ! mv -T -- "$dest/.hpc_staged.tmp" "$dest/.hpc_staged"; then
    hpc_stage_log "FAILED: cannot write $dest/.hpc_staged"
    return 1
  fi
  hpc_stage_log "$(hpc_human_size "$size") in $(hpc_stage_rate "$size" "$start") into $dest"
  return 0
}

# hpc_stage_open ARCHIVE: (in hpc_stage_extract_run) opens ARCHIVE once, setting the caller's
# real (its file), afd (the descriptor), size and mtime; false, logged, when it cannot.
hpc_stage_open() {
  # A newer build may replace the KEY symlink meanwhile; this one stays readable while open.
  for _ in 1 2 3; do
    real=$(readlink -e -- "$1" 2>/dev/null) || real=''
    [[ -n $real ]] && { exec {afd}<"$real"; } 2>/dev/null && break
    afd=''
  done
  if [[ -z $afd ]]; then
    hpc_stage_log "FAILED: cannot read the archive $1"
    return 1
  fi
  read -r size mtime < <(stat -L -c '%s %Y' "/dev/fd/$afd") || true
  if [[ ! $size =~ ^[0-9]+$ ]]; then
    hpc_stage_log "FAILED: cannot read the size of the archive $1"
    return 1
  fi
}

# hpc_stage_space_check DEST SIZE VERDIR: (in hpc_stage_extract_run) false, logged, when DEST lacks
# the space for the archive of SIZE bytes built in VERDIR.
hpc_stage_space_check() {
  local need margin avail msg
  # Free space: the files rounded up to 4 KiB blocks and the folders (from the manifest built
  # with the archive), else the archive's size; plus 2% and hpc_stage_margin_bytes.
  need=$2
  if [[ -f $3/manifest ]]; then
    need=$(awk -F '\t' '$1 == "f" {n += int(($2 + 4095) / 4096) * 4096}
      $1 == "d" {n += 4096} END {printf "%.0f\n", n}' "$3/manifest") || need=$2
  fi
  margin=$((need / 50 + hpc_stage_margin_bytes))
  avail=$(df -B1 --output=avail -- "$1" 2>/dev/null) || avail=''
  avail=${avail##*[!0-9]}
  if [[ -n $avail ]] && ((need + margin > avail)); then
    printf -v msg '%s' "FAILED: not enough space in $1: the data needs $(hpc_human_size "$need")" \
      " (plus a margin of $(hpc_human_size "$margin")), $(hpc_human_size "$avail") is free; nothing was extracted"
    hpc_stage_log "$msg"
    return 1
  fi
}

# hpc_stage_untar ARCHIVE DEST: (in hpc_stage_extract_run) unpacks the open archive (the caller's
# afd) into a new folder hpc_stage_tmp in DEST; false, logged and nothing left, when it fails.
hpc_stage_untar() {
  local archive=$1 dest=$2 err reason
  hpc_stage_tmp=$(mktemp -d "$dest/.hpc_stage.tmp.XXXXXX") || {
    hpc_stage_log "FAILED: cannot create a folder in $dest"
    return 1
  }
  if ! err=$(tar -b 2048 -xf - -C "$hpc_stage_tmp" --no-same-owner --warning=no-timestamp <&"$afd" 2>&1); then
    case $err in
      *'No space left on device'*) reason="the disk of $dest is full" ;;
      *'Unexpected EOF'* | *'does not look like a tar archive'* | *'Skipping to next header'* | *'Damaged'* | \
        *'checksum'*)
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
}

# hpc_stage_place_all DEST VERDIR: (in hpc_stage_extract_run) moves the staged paths into place:
# each as a whole, at the shallowest level that is not there yet (a fresh TMPDIR: the top-level
# entries). Something already at a staged path is replaced only when an earlier staging put it
# there (its record .hpc_staged.paths); anything else stops the staging before a single path is
# moved or removed. False, logged, on failure.
hpc_stage_place_all() {
  local dest=$1 verdir=$2 p
  local -a paths=() hpc_stage_owned=()
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
}
