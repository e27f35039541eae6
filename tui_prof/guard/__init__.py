"""The one guarded way of each hazardous operation, used by every layer that needs it.

* :mod:`tui_prof.guard.write`: every file and folder tuiprof writes (exports, the cache);
* :mod:`tui_prof.guard.jsonout`: every JSON text tuiprof emits (RFC 8259, escaped controls).

These modules import nothing of tuiprof, so the loaders (the cache) and the exporters share
them without breaking the layers. ``tests/test_guarded_io.py`` fails when a module of the
package writes a file, creates a folder or dumps JSON another way.
"""
