"""Usage: python3 tests/shellcheck_keys.py CACHE_DIR [OPTIONS] < FILES (NUL-separated paths, from
the repository's root)

The shell files among FILES whose shellcheck result may have changed since it last passed, for
tests/run.sh's lint: prints "KEY\\0PATH\\0" for each file whose KEY is not a file in CACHE_DIR
(run.sh creates CACHE_DIR/KEY once shellcheck OPTIONS passed on PATH). OPTIONS: the options
run.sh passes to shellcheck for this pass, as one argument (default -x); run.sh lints some files twice,
with different options, and each pass has keys of its own.

A file's KEY is the sha256 of everything shellcheck -x's answer on it can depend on: shellcheck's
version, its options (OPTIONS), every .shellcheckrc of the repository, the file's path and
content, and the path and content of every file it may follow, transitively. shellcheck follows
a `source` or `.` command only to a path written on that command's line (a constant path, or one
that a `# shellcheck source=` directive above it names; a path built from variables it cannot
follow), so a followed file's name is always written on a line of the file that follows it that
holds the word `source` or a `.` command, or on a `# shellcheck source=` directive: the files
"it may follow" are all the files of the repository (git ls-files) whose name occurs as a word
on such a line, then those named on such lines of theirs, and so on. That over-approximates
(every word of such a line counts), never under-approximates: a change to anything shellcheck reads changes the key. bats' `load`
is a function to shellcheck, which does not follow it.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

# The options of run.sh's first shellcheck pass, before OPTIONS was an argument: part of the key.
OPTIONS = "-x"
WORD = re.compile(rb"[A-Za-z0-9_.+-]+")
# A line that may make shellcheck follow a file: a comment only as a directive naming source=; a
# line of code with the word source, or with a '.' command (where a command starts).
DIRECTIVE = re.compile(rb"^\s*#\s*shellcheck\s.*source=")
COMMENT = re.compile(rb"^\s*#")
SOURCING = re.compile(rb"(^|[^A-Za-z0-9_-])source([^A-Za-z0-9_-]|$)"
                      rb"|(^|[;&|(){}!]|\b(then|do|else|time))\s*\.\s+\S")


def sourcing(line: bytes) -> bool:
    """Whether LINE may make shellcheck follow a file named on it."""
    if COMMENT.match(line):
        return DIRECTIVE.match(line) is not None
    return SOURCING.search(line) is not None


def tracked_files() -> dict[bytes, list[str]]:
    """Every file of the repository (tracked, or new and not ignored), by its name."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True, check=True).stdout
    by_name: dict[bytes, list[str]] = {}
    for path in out.decode("utf-8", "surrogateescape").split("\0"):
        if path and os.path.isfile(path) and not os.path.islink(path):
            by_name.setdefault(os.path.basename(path).encode("utf-8", "surrogateescape"),
                               []).append(path)
    return by_name


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    cache = Path(argv[1])
    options = argv[2] if len(argv) == 3 else OPTIONS
    files = [p for p in sys.stdin.buffer.read().decode("utf-8", "surrogateescape").split("\0")
             if p]
    version = subprocess.run(["shellcheck", "--version"], capture_output=True, text=True,
                             check=True).stdout
    by_name = tracked_files()
    texts: dict[str, bytes] = {}
    named: dict[str, set[str]] = {}

    def text(path: str) -> bytes:
        if path not in texts:
            texts[path] = Path(path).read_bytes()
        return texts[path]

    def names(path: str) -> set[str]:
        """The files of the repository whose name occurs on a line of PATH that may source."""
        if path not in named:
            words = {word for line in text(path).splitlines() if sourcing(line)
                     for word in WORD.findall(line)}
            named[path] = {dep for word in words for dep in by_name.get(word, ())}
        return named[path]

    base = hashlib.sha256()
    base.update(version.encode() + b"\0" + options.encode() + b"\0")
    for rc in sorted(p for paths in by_name.values() for p in paths
                     if os.path.basename(p) in (".shellcheckrc", "shellcheckrc")):
        base.update(rc.encode("utf-8", "surrogateescape") + b"\0" + text(rc) + b"\0")
    for path in files:
        seen = {path}
        todo = [path]
        while todo:
            for dep in names(todo.pop()) - seen:
                seen.add(dep)
                todo.append(dep)
        key = base.copy()
        key.update(path.encode("utf-8", "surrogateescape") + b"\0")
        for dep in sorted(seen):
            key.update(dep.encode("utf-8", "surrogateescape") + b"\0")
            key.update(hashlib.sha256(text(dep)).digest())
        digest = key.hexdigest()
        if not (cache / digest).is_file():
            sys.stdout.buffer.write(digest.encode() + b"\0"
                                    + path.encode("utf-8", "surrogateescape") + b"\0")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
