#!/usr/bin/env bash
# Usage: bash tests/install_deps.sh
#
# Installs what the test suite needs on a fresh Debian 12 machine, as root: slurm-wlm and munge,
# bubblewrap and siftool for the container stand-in, GNU parallel for test files side by side
# (apt-get), bats-core and its helper libraries (npm ci, from package-lock.json), and the Python
# packages of requirements-dev.txt (pip; torch is the CPU wheel pinned there). Each step is
# skipped when what it installs is already there, so a second run takes seconds.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

apt_packages=(slurm-wlm munge bubblewrap siftool parallel)
missing=()
for pkg in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if ((${#missing[@]})); then
  if ((EUID != 0)); then
    echo "install_deps.sh: missing Debian packages ${missing[*]}; run as root: apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "install_deps.sh: apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# node_modules/.hpc-lock is the package-lock.json the last 'npm ci' installed.
if [[ ! -x node_modules/bats/bin/bats ]] || ! cmp -s package-lock.json node_modules/.hpc-lock; then
  echo "install_deps.sh: npm ci (bats-core, bats-support, bats-assert)"
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.hpc-lock
fi

python3 -m pip install -q --disable-pip-version-check -r requirements-dev.txt -e python_helpers
