"""Algorithms acting on models. Importing this package registers every method."""

from dlsched.solvers import exact  # noqa: F401
from dlsched.solvers import baselines_oasis, oasis, oasis_offline  # noqa: F401
