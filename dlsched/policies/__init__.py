"""Every scheduling policy of the simulator, one module per policy or per close group, on the floor
above the mechanism (:mod:`dlsched.sim`) and the algorithms (:mod:`dlsched.solvers`).

The names are in :data:`dlsched.registry.POLICIES`; ``dlsched.registry.make_policy(name)`` loads
only the module a policy lives in.
"""
