"""Algorithms acting on models. Importing this package registers every method."""

from dlsched.solvers import exact  # noqa: F401
from dlsched.solvers import hetplace  # noqa: F401
