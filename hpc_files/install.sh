#!/usr/bin/env bash
# Usage: bash hpc_files/install.sh PROJECT_DIR
#
# Installs the toolkit into a project: makes PROJECT_DIR/hpc_files/ with the submitter, its
# library, the cluster profiles, the venv and Singularity job scripts and the Python helpers, so
# that the project needs nothing else:  cd PROJECT_DIR/hpc_files && bash job_submitter.sh --help
# The templates experiment_configurations.txt, sweeper.yml and defaults (the project's usual
# settings, all commented out) are copied only when the project has none: running it again
# updates the toolkit's own files and never your configuration.
# PROJECT_DIR/.gitignore gets the lines for the venv (virtual_env, .virtual_env_builds/) and the
# lock files that are missing from it, after your own lines (a symbolic link, or anything but a
# regular file, is not written).
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$src")
# shellcheck source=hpc_files/lib/hpc_common.bash
source "$src/lib/hpc_common.bash"

case ${1-} in
  -h | --help)
    hpc_usage "${BASH_SOURCE[0]}"
    exit 0
    ;;
  '') hpc_die_usage "PROJECT_DIR" "missing; usage: bash hpc_files/install.sh PROJECT_DIR" ;;
esac
(($# == 1)) || hpc_die_usage "$2" "unexpected word; usage: bash hpc_files/install.sh PROJECT_DIR"
[[ -d $1 ]] || hpc_die_usage "PROJECT_DIR" "'$1' is not a folder"
project=$(cd "$1" && pwd)
dest=$project/hpc_files
[[ $dest != "$src" ]] || hpc_die_usage "PROJECT_DIR" "'$1' is the toolkit itself"

# copy_tree FROM TO: replaces TO with a copy of the toolkit folder FROM (no caches).
copy_tree() {
  local tmp
  tmp=$(mktemp -d "$dest/.install.XXXXXX")
  # mktemp -d makes it 0700: give it the mode the umask gives any new folder.
  chmod "$(printf '%o' $((8#777 & ~8#$(umask))))" "$tmp"
  cp -R -- "$1/." "$tmp/"
  find "$tmp" \( -name __pycache__ -o -name '*.egg-info' -o -name .cache \) -prune -exec rm -rf -- {} +
  rm -rf -- "${2:?}"
  mv -- "$tmp" "$2"
}

mkdir -p -- "$dest"
for file in job_submitter.sh job_step.sh; do
  cp -- "$src/$file" "$dest/$file"
done
copy_tree "$src/lib" "$dest/lib"
copy_tree "$src/clusters" "$dest/clusters"
copy_tree "$repo/virtual_env_hpc_files" "$dest/virtual_env_hpc_files"
[[ ! -d $repo/singularity_hpc_files ]] || copy_tree "$repo/singularity_hpc_files" "$dest/singularity_hpc_files"
copy_tree "$repo/plai_cleanups" "$dest/plai_cleanups"
mkdir -p -- "$dest/python_helpers"
copy_tree "$repo/python_helpers/src" "$dest/python_helpers/src"
cp -- "$repo/python_helpers/pyproject.toml" "$dest/python_helpers/pyproject.toml"
echo "installed the toolkit in $dest (job_submitter.sh, lib/, clusters/, virtual_env_hpc_files/, plai_cleanups/," \
  "python_helpers/)"
# The defaults file's template is defaults.template here: the toolkit's own folder has no
# defaults file, so that its submitter, run from any user's copy, reads none.
for file in experiment_configurations.txt sweeper.yml defaults; do
  template=$file
  [[ $file != defaults ]] || template=defaults.template
  [[ -f $src/$template ]] || continue
  if [[ -e $dest/$file || -L $dest/$file ]]; then
    echo "kept your $dest/$file"
  else
    cp -- "$src/$template" "$dest/$file"
    echo "added the template $dest/$file: edit it"
  fi
done

# The project's .gitignore: the venv (a link: no trailing slash), its builds and the lock files
# that submissions make in the project. Only missing lines are appended, after the user's own.
ignores=(/virtual_env /.virtual_env_builds/ /.virtual_env.lock /.virtual_env.use.lock)
gitignore=$project/.gitignore
if [[ -L $gitignore ]]; then
  echo "not writing $gitignore: it is a symbolic link; add to it yourself: ${ignores[*]}"
elif [[ -e $gitignore && ! -f $gitignore ]]; then
  # A FIFO would hang the reading, a folder fail the writing.
  echo "not writing $gitignore: it is not a regular file; add to it yourself: ${ignores[*]}"
else
  missing=()
  for line in "${ignores[@]}"; do
    grep -qxF -- "$line" "$gitignore" 2>/dev/null || missing+=("$line")
  done
  if ((${#missing[@]} == 0)); then
    echo "$gitignore already ignores the virtual environment and its locks"
  else
    # A last line without its newline is ended first.
    end=''
    [[ ! -s $gitignore ]] || end=$(tail -c 1 -- "$gitignore")
    {
      [[ -z $end ]] || echo
      echo "# hpc toolkit (hpc_files/install.sh): the virtual environment, its builds and locks"
      printf '%s\n' "${missing[@]}"
    } >>"$gitignore"
    echo "added to $gitignore: ${missing[*]}"
  fi
fi
