#!/usr/bin/env bash
# Usage: bash tests/install_deps.sh
#
# Installs what the test suite needs on a fresh Debian 12 machine, as root: slurm-wlm and munge,
# slurmdbd, its MySQL plugin and mariadb-server (the site configuration of the local cluster),
# bubblewrap and siftool for the container stand-in, GNU parallel for test files side by side
# (apt-get), bats-core and its helper libraries (npm ci, from package-lock.json), and the Python
# packages of requirements-dev.txt (pip; torch is the CPU wheel pinned there). Each step is
# skipped when what it installs is already there, so a second run takes about a second.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

apt_packages=(slurm-wlm munge slurmdbd slurm-wlm-mysql-plugin mariadb-server bubblewrap siftool parallel)
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

# pip only when something differs: every 'name==version' of requirements-dev.txt installed at that
# version (a local build tag such as +cpu aside), and hpc_helpers found in this checkout's
# python_helpers/src (the editable install) with the version and dependencies that its
# pyproject.toml has now. Read from the installed packages' own metadata: a second run takes a
# fraction of a second, not pip's seconds. Anything it cannot read (no tomllib before Python
# 3.11) runs pip. Where only the editable install differs (a fresh clone on a machine that has
# everything: it points at another checkout) and its dependencies and setuptools are there (status
# 2), pip installs it alone, without resolving the rest or building in an isolated environment
# (about 3 s instead of 13).
status=0
python3 -E - requirements-dev.txt "$PWD/python_helpers" <<'EOF' || status=$?
import importlib.metadata as md, importlib.util, os, re, sys, tomllib
for line in open(sys.argv[1], encoding="utf-8"):
    line = line.split("#", 1)[0].strip()
    if not line:
        continue
    pin = re.fullmatch(r"([A-Za-z0-9_.-]+)==([^\s;\[]+)", line)
    try:
        if pin is None or md.version(pin[1]).split("+")[0] != pin[2]:
            sys.exit(1)
    except md.PackageNotFoundError:
        sys.exit(1)
project = tomllib.load(open(os.path.join(sys.argv[2], "pyproject.toml"), "rb"))["project"]
# From here on only hpc_helpers' own install may differ: pip for it alone (exit 2) where what
# that needs is there (its dependencies, and setuptools, its build backend), else everything.
# An editable build without isolation needs setuptools 64 or later, and wheel with a setuptools below 70.1.
try:
    for dep in project["dependencies"]:
        md.version(re.split(r"[<>=!~;\[ ]", dep, maxsplit=1)[0])
    setuptools = tuple(int(part) for part in re.findall(r"\d+", md.version("setuptools"))[:2])
    if setuptools < (64,) or (setuptools < (70, 1) and not md.version("wheel")):
        sys.exit(1)
except md.PackageNotFoundError:
    sys.exit(1)
try:
    installed = md.version(project["name"])
    requires = {r.replace(" ", "") for r in md.requires(project["name"]) or [] if "extra ==" not in r}
except md.PackageNotFoundError:
    sys.exit(2)
if installed != project["version"] or requires != {r.replace(" ", "") for r in project["dependencies"]}:
    sys.exit(2)
spec = importlib.util.find_spec("hpc_helpers")
home = os.path.realpath(os.path.join(sys.argv[2], "src"))
sys.exit(0 if spec and spec.origin and os.path.realpath(spec.origin).startswith(home + os.sep) else 2)
EOF
case $status in
  0) ;;
  2)
    echo "install_deps.sh: pip install --no-deps --no-build-isolation -e python_helpers"
    python3 -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e python_helpers || {
      echo "install_deps.sh: that failed; pip install -r requirements-dev.txt -e python_helpers"
      python3 -m pip install -q --disable-pip-version-check -r requirements-dev.txt -e python_helpers
    }
    ;;
  *)
    echo "install_deps.sh: pip install -r requirements-dev.txt -e python_helpers"
    python3 -m pip install -q --disable-pip-version-check -r requirements-dev.txt -e python_helpers
    ;;
esac
