"""Exit statuses of the ``tuiprof`` command (README, "Exit status")."""

EXIT_OK = 0
EXIT_NOTHING_LOADED = 1  # nothing could be loaded from PATH
EXIT_USAGE = 2
EXIT_INTERNAL = 3  # an internal error, reported on one line
EXIT_REGRESSION = 4  # ``tuiprof diff --fail-on-regression`` found a regression
EXIT_DEGRADED = 5  # ``tuiprof check``: some figure of the run is degraded or unreliable
EXIT_INCONCLUSIVE = 6  # ``tuiprof diff --fail-on-regression``: a gated metric is unreliable on either side
EXIT_INTERRUPTED = 130
