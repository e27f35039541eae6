"""Text for the screen from anything that may hold a trace string: Rich ``Text`` built
from :func:`tui_prof.render.safe.safe_text`, so a name is never parsed as markup (a
``Text`` is not) and never sends a control sequence to the terminal (``safe_text`` shows
it visibly)."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from tui_prof.render.safe import safe_text


def plain(value: object = "", style: str = "", **kwargs: Any) -> Text:
    """``Text`` of ``value`` with each line through ``safe_text`` (a line break stays a
    line break inside the widget: several commands in a finding's fix read one per line)."""
    text = value if isinstance(value, str) else str(value)
    return Text("\n".join(safe_text(line) for line in text.split("\n")), style, **kwargs)
