# shellcheck shell=bash
# hpc_common.bash: messages, usage and small checks shared by every toolkit command.
# Functions here are prefixed hpc_ and never exit the caller's shell unless their name says so.

# shellcheck source=hpc_files/lib/hpc_facts.bash
source "${BASH_SOURCE[0]%/*}/hpc_facts.bash"

# hpc_program: the name of the running command, used as the prefix of every message.
hpc_program=${hpc_program:-${0##*/}}

# hpc_say MESSAGE...: prints one line to stderr, prefixed with the program's name.
hpc_say() {
  printf '%s: %s\n' "$hpc_program" "$*" >&2
}

# hpc_die MESSAGE...: prints the message and exits 1 (a runtime failure).
hpc_die() {
  hpc_say "$@"
  exit 1
}

# hpc_die_usage OPTION MESSAGE: bad input; one line naming the option and what it accepts, exit 2.
# A value that did not come from the command line is named with its origin
# (hpc_usage_origin[OPTION], set by hpc_options.bash: '-t/--time from hpc_files/defaults line 3').
declare -gA hpc_usage_origin
hpc_die_usage() {
  local message="$1: $2"
  [[ -z ${hpc_usage_origin[$1]-} ]] || message="$1 from ${hpc_usage_origin[$1]}: $2"
  # A value holding a newline is quoted in the message: shown as \n, so it stays one line.
  hpc_say "${message//$'\n'/\\n}"
  exit 2
}

# Files the toolkit reads again are trusted only as the user's own (why: at the end of this file).

# hpc_own_check PATH: true when PATH is a regular file of this user, not a link (a file that
# only needs to be the user's own to be believed: a job's log, the states status keeps). Else
# false, with hpc_trusted_problem saying why. No process.
hpc_own_check() {
  [[ -n $1 && -f $1 && ! -L $1 && -O $1 ]] && return 0
  # shellcheck disable=SC2034 # read by the callers
  hpc_trusted_problem="is not a regular file of ${USER:-this user} (or is a link)"
  return 1
}

# hpc_trusted_check PATH: true when PATH may be trusted: a regular file of this user, not a link,
# that nobody else can write. Else false, with hpc_trusted_problem saying why.
hpc_trusted_check() {
  local path=$1 mode
  hpc_own_check "$path" || return 1
  # One that others can write (group-writable on a shared scratch) may hold their code by now.
  # shellcheck disable=SC2034 # read by the callers
  hpc_trusted_problem="has a mode that cannot be read"
  mode=$(stat -c %a -- "$path") || return 1
  # shellcheck disable=SC2034 # read by the callers
  hpc_trusted_problem="can be changed by others (mode $mode)"
  (((8#$mode & 8#022) == 0))
}

# hpc_trusted_open PATH [own]: opens the trusted file PATH for reading on the descriptor
# hpc_trusted_fd once it is a regular file of this user (hpc_own_check), then checks that the
# name passes hpc_trusted_check (with own: hpc_own_check) and is the file opened: in a folder
# that others can write, the name may point elsewhere by the time it is opened (a link to their
# code). Read it from that descriptor, then close it. False, with hpc_trusted_problem saying why,
# else. A FIFO or a link fails the first check before anything is opened: nothing waits on one;
# the mode (a process: stat) is asked once, of the name that is the file opened.
hpc_trusted_open() {
  local fd check=hpc_trusted_check
  [[ ${2-} != own ]] || check=hpc_own_check
  # shellcheck disable=SC2034 # read by the callers
  hpc_trusted_fd=''
  hpc_own_check "$1" || return 1
  # shellcheck disable=SC2034 # read by the callers
  hpc_trusted_problem="cannot be opened"
  { exec {fd}<"$1"; } 2>/dev/null || return 1
  if "$check" "$1"; then
    if [[ $1 -ef /dev/fd/$fd ]]; then
      # shellcheck disable=SC2034 # read by the callers
      hpc_trusted_fd=$fd
      return 0
    fi
    # shellcheck disable=SC2034 # read by the callers
    hpc_trusted_problem="was replaced while it was opened"
  fi
  exec {fd}<&-
  return 1
}

# hpc_trusted_read PATH [own [MAX]]: sets hpc_trusted_text to the text of the trusted file PATH
# (with own: the user's own, hpc_own_check; MAX: its first MAX characters at most), read from the
# descriptor hpc_trusted_open checked, never by name again (a resubmission copies a plan file's
# text into a new one that the job trusts, and gives sbatch a kept script's text). False, with
# hpc_trusted_problem saying why, when it may not be read.
hpc_trusted_read() {
  local fd
  local -a bound=()
  [[ -z ${3-} ]] || bound=(-n "$3")
  # shellcheck disable=SC2034 # read by the callers
  hpc_trusted_text=''
  hpc_trusted_open "$1" "${2-}" || return 1
  fd=$hpc_trusted_fd
  # shellcheck disable=SC2034 # read by the callers
  IFS= read -r -d '' "${bound[@]}" hpc_trusted_text <&"$fd" || true
  exec {fd}<&-
}

# hpc_private_write PATH TEXT: writes TEXT to PATH as a new file readable and writable by the
# user alone (0600 whatever the umask, set before the file exists: a chmod after would leave a
# window; the umask to restore is kept in hpc_umask). Never into an existing file or through a
# link (noclobber, and a check first: noclobber alone would open a FIFO): whatever has the name
# already (a manifest of a job id that a reset cluster hands out again, a planted link) is
# replaced by a rename, never written into. False when it cannot be written.
hpc_private_write() {
  local path=$1
  if [[ -e $path || -L $path ]]; then
    path=$1.new.$$
    rm -f -- "${path:?}" 2>/dev/null
  fi
  hpc_private_create "$path" "$2" || return 1
  [[ $path != "$1" ]] || return 0
  mv -fT -- "$path" "$1" 2>/dev/null && return 0
  rm -f -- "${path:?}"
  return 1
}

# hpc_private_create PATH TEXT: writes TEXT into a new file PATH made 0600 (noclobber); false
# when PATH exists or cannot be written. A write that fails once the file is made (a full disk)
# removes it: never a truncated record at its name, nor a temporary file left behind.
hpc_private_create() {
  local - mask=${hpc_umask:-} line written=0 fd=''
  set -C
  [[ ! -e $1 && ! -L $1 ]] || return 1
  if [[ -z $mask ]]; then
    # The umask to restore, from the shell's own status, without a process (every submission).
    while IFS= read -r line; do
      [[ $line != Umask:* ]] || {
        mask=${line##*[[:space:]]}
        break
      }
    done 2>/dev/null </proc/self/status
    hpc_umask=$mask
  fi
  # Without /proc: the umask asked once (a process).
  [[ $mask == +([0-7]) ]] || mask=$(umask) hpc_umask=$mask
  umask 077
  { exec {fd}>"$1"; } 2>/dev/null || fd=''
  umask "$mask"
  [[ -n $fd ]] || return 1
  ! { printf '%s' "$2" >&"$fd"; } 2>/dev/null || written=1
  # Removed only while the name is still the file this made.
  ((written)) || [[ ! $1 -ef /dev/fd/$fd ]] || rm -f -- "${1:?}"
  exec {fd}>&-
  ((written))
}

# Folders the toolkit makes for a user's job logs and records are private (how and why: at the end
# of this file).

# hpc_private_dir PATH: makes PATH a private folder of the user, or checks the one there (see
# the end of this file); the folders above it are made when missing, as the umask makes them. False, with
# hpc_private_dir_problem (one line, no prefix) saying why, when it may not be used.
hpc_private_dir() {
  local path=${1%/} where name mode owner
  [[ ! -d $path || -L $path || ! -O $path || ! -u $path ]] || return 0
  where=${path%/*} name=${path##*/}/
  [[ -d $where ]] || mkdir -p -- "$where" 2>/dev/null || true
  hpc_private_dir_above "$where" "$name" || return 1
  if [[ ! -e $path && ! -L $path ]]; then
    ! mkdir -m 4700 -- "$path" 2>/dev/null || return 0
  fi
  hpc_private_dir_problem="$name in $where is a link or not a folder: your job logs and records are kept only"
  hpc_private_dir_problem+=" in a folder of your own; remove it (or use another SCRATCH)"
  [[ -d $path && ! -L $path ]] || return 1
  if [[ ! -O $path ]]; then
    owner=$(stat -c %U -- "$path" 2>/dev/null) || owner='someone else'
    hpc_private_dir_problem="$name in $where belongs to $owner, not you: your job logs and records are kept only"
    hpc_private_dir_problem+=" in a folder of your own; use another SCRATCH or another project folder name,"
    hpc_private_dir_problem+=" or ask $owner to remove it"
    return 1
  fi
  # The user's own, without the mark: if open to others, closed first, then whatever they put in
  # it while it was open is looked for (they can add nothing more).
  mode=$(stat -c %a -- "$path" 2>/dev/null) || mode='?'
  if [[ $mode == +([0-7]) ]] && (((8#$mode & 8#022) == 0)); then return 0; fi
  hpc_private_dir_problem="$name in $where can be changed by others (mode $mode) and cannot be made yours alone"
  chmod go-rwx -- "$path" 2>/dev/null || return 1
  owner=$(find "$path" -mindepth 1 -maxdepth 1 ! -user "$EUID" -printf '%f of %u\n' -quit 2>/dev/null) || owner=''
  if [[ -n $owner ]]; then
    hpc_private_dir_problem="$name in $where holds ${owner%$'\n'} (it was open to others): remove what is not"
    hpc_private_dir_problem+=" yours, then submit again"
    return 1
  fi
  chmod u+s -- "$path" 2>/dev/null || true
}

# hpc_private_dirs_or_die [--submit] PATH...: hpc_private_dir for each PATH in order (each one's
# folder above exists or is the one before), or exit 1 with its one line (with --submit: saying
# that nothing was submitted).
hpc_private_dirs_or_die() {
  local tail='' path
  [[ $1 != --submit ]] || {
    tail='; nothing was submitted'
    shift
  }
  for path in "$@"; do
    hpc_private_dir "$path" || hpc_die "$hpc_private_dir_problem$tail"
  done
}

# hpc_scratch_check: exit 2 (one line) unless SCRATCH can be the user's scratch folder: set, an
# absolute path, not the root folder (by name, or through a link: the outputs would be made in
# /), and a folder where it exists (a link to one is a folder, as clusters' $SCRATCH often is).
hpc_scratch_check() {
  [[ -n ${SCRATCH:-} ]] ||
    hpc_die_usage "SCRATCH" \
      "is not set; set it to your scratch folder, e.g. export SCRATCH=/scratch/\$USER in ~/.bashrc"
  [[ $SCRATCH == /* ]] || hpc_die_usage "SCRATCH" "'$SCRATCH' is not an absolute path"
  [[ $SCRATCH == *[!./]* ]] ||
    hpc_die_usage "SCRATCH" "'$SCRATCH' is the root folder; accepted: your own scratch folder, e.g. /scratch/\$USER"
  [[ ! $SCRATCH -ef / ]] ||
    hpc_die_usage "SCRATCH" \
      "'$SCRATCH' is the root folder (through a link); accepted: your own scratch folder, e.g. /scratch/\$USER"
  [[ ! -e $SCRATCH || -d $SCRATCH ]] ||
    hpc_die_usage "SCRATCH" "'$SCRATCH' is not a folder; accepted: your own scratch folder, e.g. /scratch/\$USER"
}

# hpc_split_option WORD: for a command-line parser: sets the caller's locals opt (WORD's option)
# and have_value, and for --name=value also value: --name=value means the same as --name value.
hpc_split_option() {
  # shellcheck disable=SC2034 # the caller's locals (Bash's dynamic scope)
  opt=$1 have_value=0
  if [[ $opt == --*=* ]]; then
    # shellcheck disable=SC2034
    value=${opt#*=}
    opt=${opt%%=*}
    # shellcheck disable=SC2034
    have_value=1
  fi
}

# ---------------------------------------------------------------------------------------------
# Secrets. A secret is the value of an environment variable with a secret's name
# (hpc_secret_name), or the W&B key of ~/wandb_credentials.txt. Every line the toolkit prints
# that could hold one is masked by value: each line of such a value that is at least
# hpc_secret_min_length characters long becomes '(masked)' wherever it occurs, longest first.
# The functions that hold secret values turn bash -x off while they run (local -; set +x: the
# caller's options come back on return), and take names of variables rather than values, so that
# no trace shows one.

# hpc_secret_min_length: shorter values are not masked by value: a variable named like a secret
# but set to 1, true or none would otherwise hide every such word of the output.
hpc_secret_min_length=6

# hpc_secret_names_environ: 1 when the secrets' names may be read from /proc/self/environ, which
# holds only what the process was started with: set by job_submitter.sh when it runs as a script
# of its own without BASH_ENV. A shell that sources the toolkit, or a BASH_ENV file, may have
# exported a secret after the start; then every variable of the shell is looked at.
hpc_secret_names_environ=0

# hpc_secrets_keep: 1 when the secrets found by the first mask are kept for the process's later
# ones: set by job_submitter.sh, whose environment no longer changes once it runs. A job exports
# the W&B key it loads (hpc_sweep_load_key), and tests export between calls: they keep 0.
hpc_secrets_keep=0

# hpc_environ_load: sets hpc_environ to the NAME=VALUE entries of the environment this process
# was started with (/proc/self/environ), read once per process (the secrets' names, and the
# user's lowercase variables that the toolkit's locals may hide, hpc_manifest_exported and
# hpc_slurm_sbatch_exec, come from it); false without /proc.
hpc_environ_load() {
  ((${hpc_environ_read:-0})) && return 0
  [[ -r /proc/self/environ ]] && mapfile -d '' -t hpc_environ </proc/self/environ || return 1
  hpc_environ_read=1
}

# hpc_secret_name NAME: true when NAME (in any case) names a secret: it holds KEY, TOKEN, SECRET,
# PASS (PASSWORD, PASSWD, PASSPHRASE), CREDENTIAL or AUTH, or ends in _PWD (MYSQL_PWD; not PWD).
# Broad on purpose: masking a value that was no secret costs little, printing one costs much.
# NAME may be several names, each on a line of its own: true when one of them names a secret.
hpc_secret_name() {
  case ${1^^} in
    *KEY* | *TOKEN* | *SECRET* | *PASS* | *CREDENTIAL* | *AUTH* | *_PWD | *_PWD$'\n'*) return 0 ;;
  esac
  return 1
}

# hpc_secret_values: sets the caller's array hpc_secrets (declare it local, and call with bash -x
# off) to the values to mask, longest first: every line of at least hpc_secret_min_length
# characters of the environment's variables with a secret's name, and the first word of
# ~/wandb_credentials.txt.
hpc_secret_values() {
  local name value line i j swap
  local -a names=() parts=()
  # In the submitter the environment is final before its first mask (nothing it runs exports a
  # secret): worked out once, kept for the next call (a map or a study masks words once a job).
  if ((hpc_secrets_keep && ${hpc_secrets_kept_set:-0})); then
    hpc_secrets=(${hpc_secrets_kept[@]+"${hpc_secrets_kept[@]}"})
    return 0
  fi
  hpc_secrets=()
  # The environment's names, read in one go from /proc/self/environ (what this process was
  # started with), where naming every variable of the shell took milliseconds at every
  # submission. Variables exported after the start are not in it: the toolkit exports one secret
  # itself, WANDB_API_KEY (hpc_sweep_load_key), named here. Without /proc, or where a secret may
  # have been exported after the start (hpc_secret_names_environ): every variable's name,
  # without starting a process; then only the exported ones, which are the environment.
  if ((hpc_secret_names_environ)) && hpc_environ_load; then
    # Most environments hold no secret's name but WANDB_API_KEY's: then the loop below (a command
    # per name, at every submission) looks at that one only. The test is hpc_secret_name's, on
    # all the names at once, one a line; the list of names is made only when it fails.
    printf -v line '\n%s\n' "${hpc_environ[@]%%=*}"
    names=(WANDB_API_KEY)
    if hpc_secret_name "${line//$'\n'WANDB_API_KEY$'\n'/}"; then
      names=("${hpc_environ[@]%%=*}")
      [[ $line == *$'\n'WANDB_API_KEY$'\n'* ]] || names+=(WANDB_API_KEY)
    fi
  else
    names=("${!A@}" "${!B@}" "${!C@}" "${!D@}" "${!E@}" "${!F@}" "${!G@}" "${!H@}" "${!I@}" "${!J@}"
      "${!K@}" "${!L@}" "${!M@}" "${!N@}" "${!O@}" "${!P@}" "${!Q@}" "${!R@}" "${!S@}" "${!T@}"
      "${!U@}" "${!V@}" "${!W@}" "${!X@}" "${!Y@}" "${!Z@}" "${!a@}" "${!b@}" "${!c@}" "${!d@}"
      "${!e@}" "${!f@}" "${!g@}" "${!h@}" "${!i@}" "${!j@}" "${!k@}" "${!l@}" "${!m@}" "${!n@}"
      "${!o@}" "${!p@}" "${!q@}" "${!r@}" "${!s@}" "${!t@}" "${!u@}" "${!v@}" "${!w@}" "${!x@}"
      "${!y@}" "${!z@}" "${!_@}")
  fi
  for name in "${names[@]}"; do
    # hpc_secret_name, inline: this loop sees every variable of the shell, at every submission.
    case ${name^^} in
      *KEY* | *TOKEN* | *SECRET* | *PASS* | *CREDENTIAL* | *AUTH* | *_PWD) ;;
      *) continue ;;
    esac
    [[ -v $name && ${!name@a} == *x* ]] || continue
    value=${!name-}
    [[ -n $value ]] || continue
    if [[ $value == *$'\n'* ]]; then
      mapfile -t parts <<<"$value"
    else
      parts=("$value")
    fi
    for line in "${parts[@]}"; do
      ((${#line} < hpc_secret_min_length)) || hpc_secrets+=("$line")
    done
  done
  if [[ -n ${HOME:-} && -f $HOME/wandb_credentials.txt && -r $HOME/wandb_credentials.txt ]]; then
    line=''
    IFS=$' \t\r\n' read -r line _ <"$HOME/wandb_credentials.txt" || true
    ((${#line} < hpc_secret_min_length)) || hpc_secrets+=("$line")
  fi
  # Longest first, so that a secret holding another is masked whole (a few values: a plain sort).
  for ((i = 1; i < ${#hpc_secrets[@]}; i++)); do
    for ((j = i; j > 0 && ${#hpc_secrets[j - 1]} < ${#hpc_secrets[j]}; j--)); do
      swap=${hpc_secrets[j]}
      hpc_secrets[j]=${hpc_secrets[j - 1]}
      hpc_secrets[j - 1]=$swap
    done
  done
  ((hpc_secrets_keep == 0)) || hpc_secrets_kept=(${hpc_secrets[@]+"${hpc_secrets[@]}"}) hpc_secrets_kept_set=1
}

# hpc_mask_vars NAME...: replaces every secret (hpc_secret_values) in the variables NAME (strings,
# or arrays element by element) by '(masked)'.
hpc_mask_vars() {
  local - _hpc_mask_name _hpc_mask_secret _hpc_mask_i
  set +x
  local -a hpc_secrets=()
  hpc_secret_values
  ((${#hpc_secrets[@]})) || return 0
  for _hpc_mask_name in "$@"; do
    local -n _hpc_mask_ref=$_hpc_mask_name
    for _hpc_mask_i in "${!_hpc_mask_ref[@]}"; do
      for _hpc_mask_secret in "${hpc_secrets[@]}"; do
        [[ ${_hpc_mask_ref[_hpc_mask_i]} != *"$_hpc_mask_secret"* ]] ||
          _hpc_mask_ref[_hpc_mask_i]=${_hpc_mask_ref[_hpc_mask_i]//"$_hpc_mask_secret"/(masked)}
      done
    done
    unset -n _hpc_mask_ref
  done
}

# hpc_mask_stream: copies standard input to standard output line by line, each secret masked
# (flushed at every line, so that it can follow a growing log). The secrets reach awk on a file
# descriptor, never on its command line.
hpc_mask_stream() {
  local - _hpc_mask_list
  set +x
  local -a hpc_secrets=()
  hpc_secret_values
  if ((${#hpc_secrets[@]} == 0)); then
    cat
    return
  fi
  printf -v _hpc_mask_list '%s\n' "${hpc_secrets[@]}"
  # mawk reads a pipe until 4 KiB or its end: -W interactive hands on each line as it comes
  # (its writes unbuffered: ORS empty, so that each line is one write).
  local -a awk_options=(-v ORS=)
  case $(awk -W version 2>&1 </dev/null) in mawk*) awk_options+=(-W interactive) ;; esac
  LC_ALL=C awk "${awk_options[@]}" '
    BEGIN { while ((getline s < "/dev/fd/3") > 0) if (s != "") secret[++n] = s }
    {
      line = $0
      for (i = 1; i <= n; i++) {
        out = ""
        while ((p = index(line, secret[i])) > 0) {
          out = out substr(line, 1, p - 1) "(masked)"
          line = substr(line, p + length(secret[i]))
        }
        line = out line
      }
      print line "\n"
      fflush()
    }' 3<<<"${_hpc_mask_list%$'\n'}"
}

# ---------------------------------------------------------------------------------------------
# Launchers and runners: one file each, hpc_files/lib/launchers/NAME.bash (the functions
# hpc_launcher_NAME_{describe,plan,processes,srun,task,workers}) and
# hpc_files/lib/runners/NAME.bash (hpc_runner_NAME_{enter,wrap}); the interfaces:
# docs/architecture.md. The launchers present are the files there: -W accepts them and --help
# lists them.

# hpc_lib_dir: this folder, absolute (tasks change folder); hpc_launchers_dir, hpc_runners_dir.
hpc_lib_dir=${BASH_SOURCE[0]%/*}
[[ $hpc_lib_dir == /* ]] || hpc_lib_dir=$PWD/$hpc_lib_dir
hpc_launchers_dir=$hpc_lib_dir/launchers
hpc_runners_dir=$hpc_lib_dir/runners
hpc_modes_dir=$hpc_lib_dir/modes

# hpc_lib_load NAME: sources lib/NAME.bash, code that a plain submission does not run (the
# reading of manifests, the undoing of a submission...): parsed only by a process that calls it,
# as parsing is about half of a submission's work (bench/submit_instructions). Where such code
# was, one-line stubs stand for its functions, 'f() { hpc_lib_load NAME && f "$@"; }': the
# file's definitions replace them at the first call (tests/unit/lazy_stubs.bats).
hpc_lib_load() {
  # A stub that called itself again: its file did not replace it (status 1, never a loop).
  if [[ ${FUNCNAME[1]-} == "${FUNCNAME[2]-}" ]]; then
    hpc_say "lib/$1.bash does not define ${FUNCNAME[1]-}"
    return 1
  fi
  # shellcheck source=/dev/null # lib/NAME.bash, linted on its own
  source "$hpc_lib_dir/$1.bash"
}

# What a plain submission does not run of this library (hpc_common_more.bash, loaded at the first
# call of one of them).
hpc_user_name() { hpc_lib_load hpc_common_more && hpc_user_name "$@"; }
hpc_trap_exit() { hpc_lib_load hpc_common_more && hpc_trap_exit "$@"; }
hpc_private_dir_above() { hpc_lib_load hpc_common_more && hpc_private_dir_above "$@"; }
hpc_human_size() { hpc_lib_load hpc_common_more && hpc_human_size "$@"; }
hpc_usage() { hpc_lib_load hpc_common_more && hpc_usage "$@"; }
hpc_mask_quoted() { hpc_lib_load hpc_common_more && hpc_mask_quoted "$@"; }
hpc_trace_through_mask() { hpc_lib_load hpc_common_more && hpc_trace_through_mask "$@"; }
hpc_visible_stream() { hpc_lib_load hpc_common_more && hpc_visible_stream "$@"; }
hpc_module_list() { hpc_lib_load hpc_common_more && hpc_module_list "$@"; }

# hpc_launcher_list: sets hpc_launcher_names to the launchers present, in the glob's order.
hpc_launcher_list() {
  hpc_module_list "$hpc_launchers_dir" hpc_launcher_names
}

# hpc_launcher_load NAME: loads the launcher NAME (its hpc_launcher_NAME_* functions) once;
# status 1, with hpc_module_problem saying why, when there is no such launcher or its file lacks
# one of them.
hpc_launcher_load() {
  hpc_module_load "$hpc_launchers_dir" "hpc_launcher_$1_task" "$1" \
    "hpc_launcher_$1_" describe plan processes srun task workers
}

# hpc_runner_load NAME: loads the runner NAME (its hpc_runner_NAME_* functions) once; status 1,
# with hpc_module_problem saying why, when there is no such runner or its file lacks one of them.
hpc_runner_load() {
  hpc_module_load "$hpc_runners_dir" "hpc_runner_$1_wrap" "$1" \
    "hpc_runner_$1_" check plan prepare preview folders python node_work node_setup here enter wrap
}

# hpc_mode HOOK [ARGS...]: runs the mode's HOOK (docs/architecture.md, "Modes"): hpc_mode_NAME_HOOK
# of hpc_files/lib/modes/NAME.bash (NAME: hpc_mode_name on the login side, else the plan's mode;
# '-' as '_'), the file sourced the first time; a mode without that hook gets the core's
# hpc_mode_any_HOOK, if there is one. A mode that is not a file of modes/: exit 1, naming it.
hpc_mode() {
  # A name no configs file uses: the hooks' callees see it (a dry run lists the command's ${VARS}).
  local _hpc_mode=${hpc_mode_name:-${hpc_plan_mode:-single}}
  _hpc_mode=${_hpc_mode//-/_}
  # Loaded already (the mode named last): no call.
  [[ $_hpc_mode == "${hpc_mode_loaded-}" ]] ||
    hpc_module_load "$hpc_modes_dir" "hpc_mode_${_hpc_mode}_describe" "$_hpc_mode" ||
    hpc_die "mode '${hpc_mode_name:-${hpc_plan_mode:-single}}': $hpc_module_problem"
  hpc_mode_loaded=$_hpc_mode
  if declare -F "hpc_mode_${_hpc_mode}_$1" >/dev/null; then
    "hpc_mode_${_hpc_mode}_$1" "${@:2}"
  elif declare -F "hpc_mode_any_$1" >/dev/null; then
    "hpc_mode_any_$1" "${@:2}"
  fi
}

# hpc_mode_any_tasks: false: a job's folders are the experiment's unless its mode's tasks hook
# says that each task has its own (task_N).
hpc_mode_any_tasks() { return 1; }

# hpc_module_load DIR FUNCTION NAME [PREFIX SUFFIX...]: sources DIR/NAME.bash unless FUNCTION is
# defined already; with PREFIX, every PREFIXSUFFIX must then be defined (a launcher's or a
# runner's interface). Status 1, with hpc_module_problem saying why, when NAME is not a file of
# DIR or lacks one of them.
hpc_module_load() {
  local dir=$1 name=$3 prefix=${4-} suffix
  local -a missing=()
  declare -F "$2" >/dev/null && return 0
  if [[ $name != ["$hpc_facts_lower"]* || $name == *[!"$hpc_facts_lower$hpc_facts_digits"_]* ||
    ! -f $dir/$name.bash ]]; then
    # shellcheck disable=SC2034 # read by the callers
    hpc_module_problem="no '$name' in $dir"
    return 1
  fi
  # shellcheck source=/dev/null
  source "$dir/$name.bash"
  shift 4 2>/dev/null || shift "$#"
  # All of them at once (the usual case: one command); the loop only names what is missing.
  (($# == 0)) || ! declare -F "${@/#/$prefix}" >/dev/null || return 0
  for suffix; do
    declare -F "$prefix$suffix" >/dev/null || missing+=("$prefix$suffix")
  done
  ((${#missing[@]} == 0)) && return 0
  # shellcheck disable=SC2034 # read by the callers
  hpc_module_problem="'$name' ($dir/$name.bash) lacks ${missing[*]}; it must define ${prefix}{$(
    IFS=,
    printf '%s' "$*"
  )} (docs/architecture.md)"
  return 1
}

[[ ${BASH_SOURCE[0]} == "$0" ]] || return 0
# The long comments of this file, after its last command, where Bash never reads them (it parses
# every comment it reads, and every submission reads this file).

# Trusted files (see hpc_own_check).
# Files the toolkit reads again to run or source what they hold (plan files, kept job scripts,
# a map's task.sh and gather.sh, a study's job.sh and report.sh, manifests and the map's and
# study's records, which name the scripts and their options) are trusted only as the user's own:
# on a group-writable scratch (umask 002 on a lab's shared folder), another member who could
# change one would run code as the user at the next resubmit. They are written 0600
# (hpc_private_write, hpc_plan_write_file) and read only through these checks.

# Private folders (see hpc_private_dir).
# Folders the toolkit makes for a user's job logs and records (hpc_outputs/ and its manifests/,
# submissions/, usage/, map/ and scaling/ with their experiments' folders) are private: on a
# lab's group-writable scratch (umask 002) another member could otherwise plant names in them,
# such as a link named like the next job's --output (ids are sequential), through which SLURM
# would write the log into any file of the user. Made 4700 whatever the umask: the set-user-ID
# bit, which means nothing on a folder to Linux, marks one that this toolkit made or checked, so
# that the next submissions trust it without a process (Bash tests a folder's owner and special
# bits, not its mode). A folder of the user's without the mark is checked (a process): one that
# nobody else can write (0755) is used as it is; one open to others (an older version's 2775 under
# umask 002) is closed (chmod go-rwx: its older files may be group-writable) and marked, unless
# others put something in it while it was open to them (then refused, naming it, and left
# unmarked: looked at again next time). One that is a link or someone else's is refused (one
# line: its owner and the fix), never used.
