"""Algorithms acting on models: the core layers (MODELS.md §1: exact MILP, LP rounding, core
sparsification, column sampling, hyperplane, tabu) and the family algorithms (SMD §2, OASiS §3,
heterogeneous placement §4). Nothing is imported here: the method registry
(:mod:`dlsched.solvers.registry`) loads a method's module when the method is named."""
