"""SLURM hostlist expressions, expanded as ``scontrol show hostnames`` does.

Grammar accepted by :func:`expand`::

    expr   := name (SEP+ name)*          SEP is ',' or whitespace; empty names are skipped
    name   := (text | group)+
    group  := '[' range (',' range)* ']'
    range  := DIGITS | DIGITS '-' DIGITS  (lo <= hi, at most 65536 hosts per range)

A range keeps the zero padding of its lower bound (``n[01-10]`` gives ``n01`` ... ``n10``,
``n[1-010]`` gives ``n1`` ... ``n10``), exactly as SLURM does. A name with several groups expands to
their cartesian product in SLURM's order: the last group varies fastest, then the first group, then
the second, ... (``x[1-2]y[1-2]z[1-2]`` gives ``x1y1z1 x1y1z2 x2y1z1 x2y1z2 x1y2z1 ...``); with two
groups this is the plain row-major order.

Where SLURM is lenient with malformed input (``n[1-]``, ``n[ 1]``, an unbalanced ``[``), this module
raises :class:`ValueError` instead. Two deliberate extensions: text after the last group
(``n[1-2]-ib``) is allowed and kept as a suffix (SLURM 22.05 rejects it), and numbers are never
clamped to 64 bits.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

__all__ = ["MAX_HOSTS", "MAX_RANGE", "expand", "first", "split_names"]

MAX_RANGE = 64 * 1024
"""Most hosts a single range may hold (SLURM's own limit)."""

MAX_HOSTS = 1024 * 1024
"""Most hosts a whole expression may expand to."""

_MAX_DIGITS = 18
_SEPARATORS = frozenset(", \t\n\r\v\f")

# A parsed range: (lo, hi, width).
_Range = tuple[int, int, int]


def _fail(expr: str, reason: str) -> ValueError:
    return ValueError(f"invalid hostlist {expr!r}: {reason}")


def split_names(expr: str) -> list[str]:
    """Splits EXPR at top-level separators (commas and whitespace outside brackets).

    Empty names are skipped. Raises ValueError on unbalanced or nested brackets.
    """
    names: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in expr:
        if ch == "[":
            if depth:
                raise _fail(expr, "nested '['")
            depth = 1
        elif ch == "]":
            if not depth:
                raise _fail(expr, "']' without '['")
            depth = 0
        elif ch in _SEPARATORS and not depth:
            if current:
                names.append("".join(current))
                current = []
            continue
        current.append(ch)
    if depth:
        raise _fail(expr, "'[' without ']'")
    if current:
        names.append("".join(current))
    return names


def _parse_number(expr: str, text: str, item: str) -> int:
    if not text or not text.isascii() or not text.isdigit():
        raise _fail(expr, f"bad range {item!r} (expected N or N-M with digits only)")
    if len(text) > _MAX_DIGITS:
        raise _fail(expr, f"number {text!r} is too long (at most {_MAX_DIGITS} digits)")
    return int(text)


def _parse_group(expr: str, body: str) -> list[_Range]:
    if body == "":
        raise _fail(expr, "empty brackets '[]'")
    ranges: list[_Range] = []
    for item in body.split(","):
        lo_text, dash, hi_text = item.partition("-")
        lo = _parse_number(expr, lo_text, item)
        hi = _parse_number(expr, hi_text, item) if dash else lo
        if lo > hi:
            raise _fail(expr, f"bad range {item!r} (start > end)")
        if hi - lo + 1 > MAX_RANGE:
            raise _fail(expr, f"range {item!r} has more than {MAX_RANGE} hosts")
        ranges.append((lo, hi, len(lo_text)))
    return ranges


def _parse_name(expr: str, name: str) -> tuple[list[str], list[list[_Range]]]:
    """Splits NAME into literal texts and groups: texts[0] g[0] texts[1] g[1] ... texts[n]."""
    texts: list[str] = []
    groups: list[list[_Range]] = []
    rest = name
    while True:
        open_at = rest.find("[")
        if open_at < 0:
            texts.append(rest)
            return texts, groups
        close_at = rest.index("]", open_at)  # balanced: checked by split_names
        texts.append(rest[:open_at])
        groups.append(_parse_group(expr, rest[open_at + 1 : close_at]))
        rest = rest[close_at + 1 :]


def _group_values(group: Sequence[_Range]) -> list[str]:
    return [str(v).zfill(width) for lo, hi, width in group for v in range(lo, hi + 1)]


def _group_size(group: Sequence[_Range]) -> int:
    return sum(hi - lo + 1 for lo, hi, _ in group)


def _expand_name(texts: Sequence[str], groups: Sequence[Sequence[_Range]]) -> Iterator[str]:
    n = len(groups)
    if n == 0:
        yield texts[0]
        return
    # SLURM's loop nesting, outermost first: groups n-2, n-3, ..., 0, then n-1 innermost.
    order = [*range(n - 2, -1, -1), n - 1]
    values = [_group_values(groups[g]) for g in order]
    for combo in itertools.product(*values):
        chosen = [""] * n
        for g, value in zip(order, combo):
            chosen[g] = value
        parts = [texts[0]]
        for g in range(n):
            parts.append(chosen[g])
            parts.append(texts[g + 1])
        yield "".join(parts)


def expand(expr: str) -> list[str]:
    """Expands a SLURM hostlist expression into host names, in ``scontrol show hostnames`` order.

    Duplicates are kept, as SLURM keeps them. Raises ValueError, quoting EXPR, on malformed input
    or when EXPR names no host at all.

    >>> expand("n[01-03,7],gpu-a[1-2]")
    ['n01', 'n02', 'n03', 'n7', 'gpu-a1', 'gpu-a2']
    """
    if not isinstance(expr, str):
        raise TypeError(f"hostlist expression must be a str, not {type(expr).__name__}")
    parsed = [_parse_name(expr, name) for name in split_names(expr)]
    if not parsed:
        raise _fail(expr, "no host names")
    total = 0
    for _, groups in parsed:
        count = 1
        for group in groups:
            count *= _group_size(group)
        total += count
        if total > MAX_HOSTS:
            raise _fail(expr, f"expands to more than {MAX_HOSTS} hosts")
    hosts: list[str] = []
    for texts, groups in parsed:
        hosts.extend(_expand_name(texts, groups))
    return hosts


def first(expr: str) -> str:
    """The first host of EXPR (the one SLURM starts rank 0 on); validates the whole expression."""
    return expand(expr)[0]
