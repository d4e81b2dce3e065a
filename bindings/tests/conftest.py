"""Shared fixtures: the `cnuas` command of this build, and tiny fabrics that run in well under a
second, so that the Python suite stays small (ctest runs it on every build)."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)  # sweep_points.py, which the sweep tests' workers import


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("CNUAS_CLI")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("CNUAS_CLI (the cnuas command of this build) is not set; ctest sets it")
    return path
