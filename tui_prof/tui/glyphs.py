"""Glyphs and colours for limited terminals. Glyphs for terminals without UTF-8: ``tuiprof open --ascii`` (TUIPROF_ASCII=1) or a
non-UTF-8 locale (LANG=C, LC_ALL=POSIX, ...) draws the timeline and its legend with
ASCII characters, each keeping the meaning of the block glyph it replaces."""

from __future__ import annotations

import os

# block glyph -> ASCII: density rises , : + * #; idle . ; sync = ; sync+launch % ; communication ~ ; the
# rest are frame characters
ASCII = {
    "▁": ",",
    "▂": ",",
    "▃": ":",
    "▄": ":",
    "▅": "+",
    "▆": "+",
    "▇": "*",
    "█": "#",
    "░": ".",
    "▓": "=",
    "▚": "%",
    "≈": "~",
    "│": "|",
    "▔": "^",
    "▾": "v",
    "…": "~",
    "⟷": "<>",
    "–": "-",
    "×": "x",
    "⚠": "!",
    "→": "->",
    "·": "-",
}
_TABLE = str.maketrans(ASCII)


def utf8_locale(environ=os.environ) -> bool:
    """False when the locale's first set variable (LC_ALL, LC_CTYPE, LANG) names no UTF-8
    encoding ("C", "POSIX", "en_US.ISO-8859-1"); True when none is set (Python then runs
    in UTF-8 mode)."""
    for var in ("LC_ALL", "LC_CTYPE", "LANG"):
        value = environ.get(var)
        if value:
            return "utf-8" in value.lower() or "utf8" in value.lower()
    return True


def use_ascii(environ=os.environ) -> bool:
    """ASCII glyphs: TUIPROF_ASCII=1 (``--ascii``) or a non-UTF-8 locale."""
    return environ.get("TUIPROF_ASCII", "") not in ("", "0") or not utf8_locale(environ)


def to_ascii(text: str) -> str:
    return text.translate(_TABLE)


# TERM values of 16-colour terminals
SIXTEEN_COLOUR_TERMS = ("linux", "screen", "ansi", "vt100", "vt102", "vt220", "cons25", "rxvt")


def sixteen_colours(environ=os.environ) -> bool:
    """The terminal has 16 colours (TEXTUAL_COLOR_SYSTEM=standard, or a 16-colour TERM such
    as linux or screen without COLORTERM): the app then sends ANSI colours as they are
    (``App.ansi_color``), so the terminal's own palette draws them; converted to RGB and
    back they land on other colours (partly busy drawn bright red, idle magenta like sync)."""
    system = environ.get("TEXTUAL_COLOR_SYSTEM", "auto")
    if system != "auto":
        return system == "standard"
    return environ.get("TERM", "") in SIXTEEN_COLOUR_TERMS and not environ.get("COLORTERM")


def plain_ansi(environ=os.environ) -> bool:
    """Run the app with ``ansi_color=True``: under NO_COLOR (Textual then strips every
    colour instead of drawing grey levels, in which ▓ on its background is nearly
    invisible) and on a 16-colour terminal (:func:`sixteen_colours`)."""
    return bool(environ.get("NO_COLOR")) or sixteen_colours(environ)
