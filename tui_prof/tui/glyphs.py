"""Glyphs and colours for limited terminals. Glyphs for terminals without UTF-8: ``tuiprof open --ascii`` (TUIPROF_ASCII=1) or a
non-UTF-8 locale (LANG=C, LC_ALL=POSIX, ...) draws the timeline and its legend with
ASCII characters, each keeping the meaning of the block glyph it replaces."""

from __future__ import annotations

import os
import unicodedata

from rich.cells import get_character_cell_size

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

# Everything else a widget may draw (Textual's tab underline, borders, scrollbars, footer,
# toasts; tuiprof's separators, units and sort arrows), one ASCII character each, so that
# the text keeps its width in cells: see :func:`ascii_cells`
CELL_ASCII = {
    **{k: v for k, v in ASCII.items() if len(v) == 1},
    **dict.fromkeys("─━═╴╶╸╺╼╾┄┅┈┉╌╍", "-"),
    **dict.fromkeys("│┃║╵╷╹╻▏▎▍▌▋▊▉▐▕┆┇┊┋╎╏", "|"),
    **dict.fromkeys("┌┐└┘├┤┬┴┼╭╮╯╰┏┓┗┛┣┫┳┻╋╔╗╚╝╠╣╦╩╬", "+"),
    "▀": "^",
    "⟷": "=",
    "→": ">",
    "←": "<",
    "↑": "^",
    "↓": "v",
    "▼": "v",
    "▲": "^",
    "▸": ">",
    "▶": ">",
    "◀": "<",
    "●": "*",
    "•": "*",
    "µ": "u",
    "±": "~",
    "—": "-",
    "≥": ">",
    "≤": "<",
    "≠": "!",
    "✓": "v",
    "✔": "v",
    "✗": "x",
    "✘": "x",
    "⏎": "<",
    "⌫": "<",
    "\u00a0": " ",
}


class _CellTable(dict):
    """``str.translate`` table of :func:`ascii_cells`: each character's ASCII text, found
    once per character."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if code < 128:
            value = char
        else:
            width = get_character_cell_size(char)
            value = CELL_ASCII.get(char, "")
            if not value and width:
                decomposed = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode()  # é -> e
                value = decomposed if len(decomposed) == width and decomposed.isprintable() else "?" * width
            elif len(value) != width:  # a wide character with a one-cell stand-in
                value = (value * width)[:width]
        self[code] = value
        return value


_CELLS = _CellTable()


def ascii_cells(text: str) -> str:
    """``text`` in ASCII, each character replaced by ASCII text of its width in cells (a
    wide character by two, a zero-width one by nothing), so a screen's layout stays as it
    was drawn: what an ASCII terminal (``--ascii``, a non-UTF-8 locale) is sent. Escape
    sequences are ASCII and pass unchanged."""
    return text if text.isascii() else text.translate(_CELLS)


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
