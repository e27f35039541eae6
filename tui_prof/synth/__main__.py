"""``python -m tui_prof.synth``: see :func:`tui_prof.synth.main`."""

import sys

from tui_prof.synth import main

sys.exit(main())
