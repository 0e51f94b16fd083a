"""Algorithms acting on models. Importing this package registers every method."""

from dlsched.solvers import exact  # noqa: F401
from dlsched.solvers import rounding  # noqa: F401
from dlsched.solvers import core  # noqa: F401
from dlsched.solvers import sampling  # noqa: F401
from dlsched.solvers import baselines_smd, smd, smd_time_indexed  # noqa: F401  (family smd, MODELS.md §2)
from dlsched.solvers import baselines_oasis, oasis, oasis_offline  # noqa: F401
