"""The one sanitiser for strings that came from a trace (kernel, marker, file, host names,
log lines) on their way to a human: terminal text, Markdown, stderr, the TUI.

A profile is untrusted input. :func:`safe_text` shows every character that a terminal
would act on instead of print — C0 and C1 controls, DEL, bidi overrides, zero-width and
other format characters, line separators, lone surrogates — as visible text (``\\x1b``,
``⟨U+202E⟩``), so a name can neither send escape sequences (window title, clipboard,
hyperlinks, screen clears) nor reorder or hide what the user reads. Printable text,
including non-ASCII names, is left as it is. The JSON output keeps the exact string
(JSON escapes it).

Markdown needs more: :func:`md_text` backslash-escapes every character that can start a Markdown or HTML
construct (so no link, image, emphasis, HTML or table cell can start inside a name) and
:func:`md_code` puts a name in a code span that its own backticks cannot close.

Rich/Textual markup is the TUI's concern: it shows names as ``Text``/``Content`` objects
(never parsed as markup) or through :func:`rich.markup.escape`.
"""

from __future__ import annotations

import re
import unicodedata

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# characters that start inline Markdown/HTML anywhere in a line: links and images ([ ] !),
# emphasis (* _ ~), code (`), HTML and <autolinks> (< >), entities (&), table cells (|)
_MD_SPECIAL = re.compile("([" + re.escape("\\`*_[]<>|!~&") + "])")
# what starts a block only at the beginning of a line: headings, lists, quotes, rules
_MD_LINE_START = re.compile(r"^(\s*(?:\d+)?)([#+\-=>.)])")
_BACKTICKS = re.compile("`+")


def _visible(ch: str) -> str:
    if ch.isprintable() or ch == " ":
        return ch
    code = ord(ch)
    if ch in _NAMED:
        return _NAMED[ch]
    if code < 0x20 or 0x7F <= code <= 0x9F:  # C0, DEL, C1 (0x9b is a one-byte CSI)
        return f"\\x{code:02x}"
    if unicodedata.category(ch) == "Zs":  # non-breaking and other spaces: harmless, keep
        return ch
    return f"⟨U+{code:04X}⟩"  # bidi controls, zero-width and format characters, separators, surrogates, unassigned


def safe_text(value: object) -> str:
    """``value`` as text with every non-printing character shown visibly (see module doc)."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():
        return text
    return "".join(_visible(ch) for ch in text)


def md_text(value: object, line_start: bool = True) -> str:
    """``value`` for Markdown prose or a table cell: sanitised, and every character that
    could start a Markdown or HTML construct backslash-escaped (renders as itself);
    ``line_start``: the text may begin a line, so a leading heading, list or quote
    marker is escaped too (table cells never begin a line)."""
    text = _MD_SPECIAL.sub(r"\\\1", safe_text(value))
    return _MD_LINE_START.sub(r"\1\\\2", text) if line_start else text


def md_code(value: object, in_table: bool = False) -> str:
    """``value`` as an inline code span that its own backticks cannot close (the fence is
    one backtick longer than its longest run); ``in_table``: ``|`` escaped as GFM tables
    require even inside code."""
    text = safe_text(value)
    longest = max((len(m.group(0)) for m in _BACKTICKS.finditer(text)), default=0)
    fence = "`" * (longest + 1)
    if text.startswith("`") or text.endswith("`") or not text.strip():
        text = f" {text} "
    if in_table:
        text = text.replace("|", "\\|")
    return f"{fence}{text}{fence}"


def md_fence(lines: list[str], lang: str = "") -> list[str]:
    """``lines`` as a fenced code block whose fence no line can close."""
    safe = [safe_text(line) for line in lines]
    longest = max((len(m.group(0)) for line in safe for m in _BACKTICKS.finditer(line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + lang, *safe, fence]
