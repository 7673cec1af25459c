#!/usr/bin/env bash
# Usage: bash cleanup_node.sh [--lib DIR] --root ROOT [--dry-run]
#
# The job that submit_plai_cleanup pins to each node; not for users. Removes (with --dry-run:
# lists) this user's leftover hpc_tmpdir.<user>.<job id>[.<16 hex digits>] folders of ended jobs in the node's
# local scratch root ROOT (a template: $VAR and ${VAR:-default} are expanded here, from the
# node's environment), by the rule of hpc_cleanup.bash, and prints a report that ends with a
# 'summary ...' line. sbatch runs a copy of this script, so --lib names the folder that holds
# hpc_cleanup.bash (default: this script's own folder).
# Exit status: 0 done, 1 nothing or not everything removed (squeue failed, rm failed, bad root),
# 2 bad input.
set -euo pipefail
hpc_program=cleanup_node
lib=${BASH_SOURCE[0]%/*}
[[ $lib != "${BASH_SOURCE[0]}" ]] || lib=.
root='' root_given=0 dry=0
while (($#)); do
  case $1 in
    --lib | --root)
      if (($# < 2)); then
        printf '%s: %s: needs a value\n' "$hpc_program" "$1" >&2
        exit 2
      fi
      if [[ $1 == --lib ]]; then lib=$2; else root=$2 root_given=1; fi
      shift 2
      ;;
    --dry-run)
      dry=1
      shift
      ;;
    *)
      printf '%s: %s: unknown; accepted: --lib DIR, --root ROOT, --dry-run\n' "$hpc_program" "$1" >&2
      exit 2
      ;;
  esac
done
if ((! root_given)) || [[ -z $root ]]; then
  printf '%s: --root: needs a value (the local scratch root)\n' "$hpc_program" >&2
  exit 2
fi
# shellcheck source=plai_cleanups/hpc_cleanup.bash
source "$lib/hpc_cleanup.bash"
hpc_cleanup_node "$root" "$dry"
