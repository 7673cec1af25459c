# shellcheck shell=bash
# hpc_profile.bash: cluster profiles (hpc_files/clusters/*.yaml) as shell variables.
# YAML is read by the Python helpers (python -m hpc_helpers profile FILE) only when a profile is
# new or changed: the result is cached as a shell file that records the YAML and the helpers'
# version it was made from, so an ordinary submission runs no Python at all.

# What this library reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_python_helpers_dir: hpc_submit_locate; hpc_profile_name: the compiled profile; hpc_facts.bash:
# the digits.
declare -g hpc_python_helpers_dir hpc_profile_name hpc_facts_digits

# The Python of the helpers, and the cache made private again (hpc_profile_python.bash, loaded at the
# first call: a submission whose profile is compiled already runs none of them).
hpc_python_for_helpers() { hpc_lib_load hpc_profile_python && hpc_python_for_helpers "$@"; }
hpc_helpers_cli() { hpc_lib_load hpc_profile_python && hpc_helpers_cli "$@"; }
hpc_profile_cache_private() { hpc_lib_load hpc_profile_python && hpc_profile_cache_private "$@"; }

# hpc_profile_read_file FILE: sets hpc_profile_text to FILE's content (no subshell, no fork).
hpc_profile_read_file() {
  hpc_profile_text=''
  IFS= read -r -d '' hpc_profile_text <"$1" || true
}

# hpc_profile_read_helpers_version: sets hpc_profile_helpers_version to the Python helpers' version
# (__version__ in hpc_helpers/__init__.py, read without a process; bumped with the profile schema,
# see tests/python/test_profile.py), empty when it cannot be read.
hpc_profile_read_helpers_version() {
  # The first line that is exactly __version__ = "...", found in the file read in one go.
  local text='' re=$'(^|\n)__version__ = "([^"\n]+)"(\n|$)' file=$hpc_python_helpers_dir/src/hpc_helpers/__init__.py
  hpc_profile_helpers_version=
  [[ -r $file ]] || return 0
  IFS= read -r -d '' text <"$file" || true
  [[ ! $text =~ $re ]] || hpc_profile_helpers_version=${BASH_REMATCH[2]}
}

# The folder of the compiled profiles in HPC_CACHE_DIR (default: hpc_files/.cache). They are
# shell files that every submission sources, so the folder is the user's alone: made 0700 by the
# toolkit (hpc_profile_source), under a name that earlier versions, which made their 'profiles'
# folder with the umask's mode (2775 on a lab's shared folder), never used.
hpc_profile_cache_sub=private-profiles

# hpc_profile_cache_folder DIR: exit 2, with one line naming DIR, its owner and the fix, when DIR
# exists and is not a folder of this user, or is a link: what another user can put there would
# run as this user. Builtin tests only: a submission starts no process for it.
hpc_profile_cache_folder() {
  local owner msg
  [[ -e $1 || -L $1 ]] || return 0
  [[ ! -d $1 || -L $1 || ! -O $1 ]] || return 0
  owner=$(stat -c %U -- "$1" 2>/dev/null) || owner='another user'
  msg="'$1' (the compiled profiles) is $owner's, not yours, or a link: not used;"
  msg+=" set HPC_CACHE_DIR to a folder of your own (e.g. export HPC_CACHE_DIR=\$HOME/.cache/hpc_toolkit)"
  hpc_die_usage "HPC_CACHE_DIR" "$msg"
}

# hpc_profile_source_cached FILE: sources the compiled profile FILE when it is this user's own
# regular file, not a link (in the folder hpc_profile_cache_folder accepted: nobody else can put
# one there), read from the descriptor opened after that check; false, sourcing nothing, else.
# Builtin tests only: the ordinary submission starts no process for it.
hpc_profile_source_cached() {
  local fd rc=1
  [[ -f $1 && ! -L $1 && -O $1 ]] || return 1
  { exec {fd}<"$1"; } 2>/dev/null || return 1
  if [[ $1 -ef /dev/fd/$fd && -O /dev/fd/$fd && ! -L $1 ]]; then
    # shellcheck source=/dev/null
    source "/dev/fd/$fd" && rc=0
  fi
  exec {fd}<&-
  return "$rc"
}

