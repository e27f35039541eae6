"""The Textual TUI (``tuiprof open``). Imports textual; the data layers never import this."""
