"""The key table shown by ``?`` and written into docs/user_guide.md, read from BINDINGS."""

from __future__ import annotations

_KEY_NAMES = {
    "plus": "+",
    "minus": "-",
    "equals_sign": "=",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "question_mark": "?",
    "slash": "/",
    "escape": "Esc",
    "enter": "Enter",
    "pagedown": "PgDn",
    "pageup": "PgUp",
}


def pretty_keys(keys: str) -> str:
    return " ".join(_KEY_NAMES.get(k, k) for k in keys.split(","))


def key_rows() -> list[tuple[str, str, str]]:
    """(where, keys, action) for every binding of the app, its screens and widgets."""
    from tui_prof.tui.app import FindingsTable, MainScreen, TuiProfApp
    from tui_prof.tui.panes import CountersPane
    from tui_prof.tui.screens import BackScreen
    from tui_prof.tui.widgets.table import TableView
    from tui_prof.tui.widgets.timeline import Timeline

    rows = []
    for where, cls in (
        ("everywhere", TuiProfApp),
        ("main screen", MainScreen),
        ("tables", TableView),
        ("timeline", Timeline),
        ("findings", FindingsTable),
        ("counters", CountersPane),
        ("drill-down", BackScreen),
    ):
        for binding in cls.BINDINGS:
            rows.append((where, pretty_keys(binding.key), binding.description))
    rows.append(("everywhere", "ctrl+p", "Command palette (every action by name)"))
    return rows
