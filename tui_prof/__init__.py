"""tuiprof: a terminal trace explorer for GPU profiler runs."""

__version__ = "0.1.0"
