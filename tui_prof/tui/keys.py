"""Key names as the help screen and docs/user_guide.md print them, and the (where, keys,
action) rows of classes' BINDINGS: :func:`declared_in` finds the classes of a package that
declare keys, so a key added to any screen, pane or widget appears in the help."""

from __future__ import annotations

import importlib
import pkgutil

from textual.binding import Binding

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


def own_bindings(cls: type) -> list[Binding]:
    """The bindings ``cls`` declares itself (Textual merges a class's BINDINGS with its
    bases'; the help lists each under the class that declares it)."""
    return [b if isinstance(b, Binding) else Binding(*b) for b in cls.__dict__.get("BINDINGS", ())]


def declared_in(package: str) -> list[type]:
    """The classes defined in the modules of ``package`` (a package or one module) that
    declare bindings, in module then definition order."""
    root = importlib.import_module(package)
    names = [package]
    if hasattr(root, "__path__"):
        names += sorted(f"{package}.{m.name}" for m in pkgutil.iter_modules(root.__path__))
    out: list[type] = []
    for name in names:
        module = importlib.import_module(name)
        out += [c for c in vars(module).values() if isinstance(c, type) and c.__module__ == name and own_bindings(c)]
    return out


def app_sources(app: type) -> list[tuple[str, type]]:
    """("everywhere", class) for the app class and each of its tuiprof bases that declares keys."""
    return [("everywhere", c) for c in reversed(app.__mro__) if c.__module__.startswith("tui_prof.") and own_bindings(c)]


def binding_rows(sources) -> list[tuple[str, str, str]]:
    """(where, keys, action) for every binding each (where, class) in ``sources`` declares
    (a class listed twice: under its first place), then the command palette."""
    rows, seen = [], set()
    for where, cls in sources:
        if cls in seen:
            continue
        seen.add(cls)
        for binding in own_bindings(cls):
            rows.append((where, pretty_keys(binding.key), binding.description))
    rows.append(("everywhere", "ctrl+p", "Command palette (every action by name)"))
    return rows
