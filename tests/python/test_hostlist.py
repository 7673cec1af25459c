"""hostlist.expand: a table, bad input, and generated expressions checked against scontrol."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hpc_helpers.hostlist import MAX_HOSTS, MAX_RANGE, expand, first, split_names

TABLE = [
    ("n1", ["n1"]),
    ("n[01-03,7]", ["n01", "n02", "n03", "n7"]),
    ("gpu-a[1-2],cpu-b3", ["gpu-a1", "gpu-a2", "cpu-b3"]),
    ("a[1-2]b[3-4]", ["a1b3", "a1b4", "a2b3", "a2b4"]),
    ("n[1-2][3-4]", ["n13", "n14", "n23", "n24"]),
    (
        "x[1-2]y[1-2]z[1-2]",
        ["x1y1z1", "x1y1z2", "x2y1z1", "x2y1z2", "x1y2z1", "x1y2z2", "x2y2z1", "x2y2z2"],
    ),
    (
        "a[1-2,5]b[3-4]c[7,9]",
        [
            "a1b3c7",
            "a1b3c9",
            "a2b3c7",
            "a2b3c9",
            "a5b3c7",
            "a5b3c9",
            "a1b4c7",
            "a1b4c9",
            "a2b4c7",
            "a2b4c9",
            "a5b4c7",
            "a5b4c9",
        ],
    ),
    ("rack[1-2]-node[1-2]", ["rack1-node1", "rack1-node2", "rack2-node1", "rack2-node2"]),
    ("n[1-3,2]", ["n1", "n2", "n3", "n2"]),
    ("n1,n1", ["n1", "n1"]),
    ("n[2,1]", ["n2", "n1"]),
    ("n[5]", ["n5"]),
    ("n[0-0]", ["n0"]),
    ("n[001-2]", ["n001", "n002"]),
    ("n[1-010]", [f"n{i}" for i in range(1, 11)]),
    ("n[01-3]", ["n01", "n02", "n03"]),
    ("n[09-11]", ["n09", "n10", "n11"]),
    ("n[9-11]", ["n9", "n10", "n11"]),
    ("n[1-10],n[11-12]", [f"n{i}" for i in range(1, 13)]),
    ("n5[1-2]", ["n51", "n52"]),
    ("n[1-2]5[3-4]", ["n153", "n154", "n253", "n254"]),
    ("[1-2]", ["1", "2"]),
    ("10", ["10"]),
    ("n007", ["n007"]),
    ("n1.example.com", ["n1.example.com"]),
    ("n,,m", ["n", "m"]),
    ("n,", ["n"]),
    (",n", ["n"]),
    ("a b", ["a", "b"]),
    ("x[1-2]\ty", ["x1", "x2", "y"]),
    (" n[1-2] ", ["n1", "n2"]),
    (
        "a[1-2]b[3-4],c[5-6]d[7-8]",
        ["a1b3", "a1b4", "a2b3", "a2b4", "c5d7", "c5d8", "c6d7", "c6d8"],
    ),
    ("localhost", ["localhost"]),
    ("n[1-2],m[3-4]", ["n1", "n2", "m3", "m4"]),
    # Nodes named by their address (local_cluster.sh --config second): SLURM compresses
    # 127.0.0.1,127.0.0.2 to 127.0.0.[1-2].
    ("127.0.0.[1-2]", ["127.0.0.1", "127.0.0.2"]),
    ("127.0.0.1,127.0.0.2", ["127.0.0.1", "127.0.0.2"]),
    ("127.0.0.[1-2,10]", ["127.0.0.1", "127.0.0.2", "127.0.0.10"]),
    ("10.1.[0-1].[8-9]", ["10.1.0.8", "10.1.0.9", "10.1.1.8", "10.1.1.9"]),
    ("192.168.0.[099-100],10.0.0.1", ["192.168.0.099", "192.168.0.100", "10.0.0.1"]),
]

# Accepted here, rejected by SLURM 22.05: text after the last bracket group.
EXTENSIONS = [
    ("n[1-3]-ib", ["n1-ib", "n2-ib", "n3-ib"]),
    ("a[1-2]b[3-4]c", ["a1b3c", "a1b4c", "a2b3c", "a2b4c"]),
]

# (expression, words the error message must contain); scontrol rejects all of these too.
BAD_LIKE_SLURM = [
    ("n[3-1]", "'3-1' (start > end)"),
    ("n[]", "empty brackets"),
    ("n[a-b]", "bad range 'a-b'"),
    ("n[1-2,]", "bad range ''"),
    ("n[,1]", "bad range ''"),
    ("n[1--2]", "bad range '1--2'"),
    ("n[-1]", "bad range '-1'"),
    ("n[1x]", "bad range '1x'"),
    ("n[1-2x]", "bad range '1-2x'"),
    ("n[1-2]]x", "']' without '['"),
    (f"n[0-{MAX_RANGE}]", f"more than {MAX_RANGE} hosts"),
]

# Rejected here; SLURM is lenient (it guesses, or keeps the brackets in the name).
BAD_STRICTER = [
    ("n[1-]", "bad range '1-'"),
    ("n[ 1]", "bad range ' 1'"),
    ("n[+1]", "bad range '+1'"),
    ("n[[1-2]", "nested '['"),
    ("n[1-2", "'[' without ']'"),
    ("n]", "']' without '['"),
    ("[", "'[' without ']'"),
    ("n[1-2]x[3", "'[' without ']'"),
    ("n[1234567890123456789]", "is too long"),
    ("", "no host names"),
    (" , ", "no host names"),
    ("a[0-1023]b[0-1024]", f"more than {MAX_HOSTS} hosts"),
]


@pytest.mark.parametrize(("expr", "hosts"), TABLE + EXTENSIONS)
def test_expand_table(expr: str, hosts: list[str]) -> None:
    assert expand(expr) == hosts
    assert first(expr) == hosts[0]


@pytest.mark.parametrize(("expr", "words"), BAD_LIKE_SLURM + BAD_STRICTER)
def test_bad_input_raises_value_error_quoting_it(expr: str, words: str) -> None:
    with pytest.raises(ValueError, match="invalid hostlist") as info:
        expand(expr)
    message = str(info.value)
    assert repr(expr) in message
    assert words in message
    assert "\n" not in message


def test_non_str_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        expand(["n1"])  # type: ignore[arg-type]


def test_split_names_keeps_commas_inside_brackets() -> None:
    assert split_names("a[1,2]b,c[3-4] d") == ["a[1,2]b", "c[3-4]", "d"]


def test_largest_range_is_allowed() -> None:
    hosts = expand(f"n[1-{MAX_RANGE}]")
    assert len(hosts) == MAX_RANGE
    assert hosts[-1] == f"n{MAX_RANGE}"


# --- against scontrol ------------------------------------------------------------------------


@pytest.mark.parametrize(("expr", "hosts"), TABLE)
def test_table_matches_scontrol(scontrol, expr: str, hosts: list[str]) -> None:
    assert scontrol.hostnames(expr) == hosts


@pytest.mark.parametrize(("expr", "hosts"), EXTENSIONS)
def test_extensions_are_rejected_by_this_scontrol(scontrol, expr: str, hosts: list[str]) -> None:
    # If a newer SLURM accepts suffixes, it must agree with us.
    assert scontrol.hostnames(expr) in (None, hosts)


@pytest.mark.parametrize(("expr", "words"), BAD_LIKE_SLURM)
def test_scontrol_rejects_the_same(scontrol, expr: str, words: str) -> None:
    assert scontrol.hostnames(expr) is None


_TEXT = st.text(alphabet="abnx-._0123456789", min_size=0, max_size=4)
_PLAIN = st.text(alphabet="abnx-._0123456789", min_size=1, max_size=6)


@st.composite
def _range(draw: st.DrawFn) -> tuple[str, int]:
    """A range item and its host count (0 when it is invalid: lo > hi)."""
    lo = draw(st.integers(0, 120))
    lo_text = str(lo).zfill(draw(st.integers(1, 4)))
    kind = draw(st.sampled_from(["single", "range", "range", "range", "reversed"]))
    if kind == "single" or (kind == "reversed" and lo == 0):
        return lo_text, 1
    step = draw(st.integers(0, 12)) if kind == "range" else -draw(st.integers(1, min(lo, 3)))
    hi = lo + step
    hi_text = str(hi).zfill(draw(st.integers(1, 4)))
    return f"{lo_text}-{hi_text}", hi - lo + 1 if hi >= lo else 0


@st.composite
def _group(draw: st.DrawFn) -> tuple[str, int]:
    items = draw(st.lists(_range(), min_size=1, max_size=3))
    count = 0 if any(c == 0 for _, c in items) else sum(c for _, c in items)
    return "[" + ",".join(text for text, _ in items) + "]", count


@st.composite
def _name(draw: st.DrawFn) -> tuple[str, int]:
    groups = draw(st.lists(_group(), min_size=0, max_size=3))
    if not groups:
        return draw(_PLAIN), 1
    parts: list[str] = []
    count = 1
    for text, c in groups:
        parts.append(draw(_TEXT))
        parts.append(text)
        count *= c
    return "".join(parts), count


@st.composite
def expressions(draw: st.DrawFn) -> tuple[str, int]:
    """A hostlist expression in SLURM's grammar and its host count (0: invalid)."""
    names = draw(st.lists(_name(), min_size=1, max_size=3))
    seps = draw(st.lists(st.sampled_from([",", ",", " ", ",,"]), min_size=2, max_size=2))
    expr = names[0][0] + "".join(seps[i % 2] + text for i, (text, _) in enumerate(names[1:]))
    valid = all(c > 0 for _, c in names)
    return expr, sum(c for _, c in names) if valid else 0


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(expressions())
@example(("a[1-2]b[1-2]c[1-2]d[1-2]", 16))
@example(("n[1-9],n[010-012]", 12))
@example(("n[8-9],n[10-11],n[012]", 5))
def test_generated_expressions_match_scontrol(scontrol, case: tuple[str, int]) -> None:
    expr, count = case
    expected = scontrol.hostnames(expr)
    if expected is None:
        assert count == 0, f"scontrol rejected {expr!r}"
        with pytest.raises(ValueError, match="invalid hostlist"):
            expand(expr)
    else:
        assert expand(expr) == expected
        assert len(expected) == count


@given(expressions())
def test_generated_expressions_count(case: tuple[str, int]) -> None:
    expr, count = case
    if count == 0:
        with pytest.raises(ValueError, match="start > end"):
            expand(expr)
    else:
        assert len(expand(expr)) == count


@given(
    st.lists(st.integers(0, 30), min_size=1, max_size=4, unique=True),
    st.lists(st.integers(0, 30), min_size=1, max_size=4, unique=True),
)
def test_two_groups_are_row_major(left: list[int], right: list[int]) -> None:
    expr = f"p[{','.join(map(str, left))}]q[{','.join(map(str, right))}]"
    assert expand(expr) == [f"p{a}q{b}" for a, b in itertools.product(left, right)]
