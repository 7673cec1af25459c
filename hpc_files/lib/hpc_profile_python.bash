# shellcheck shell=bash
# hpc_profile_python.bash: the Python that compiles a cluster profile and runs hpc_helpers (a
# small venv of the toolkit's, made once), and the cache folder made private again when a
# profile is compiled: what a submission with its profile compiled already does not run, loaded
# at the first call of one of them (their stubs in hpc_profile.bash, hpc_lib_load).

# What it reads, set by the others (declared, not set): hpc_submit_locate's helpers folder.
declare -g hpc_python_helpers_dir

# hpc_python_for_helpers: prints a Python 3 that can import yaml, preparing one when needed (a
# small venv inside the toolkit, made once); dies with the reason when there is no Python 3.
hpc_python_for_helpers() {
  local py venv
  venv=${HPC_CACHE_DIR:-$hpc_files_dir/.cache}/helpers-venv
  for py in "${HPC_PYTHON:-}" python3 "$venv/bin/python"; do
    if [[ -z $py ]] || ! command -v "$py" >/dev/null 2>&1; then continue; fi
    # The toolkit's own venv runs only as the user's own folder that nobody else can enter:
    # another's, or one whose folders the group could write (made under umask 002), would run
    # their code (a .pth file in its site-packages runs at every start).
    [[ $py != "$venv/bin/python" ]] || hpc_helpers_venv_private "$venv" || continue
    if "$py" -c 'import sys, yaml; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
      printf '%s\n' "$py"
      return 0
    fi
  done
  command -v python3 >/dev/null 2>&1 ||
    hpc_die "no python3 found: the toolkit needs Python 3.9 or newer on the login node (e.g. 'module load python')"
  if [[ -e $venv || -L $venv ]] && ! hpc_helpers_venv_private "$venv"; then
    hpc_die "$venv (the toolkit's Python for its helpers) is not yours alone, or a link: not run (others could" \
      "change what it runs); remove it (it is made again, private), or install PyYAML for python3 or set HPC_PYTHON"
  fi
  hpc_say "preparing a Python with PyYAML for the toolkit's helpers in $venv (once)"
  if ! (umask 077 && python3 -m venv "$venv" >&2) || ! "$venv/bin/python" -m pip install -q PyYAML >&2; then
    hpc_die \
      "could not prepare $venv (python3 -m venv, then pip install PyYAML); install PyYAML for python3 or set HPC_PYTHON"
  fi
  printf '%s\n' "$venv/bin/python"
}

# hpc_helpers_venv_private VENV: true when VENV is a folder of the user's own, not a link, that
# nobody else can enter (hpc_python_for_helpers makes it so, whatever the umask).
hpc_helpers_venv_private() {
  local mode
  [[ -d $1 && ! -L $1 && -O $1 ]] || return 1
  mode=$(stat -c %a -- "$1" 2>/dev/null) || return 1
  (((8#$mode & 8#077) == 0))
}

# hpc_helpers_cli ARGS...: runs `python -m hpc_helpers ARGS...` with the toolkit's copy of the package.
hpc_helpers_cli() {
  local py
  py=$(hpc_python_for_helpers) || return 1
  # No __pycache__ in the toolkit's folder: a --dry-run creates nothing.
  PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$hpc_python_helpers_dir/src${PYTHONPATH:+:$PYTHONPATH}" "$py" -m hpc_helpers \
    "$@"
}

# hpc_profile_cache_private DIR: (when a profile is compiled: processes cost nothing then) makes
# DIR, this user's folder, private again when others can write it (the user's own chmod): what
# they put there would run as the user. Says so in one line.
hpc_profile_cache_private() {
  local mode
  mode=$(stat -c %a -- "$1") || return 0
  (((8#$mode & 8#022) == 0)) && return 0
  chmod go-rwx -- "$1" || return 0
  hpc_say "made $1 (the compiled profiles) private: others could change what every submission sources"
}
