"""The main screen's panes: each a widget that owns its children, status line, keys and
workers; data comes down from the screen (methods), requests go up as messages."""

COMPUTING = "computing…"
