"""The instance families as objects: how a ``"family"`` in a dlsched/1 file becomes a Python object and back.

The families and their modules are named in :data:`dlsched.registry.FAMILIES` (one line per
family; docs/architecture.md has the whole checklist); this module loads each family's format
module: ``parse(doc, source)`` (called after schema validation, for checks a schema cannot state)
and ``dump(instance)``; solutions likewise (``parse_solution``, ``dump_solution``).
``core_solutions`` says whether the generic layers (``exact``, ``lp-round``, ``core``,
``sample``), which return a core solution (a configuration per job of ``to_core()``), apply to the
family: either the core is the family's own solution form (``mcmdk``) or its instances translate
a core solution into the family's form with ``solution_from_core(choice)`` (``smd``), so that the
family's checker never needs model code.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from dlsched import registry


@dataclass(frozen=True)
class Family:
    name: str
    schema: str
    parse: Callable[[dict, str], Any]
    dump: Callable[[Any], dict]
    parse_solution: Callable[[Any, Any, str], Any]
    dump_solution: Callable[[Any], Any]
    core_solutions: bool = False


def _family(name: str, entry: registry.FamilyEntry) -> Family:
    module = importlib.import_module(entry.format)
    return Family(name, f"{name}.schema.json", module.parse, module.dump, module.parse_solution,
                  module.dump_solution, entry.core_solutions)


#: family name -> its format functions, for every family of the registry
FAMILIES: dict[str, Family] = {name: _family(name, entry) for name, entry in registry.FAMILIES.items()}
