"""Analysis: every number the user sees, as pure functions over the run model.

Nothing here imports textual or rich; the TUI and the CLI reports render these results.
"""
