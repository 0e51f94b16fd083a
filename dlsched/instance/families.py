"""The one table of instance families: how a ``"family"`` in a dlsched/1 file becomes a Python object and back.

A family supplies its JSON Schema file (in ``dlsched/instance/schema/``), ``parse(doc, source)``
(called after schema validation, for checks a schema cannot state) and ``dump(instance)``;
solutions likewise (``parse_solution``, ``dump_solution``). ``core_solutions`` says whether the
generic layers (``exact``, ``lp-round``, ``core``, ``sample``), which return a core solution (a
configuration per job of ``to_core()``), apply to the family: either the core is the family's
own solution form (``mcmdk``) or its instances translate a core solution into the family's form
with ``solution_from_core(choice)`` (``smd``), so that the family's checker never needs model code.

Adding a family is one line in :data:`FAMILIES` (docs/architecture.md has the whole checklist);
nothing registers itself by being imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from dlsched.instance import mcmdk_json, oasis_json, placement_json, smd_json


@dataclass(frozen=True)
class Family:
    name: str
    schema: str
    parse: Callable[[dict, str], Any]
    dump: Callable[[Any], dict]
    parse_solution: Callable[[Any, Any, str], Any]
    dump_solution: Callable[[Any], Any]
    core_solutions: bool = False


def _family(name: str, module, core_solutions: bool = False) -> Family:
    return Family(name, f"{name}.schema.json", module.parse, module.dump, module.parse_solution,
                  module.dump_solution, core_solutions)


FAMILIES: dict[str, Family] = {f.name: f for f in (
    _family("mcmdk", mcmdk_json, core_solutions=True),
    _family("smd", smd_json, core_solutions=True),
    _family("oasis", oasis_json),
    _family("placement", placement_json),
)}
