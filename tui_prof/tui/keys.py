"""Key names as the help screen and docs/user_guide.md print them, and the (where, keys,
action) rows of a list of classes' BINDINGS (the app passes its own classes)."""

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


def binding_rows(sources) -> list[tuple[str, str, str]]:
    """(where, keys, action) for every binding of each (where, class) in ``sources``, then
    the command palette."""
    rows = []
    for where, cls in sources:
        for binding in cls.BINDINGS:
            rows.append((where, pretty_keys(binding.key), binding.description))
    rows.append(("everywhere", "ctrl+p", "Command palette (every action by name)"))
    return rows
