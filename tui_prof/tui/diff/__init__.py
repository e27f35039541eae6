"""``tuiprof diff A B --tui``: the diff app and its screens."""
