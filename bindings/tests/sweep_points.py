"""Sweep targets for the sweep tests: cheap points without ns-3, one of which can crash its
worker outright, and one that writes a marker so a test can see which points ran."""

import os
import signal
import time


def square(x, crash_at=None, marker_dir=None, pause=0.0):
    """{"y": x * x}; at x == crash_at the worker dies of SIGSEGV, as a crash in C++ would."""
    if marker_dir:
        with open(os.path.join(marker_dir, f"ran-{x}-{os.getpid()}"), "w"):
            pass
    if crash_at is not None and x == crash_at:
        os.kill(os.getpid(), signal.SIGSEGV)
    if x == "raise":
        raise ValueError("this point's parameters are wrong")
    time.sleep(pause)
    return {"y": x * x}
