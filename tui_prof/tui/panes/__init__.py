"""The run screen's panes: each a :class:`tui_prof.tui.pane.Pane` that owns its
children, status line, keys and workers; data comes down from the screen (``set_view``,
``prepare``/``show``), requests go up as messages (tui_prof.tui.messages). The screen's
list of them is tui_prof.tui.registry.PANES."""
