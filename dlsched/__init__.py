"""dlsched: optimisation models and algorithms for scheduling distributed deep-learning jobs.

    import dlsched
    inst = dlsched.load("instances/mcmdk-small.json")
    res = dlsched.solve(inst, method="exact", time_limit=10)
    assert dlsched.check(inst, res).feasible
"""

from dlsched.api import check, load, methods, save, solve
from dlsched.errors import DlschedError, InputError, SolverError
from dlsched.instance import MCMDK, Reference
from dlsched.result import Result, Status

__version__ = "0.1.0"
__all__ = ["load", "save", "solve", "check", "methods", "MCMDK", "Reference", "Result", "Status",
           "DlschedError", "InputError", "SolverError", "__version__"]
