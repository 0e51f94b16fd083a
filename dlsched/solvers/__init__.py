"""Algorithms acting on models. Importing this package registers every method."""

# core layers (MODELS.md §1): exact MILP, LP rounding, core sparsification, column sampling
from dlsched.solvers import core, exact, hyperplane, rounding, sampling, tabu  # noqa: F401

# family methods: SMD (§2), OASiS (§3), heterogeneous placement (§4)
from dlsched.solvers import hetplace, oasis, oasis_offline, oasis_online, smd, smd_online, smd_time_indexed  # noqa: F401
