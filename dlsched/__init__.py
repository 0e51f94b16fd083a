"""dlsched: optimisation models and algorithms for scheduling distributed deep-learning jobs.

    import dlsched
    inst = dlsched.load("instances/mcmdk-small.json")
    res = dlsched.solve(inst, method="exact", time_limit=10)
    assert dlsched.check(inst, res).feasible
    run = dlsched.simulate("dl2:60:1", None, "drf")

The package face is lazy (PEP 562): ``import dlsched`` loads no module until a name is used, and
then only what that name needs.
"""

from __future__ import annotations

import importlib

from dlsched.version import __version__

#: public name -> the module that defines it
_FACE = {
    "load": "dlsched.api", "save": "dlsched.api", "solve": "dlsched.api", "check": "dlsched.api",
    "methods": "dlsched.api", "simulate": "dlsched.api",
    "MCMDK": "dlsched.instance.core", "Reference": "dlsched.instance.core",
    "Result": "dlsched.result", "Status": "dlsched.result",
    "DlschedError": "dlsched.errors", "InputError": "dlsched.errors", "SolverError": "dlsched.errors",
}

__all__ = [*_FACE, "__version__"]

# The checker module shares its name with the function ``check``: loading a submodule sets the
# package's attribute of that name, which would hide the function for good. Loaded now (it imports
# only dlsched.errors) and its attribute dropped, ``dlsched.check`` is always the function.
importlib.import_module("dlsched.check")
del globals()["check"]


def __getattr__(name: str):
    module = _FACE.get(name)
    if module is None:
        raise AttributeError(f"module 'dlsched' has no attribute '{name}'")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
