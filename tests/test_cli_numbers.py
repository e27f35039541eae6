"""The command line's numbers go through one bounded parser (cli.parse_number): each option's
parser accepts exactly the values in its range and names the value it refuses."""

from __future__ import annotations

import argparse
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tui_prof.cli import INT64_MAX, parse_count, parse_factor, parse_number, parse_percent, parse_port, parse_seconds, parse_sessions

# (parser, whole number?, lowest accepted, highest accepted, lowest excluded?)
RANGES = [
    (parse_percent, False, 0.0, math.inf, False),
    (parse_seconds, False, 0.0, math.inf, False),
    (parse_factor, False, 1.0, math.inf, True),
    (parse_count, True, 0, INT64_MAX, False),
    (parse_port, True, 0, 65535, False),
    (parse_sessions, True, 1, 1000, False),
]


def _accepts(parser, text: str):
    try:
        return True, parser(text)
    except argparse.ArgumentTypeError as err:
        assert repr(text) in str(err)  # the message names the value
        return False, None


@pytest.mark.parametrize("parser,whole,low,high,open_low", RANGES, ids=[r[0].__name__ for r in RANGES])
@given(value=st.one_of(st.integers(-(10**20), 10**20), st.floats(allow_nan=True, allow_infinity=True)))
def test_each_parser_accepts_exactly_its_range(parser, whole, low, high, open_low, value):
    text = repr(value) if isinstance(value, float) else str(value)
    ok, parsed = _accepts(parser, text)
    number = float(value)
    if whole:
        expected = isinstance(value, int) and low <= value <= high
    else:
        expected = math.isfinite(number) and (number > low if open_low else number >= low) and number <= high
    assert ok == expected, (parser.__name__, text)
    if ok:
        assert parsed == (int(text) if whole else float(text)) and isinstance(parsed, int if whole else float)


@pytest.mark.parametrize(
    "text,kwargs,message",
    [
        ("x", {}, "not a number: 'x'"),
        ("1.5", {"whole": True}, "not a whole number: '1.5'"),
        ("nan", {}, "not a finite number: 'nan'"),
        ("-1", {"note": " (n)"}, "must not be negative: '-1' (n)"),
        ("0", {"whole": True, "at_least": 1}, "must be at least 1: '0'"),
        ("1", {"above": 1}, "must be above 1: '1'"),
        ("7", {"whole": True, "at_most": 6}, "too large: '7'"),
        ("abc", {"what": "port number"}, "not a port number: 'abc'"),
    ],
)
def test_messages(text, kwargs, message):
    with pytest.raises(argparse.ArgumentTypeError, match=None) as err:
        parse_number(text, **kwargs)
    assert str(err.value) == message
