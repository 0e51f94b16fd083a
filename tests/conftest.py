import os
from pathlib import Path

import pytest
from hypothesis import settings

# CI runs the same examples every time (a red CI must be reproducible); locally hypothesis explores.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

from dlsched.data import data_dir

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def data() -> Path:
    """The reference data (shared/data); a missing folder is an error, not a skip."""
    return data_dir()


@pytest.fixture(scope="session")
def instances_dir() -> Path:
    return ROOT / "instances"
