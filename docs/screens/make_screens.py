"""Regenerate the SVG screenshots of docs/user_guide.md from the app itself.

Run: python docs/screens/make_screens.py   (writes docs/screens/*.svg, prints the key table)
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tui_prof.tui.app import TuiProfApp, key_rows

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests"))  # the synthetic runs are test fixtures
from synthetic import synthetic_runset  # noqa: E402

SHOTS = {
    "hotspots": ("per_launch", []),
    "timeline_sync_per_launch": ("per_launch", ["2"]),
    "timeline_sync_once": ("end", ["2"]),
    "timeline_gap": ("per_launch", ["2", "n", "n"]),
    "dispatch_detail": ("per_launch", ["enter", "enter"]),
    "hardware": ("per_launch", ["3"]),
    "help": ("per_launch", ["question_mark"]),
    "findings": ("per_launch", ["4"]),
    "finding_evidence_sync": ("per_launch", ["4", "enter"]),
    "counters": ("per_launch+counters", ["5"]),
    "counters_formulas": ("per_launch+counters", ["5", "x"]),
    "counters_missing": ("per_launch", ["5"]),
}


async def shoot(name: str, mode: str, keys: list[str], size=(120, 32)) -> None:
    sync, _, extra = mode.partition("+")
    runset, _ = synthetic_runset(sync, iterations=60, counters=extra == "counters")
    app = TuiProfApp(runset)
    async with app.run_test(size=size) as pilot:
        for _ in range(500):  # loaded, and every lazy pane computed and shown
            await app.workers.wait_for_complete()
            await pilot.pause()
            if app.main.complete:
                break
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        app.save_screenshot(f"{name}.svg", str(HERE))


def main() -> None:
    for name, (mode, keys) in SHOTS.items():
        asyncio.run(shoot(name, mode, keys))
        print(f"wrote docs/screens/{name}.svg")
    print("\n| where | keys | action |\n|---|---|---|")
    for where, keys, action in key_rows():
        print(f"| {where} | `{keys}` | {action} |")


if __name__ == "__main__":
    main()
