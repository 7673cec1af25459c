# shellcheck shell=bash
# hpc_common_more.bash: helpers of hpc_common.bash that a plain submission does not run (a new
# private folder's parents, sizes, the masking of a stream or a quoted text, the trace under
# bash -x, usage blocks, module lists), loaded at the first call of one of them (their stubs in
# hpc_common.bash, hpc_lib_load).

# hpc_user_name VAR: sets VAR to this user's name: USER, else the name a prompt's \u shows
# (the password database's, without starting id -un).
hpc_user_name() {
  local u='\u'
  printf -v "$1" '%s' "${USER:-${u@P}}"
}

# hpc_trap_exit FUNCTION: runs FUNCTION when this shell exits, and in no other process. A child
# forked in the background runs its parent's traps until it has reset them: stopped at once (a
# progress monitor after a fast tar), it ran the parent's 'exit 143' and then its cleanup, which
# removed the folder the parent was still building.
hpc_trap_exit() {
  trap '[[ $BASHPID != '"$BASHPID"' ]] || '"$1" EXIT
}

# hpc_private_dir_above WHERE NAME: (hpc_private_dir, before it makes or checks WHERE/NAME) WHERE
# may hold a private folder: nobody else can rename what is in it. Else another member moves the
# private folder away and puts their own in its place (SLURM opens a pending job's --output when
# the job starts, and a job reads its staged archive then: both through WHERE). The user's own
# (the project's folder in SCRATCH, which the toolkit makes as the umask makes it) is closed to
# writing by others (chmod go-w; read stays as it was); someone else's is refused when others can
# write it and it has no sticky bit. False, with hpc_private_dir_problem, when it may not be used.
hpc_private_dir_above() {
  local where=$1 mode owner
  [[ ! -O $where ]] || ! chmod go-w -- "$where" 2>/dev/null || return 0
  # Not there (then nothing can be made in it: said by the caller), or closed, or sticky.
  mode=$(stat -L -c %a -- "$where" 2>/dev/null) || return 0
  if (((8#$mode & 8#022) == 0 || (8#$mode & 8#1000) != 0)); then return 0; fi
  if [[ -O $where ]]; then
    hpc_private_dir_problem="$where, which holds $2, cannot be closed to others (chmod go-w failed):"
    hpc_private_dir_problem+=" they could put a folder of their own in its place; run chmod go-w on it"
    return 1
  fi
  owner=$(stat -L -c %U -- "$where" 2>/dev/null) || owner='someone else'
  hpc_private_dir_problem="$where, which holds $2, belongs to $owner and others can change it:"
  hpc_private_dir_problem+=" they could put a folder of their own in its place; use a folder of your own"
  hpc_private_dir_problem+=" (another SCRATCH or project folder name), or ask $owner to run chmod go-w on it"
  return 1
}

# hpc_human_size BYTES: prints BYTES for people: 512 B, 12.0 KiB, 1.2 GiB (tenths cut, not rounded).
hpc_human_size() {
  local b=$1 div=1 unit=B u
  for u in KiB MiB GiB TiB PiB; do
    ((b >= div << 10)) || break
    div=$((div << 10)) unit=$u
  done
  if ((div == 1)); then
    printf '%d B' "$b"
  else
    printf '%d.%d %s' "$((b / div))" "$(((b % div) * 10 / div))" "$unit"
  fi
}

# hpc_usage FILE: prints the usage comment block at the top of FILE (the lines after the shebang
# that start with '#', up to the first line that does not), without the leading '# '. Lines
# starting with '#+' are notes, not printed; a block with one goes on after the next '#+' line
# further down (job_submitter.sh's, after its last command: Bash never parses it on a run).
hpc_usage() {
  local line more=0
  {
    IFS= read -r line # shebang
    while IFS= read -r line; do
      case $line in
        '#') printf '\n' ;;
        '#+'*) more=1 ;;
        '# '*) printf '%s\n' "${line#\# }" ;;
        *)
          ((more)) || break
          more=0
          while IFS= read -r line && [[ $line != '#+'* ]]; do :; done
          ;;
      esac
    done
  } <"$1"
}