# hpc_profile_source FILE: loads profile FILE into hpc_profile_* from its compiled shell file,
# compiling it first when missing or made from other content or by another version of the
# helpers (a new schema key would be missing from an old cache), or when it is not the user's
# own file (hpc_profile_source_cached). The compiled file records both
# (hpc_profile_source_text, hpc_profile_source_version), so checking it costs no process. Exit 2
# on a bad profile, with the helpers' message, and on a folder of compiled profiles that is not
# the user's (hpc_profile_cache_folder).
hpc_profile_source() {
  local file=$1 dir=${HPC_CACHE_DIR:-$hpc_files_dir/.cache}/$hpc_profile_cache_sub name cache tmp
  name=${file##*/}
  name=${name%.yaml}
  cache=$dir/$name.sh
  hpc_profile_read_file "$file"
  [[ -n ${hpc_profile_helpers_version:-} ]] || hpc_profile_read_helpers_version
  hpc_profile_source_text='' hpc_profile_source_version=''
  hpc_profile_cache_folder "$dir"
  hpc_profile_source_cached "$cache" || true
  [[ $hpc_profile_source_text != "$hpc_profile_text" || -z $hpc_profile_text ||
    $hpc_profile_source_version != "$hpc_profile_helpers_version" || -z $hpc_profile_helpers_version ]] || return 0

  # 0700 whatever the umask (the folders above it keep theirs).
  # shellcheck disable=SC2174 # on purpose: only the profiles' own folder is the user's alone
  [[ -d $dir ]] || mkdir -p -m 700 -- "$dir"
  hpc_profile_cache_folder "$dir"
  hpc_profile_cache_private "$dir"
  tmp=$(mktemp "$dir/.$name.XXXXXX")
  if ! hpc_helpers_cli profile "$file" >"$tmp"; then
    rm -f -- "${tmp:?}"
    hpc_die_usage "--cluster" "the profile $file is not valid (see above)"
  fi
  printf 'hpc_profile_source_text=%q\nhpc_profile_source_version=%q\n' "$hpc_profile_text" \
    "$hpc_profile_helpers_version" >>"$tmp"
  # Renamed into place when complete: a concurrent submission never reads half a file. Over
  # whatever had the name (a link, or a folder: never into it).
  mv -fT -- "$tmp" "$cache" 2>/dev/null || {
    rm -rf -- "${cache:?}"
    mv -fT -- "$tmp" "$cache"
  }
  hpc_profile_source_cached "$cache" || hpc_die "cannot read the compiled profile $cache"
}

# hpc_profile_load [NAME]: loads profile NAME (or, when empty, the first whose hostname_pattern
# matches this host, else 'generic') into hpc_profile_* variables.
hpc_profile_load() {
  local want=$1 dir=$hpc_files_dir/clusters file name names=() host
  if [[ -n $want ]]; then
    if [[ ! -f $dir/$want.yaml ]]; then
      for file in "$dir"/*.yaml; do
        name=${file##*/}
        names+=("${name%.yaml}")
      done
      hpc_die_usage "--cluster" "'$want' is not a known cluster; accepted: ${names[*]}"
    fi
    hpc_profile_source "$dir/$want.yaml"
    return 0
  fi
  host=${HPC_HOSTNAME:-${HOSTNAME:-$(hostname)}}
  for file in "$dir"/*.yaml; do
    [[ ${file##*/} != generic.yaml ]] || continue
    hpc_profile_source "$file"
    if [[ -n $hpc_profile_hostname_pattern && $host =~ $hpc_profile_hostname_pattern ]]; then
      return 0
    fi
  done
  [[ -f $dir/generic.yaml ]] || hpc_die "no profile matches host '$host' and $dir/generic.yaml is missing"
  hpc_profile_source "$dir/generic.yaml"
}

# How long what sinfo said about a cluster's partitions is used without asking again (seconds).
hpc_slurm_ttl=600

# hpc_profile_slurm_facts REFRESH: what the cluster's partitions have. When REFRESH is 0 and the
# cache of the profile's cluster (HPC_CACHE_DIR/slurm/NAME.txt, for the same SLURM_CONF, younger
# than hpc_slurm_ttl) has it: sets hpc_slurm_text to its summary (see hpc_fit.bash), at the cost
# of no process. Else asks sinfo: hpc_slurm_fresh=1 and hpc_slurm_raw holds its lines
# ('PARTITION|NODES|CPUS|MEMORY_MB|GRES', the default marked *), empty when sinfo is missing or
# fails (SLURM alone judges the request then); hpc_fit_summarize makes the summary of them.
hpc_profile_slurm_facts() {
  local now stamp conf rest=''
  hpc_slurm_fresh=0 hpc_slurm_text='' hpc_slurm_raw=
  hpc_slurm_cache=${HPC_CACHE_DIR:-$hpc_files_dir/.cache}/slurm/$hpc_profile_name.txt
  printf -v now '%(%s)T' -1
  # Only this user's own file, never through a link: another's could say anything.
  if (($1 == 0)) && [[ -f $hpc_slurm_cache && -O $hpc_slurm_cache && ! -L $hpc_slurm_cache ]]; then
    {
      IFS= read -r stamp && IFS= read -r conf && { IFS= read -r -d '' rest || true; }
    } <"$hpc_slurm_cache" || stamp=
    if [[ -n $stamp && $stamp != *[!"$hpc_facts_digits"]* && $conf == "SLURM_CONF=${SLURM_CONF:-}" ]] &&
      ((now >= stamp && now - stamp < hpc_slurm_ttl)); then
      hpc_slurm_text=${rest%$'\n'}
      return 0
    fi
  fi
  command -v sinfo >/dev/null 2>&1 || return 0
  hpc_slurm_fresh=1 hpc_slurm_time=$now
  # shellcheck disable=SC2034 # read by hpc_fit.bash
  # Bounded: a controller that does not answer must not hang the submission (sbatch says why).
  hpc_slurm_raw=$(exec timeout 30 sinfo -h -e -o '%P|%D|%c|%m|%G' 2>/dev/null) || hpc_slurm_raw=
}

# hpc_profile_slurm_facts_save: keeps the summary of what sinfo has just said (hpc_slurm_text) for
# the next submissions (written whole under a temporary name, then renamed). Called only once a
# submission goes ahead: a refused or dry run creates nothing. A cache that cannot be written
# only costs a sinfo.
hpc_profile_slurm_facts_save() {
  ((hpc_slurm_fresh)) && [[ -n $hpc_slurm_text ]] || return 0
  local tmp=$hpc_slurm_cache.$$.tmp
  if mkdir -p -- "${hpc_slurm_cache%/*}" 2>/dev/null &&
    printf '%s\nSLURM_CONF=%s\n%s\n' "$hpc_slurm_time" "${SLURM_CONF:-}" "$hpc_slurm_text" 2>/dev/null >"$tmp" &&
    mv -fT -- "$tmp" "$hpc_slurm_cache" 2>/dev/null; then
    return 0
  fi
  [[ ! -f $tmp ]] || rm -f -- "${tmp:?}"
}
