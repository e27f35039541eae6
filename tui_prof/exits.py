"""Exit statuses of the ``tuiprof`` command (README, "Exit status")."""

EXIT_OK = 0
EXIT_NOTHING_LOADED = 1  # nothing could be loaded from PATH
EXIT_USAGE = 2
EXIT_INTERNAL = 3  # an internal error, reported on one line
EXIT_REGRESSION = 4  # ``tuiprof diff --fail-on-regression`` found a regression
EXIT_INTERRUPTED = 130
