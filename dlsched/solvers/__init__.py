"""Algorithms acting on models. Importing this package registers every method."""

from dlsched.solvers import exact  # noqa: F401
from dlsched.solvers import rounding  # noqa: F401
from dlsched.solvers import core  # noqa: F401
from dlsched.solvers import sampling  # noqa: F401
