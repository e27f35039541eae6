"""Textual-free view models: what the panes and screens show, computed from a loaded run."""
