"""Screens: the main tabs, the drill-downs (kernel → dispatches → dispatch; gap → host
calls) and the key help."""