# hpc_mask_quoted ARRAY_NAME: prints the elements of the array ARRAY_NAME shell-quoted (printf %q)
# and separated by spaces, each secret in them masked: for the job's 'starting' line.
hpc_mask_quoted() {
  local - _hpc_mask_line
  set +x
  local -a _hpc_mask_words=()
  local -n _hpc_mask_array=$1
  _hpc_mask_words=(${_hpc_mask_array[@]+"${_hpc_mask_array[@]}"})
  hpc_mask_vars _hpc_mask_words
  printf -v _hpc_mask_line '%q ' ${_hpc_mask_words[@]+"${_hpc_mask_words[@]}"}
  # The mark stays readable in the quoted line.
  printf '%s\n' "${_hpc_mask_line//'\(masked\)'/(masked)}"
}

# hpc_trace_through_mask SCRIPT ARGS...: for a script that ran under bash -x and turned xtrace
# off to call this (so that ARGS are not traced): with a secret in the environment, runs SCRIPT
# ARGS again in a child `bash -x` whose standard error, the trace with it, goes through
# hpc_mask_stream, and exits with the child's status. The trace then masks a secret by its value
# wherever the value came from (a configs file, an option), not only where the toolkit knows it
# handles one. Returns without a secret, and in that child (HPC_TRACE_MASKED, unset there so that
# no job inherits it).
hpc_trace_through_mask() {
  if [[ -n ${HPC_TRACE_MASKED:-} ]]; then
    unset HPC_TRACE_MASKED
    return 0
  fi
  local child_status
  local -a hpc_secrets=()
  hpc_secret_values
  ((${#hpc_secrets[@]})) || return 0
  {
    HPC_TRACE_MASKED=1 "$BASH" -x "$@" 2>&1 >&3 3>&- | hpc_mask_stream >&2 && child_status=0 ||
      child_status=${PIPESTATUS[0]}
  } 3>&1
  exit "$child_status"
}

# hpc_visible_stream: copies stdin to stdout line by line with what a terminal would act on made
# visible, for printing a program's output ('logs'): colours (ESC [ ... m) left out, a carriage
# return a line break (a progress bar's updates, one per line), every other control character
# (escape sequences that retitle or clear a terminal, the bell, C1 controls) in caret notation (^[,
# ^G) or as ? (a C1 control: UTF-8 C2 80..9F); tabs and the text itself as they are.
hpc_visible_stream() {
  local -a awk_options=(-v ORS=)
  case $(awk -W version 2>&1 </dev/null) in mawk*) awk_options+=(-W interactive) ;; esac
  LC_ALL=C awk "${awk_options[@]}" '
    BEGIN { for (i = 1; i < 32; i++) if (i != 9 && i != 10) ctl[sprintf("%c", i)] = "^" sprintf("%c", i + 64) }
    {
      line = $0
      if (line ~ /[\001-\010\013-\037\177\302]/) {
        gsub(/\033\[[0-9;]*m/, "", line)
        sub(/\r+$/, "", line)
        gsub(/\r+/, "\n", line)
        gsub(/\302[\200-\237]/, "?", line)
        gsub(/\177/, "^?", line)
        out = ""
        while (match(line, /[\001-\010\013-\037]/)) {
          out = out substr(line, 1, RSTART - 1) ctl[substr(line, RSTART, 1)]
          line = substr(line, RSTART + 1)
        }
        line = out line
      }
      print line "\n"
      fflush()
    }'
}

# hpc_module_list DIR ARRAY: sets the array ARRAY (not named file, name or _hpc_*) to the modules
# in DIR (launchers, runners): its NAME.bash files, in the glob's order, whose NAME can be part of
# a function's name.
hpc_module_list() {
  local file name
  local -a _hpc_module_names=()
  local -n _hpc_module_list_out=$2
  for file in "$1"/*.bash; do
    name=${file##*/} name=${name%.bash}
    [[ -f $file && $name =~ ^[a-z][a-z0-9_]*$ ]] && _hpc_module_names+=("$name")
  done
  _hpc_module_list_out=(${_hpc_module_names[@]+"${_hpc_module_names[@]}"})
}
