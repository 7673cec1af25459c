# shellcheck shell=bash
# The other member of a lab's group, for tests of a group-writable scratch (umask 002): a real
# second Unix user (made here; the suite runs as root). The test's SCRATCH must be set.

# mate_ready: the other member of the group, hpc_mate (group hpc_lab, which SCRATCH then belongs
# to, setgid and group-writable as a lab's folder is); skips where no user can be made.
mate_ready() {
  command -v runuser >/dev/null || skip "no runuser"
  getent group hpc_lab >/dev/null || groupadd hpc_lab 2>/dev/null || skip "cannot make a group (groupadd)"
  id hpc_mate >/dev/null 2>&1 || useradd -M -N -g hpc_lab -s /bin/bash hpc_mate 2>/dev/null ||
    skip "cannot make a user (useradd)"
  chgrp -R hpc_lab "$SCRATCH"
  # Open to the group (g+rwx), a folder the toolkit made private too: as a user may open one, or
  # an older version under umask 002 left it.
  find "$SCRATCH" -type d -exec chmod g+rwxs {} +
}

# as_mate COMMAND: runs the bash COMMAND as the other member ($1.. as its arguments); without the
# suite's BASH_ENV, which a checkout in a private folder keeps from them.
as_mate() {
  runuser -u hpc_mate -- env -u BASH_ENV bash -c "$@"
}
