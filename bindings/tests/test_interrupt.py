"""Ctrl-C during a run: the simulation runs with the GIL released, so Python's own handler
cannot act; the run stops cleanly instead, its files are complete, and KeyboardInterrupt is
raised as Ctrl-C raises it anywhere else in Python."""

import os
import signal
import subprocess
import sys
import time

SCRIPT = r"""
import sys, cnuas
out = sys.argv[1]
print("starting", flush=True)
try:
    # 1 s of WebSearch arrivals on 16 hosts: minutes of wall time if let be.
    cnuas.scenario("roce-fct", duration="1s", limit="2s", out=out)
    print("finished without interruption", flush=True)
except KeyboardInterrupt as e:
    print("KeyboardInterrupt:", e, flush=True)
print("python still runs", flush=True)
"""


def test_ctrl_c_raises_keyboard_interrupt_after_a_clean_stop(tmp_path):
    out = tmp_path / "run"
    child = subprocess.Popen([sys.executable, "-c", SCRIPT, str(out)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "starting"
    # The scenario's set-up takes milliseconds; the simulation then runs for minutes.
    time.sleep(2)
    assert child.poll() is None, child.communicate()
    child.send_signal(signal.SIGINT)
    stdout, stderr = child.communicate(timeout=120)
    assert child.returncode == 0, stderr
    assert "KeyboardInterrupt: Ctrl-C at " in stdout and "partial results" in stdout, stdout
    assert "python still runs" in stdout
    # The FCT file the run was writing is complete: a header and whole lines.
    with open(out / "roce-fct.csv") as f:
        text = f.read()
    assert text.startswith("id,src,dst,") and text.endswith("\n"), text[-200:]
