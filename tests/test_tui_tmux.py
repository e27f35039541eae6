"""Real-terminal smoke test: start ``tuiprof open <sample>`` in tmux, send keys, read the pane."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from tmux_harness import wait_for

SAMPLE = Path(__file__).resolve().parents[1] / "sample_traces" / "synthetic_sync_per_launch"
pytestmark = [
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install -y tmux)"),
    pytest.mark.skipif(not SAMPLE.exists(), reason=f"sample run missing: {SAMPLE}"),
]


def test_open_sample_in_tmux():
    session = f"tuiprof-{uuid.uuid4().hex[:8]}"
    cmd = f"{sys.executable} -m tui_prof.cli open --no-mouse {SAMPLE}"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", cmd], check=True)
    try:
        pane = wait_for(session, "sort total_ns")
        assert "synthetic_sync_per_launch" in pane and "Cijk_" in pane
        subprocess.run(["tmux", "send-keys", "-t", session, "2"], check=True)
        pane = wait_for(session, "view 0 ns")
        assert "host T" in pane and "GPU" in pane and "▚" in pane  # sync interleaved with launches
        subprocess.run(["tmux", "send-keys", "-t", session, "n"], check=True)
        pane = wait_for(session, "gap 1/")
        subprocess.run(["tmux", "send-keys", "-t", session, "1"], check=True)
        wait_for(session, "by name ·")
        time.sleep(0.3)
        subprocess.run(["tmux", "send-keys", "-t", session, "Enter"], check=True)
        pane = wait_for(session, "dispatches · Enter")
        assert "200 dispatches" in pane  # the top kernel (GEMM) runs once per iteration
        subprocess.run(["tmux", "send-keys", "-t", session, "Escape"], check=True)
        wait_for(session, "by name ·")
        time.sleep(0.3)  # Escape followed at once by q would read as alt+q
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True)
        end = time.monotonic() + 10
        while time.monotonic() < end:
            alive = subprocess.run(["tmux", "has-session", "-t", session], capture_output=True).returncode == 0
            if not alive:
                break
            time.sleep(0.2)
        assert not alive, "q did not quit the app"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
