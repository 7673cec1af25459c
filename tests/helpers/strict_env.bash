# shellcheck shell=bash
# BASH_ENV of tests/run.sh's bats run. The processes that run the unit tests (bats-exec-file and
# bats-exec-test of a file under tests/unit/) get set -u: a library function a test calls in
# process that reads an unset variable then fails there, as it would in the toolkit's own
# set -u scripts. Every other bash is left alone (the toolkit's scripts set their options
# themselves; stubs, pyenv's shims and the integration tests are not held to it).
case ${0##*/} in
  bats-exec-file | bats-exec-test) [[ " $* " != *"/tests/unit/"* ]] || set -u ;;
esac
