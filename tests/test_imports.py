"""The house: the import graph of dlsched has no cycle and every module imports only from its own
floor and the floors below (docs/architecture.md "Floors"), over every package, ``__init__``
modules and imports inside functions included; ``import dlsched`` stays light."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

import dlsched

ROOT = Path(dlsched.__file__).parent

#: the floors, bottom first: a module may import its own floor's modules and every floor below,
#: except the rooms named in SIBLINGS (same floor, never each other)
FLOORS = [
    {"errors", "version", "data", "console", "registry", "arguments"},
    {"result", "provenance", "check"},
    {"perf"},
    {"instance"},
    {"models"},
    {"solvers", "sim"},
    {"policies"},
    {"rl"},
    {"export", "bench", "api", "testing"},
    {"cli", "cli_simulate", "__main__", ""},
]
SIBLINGS = [{"solvers", "sim"}]
FLOOR = {room: k for k, rooms in enumerate(FLOORS) for room in rooms}

#: the most of dlsched's modules ``import dlsched`` may load (issue 23: at most 20)
LIGHT_IMPORT = 20


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in ROOT.rglob("*.py")}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """dlsched modules ``path`` imports anywhere (module top or inside functions)."""
    this = module_name(path)
    pkg = this if path.name == "__init__.py" else this.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(pkg.split(".")[: len(pkg.split(".")) - node.level + 1] + ([base] if base else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                if sub in known:
                    out.add(sub)
                elif base in known:
                    out.add(base)
    return out - {this}


def graph() -> nx.DiGraph:
    mods = modules()
    g = nx.DiGraph()
    g.add_nodes_from(mods)
    for name, path in mods.items():
        g.add_edges_from((name, dep) for dep in imports_of(path, set(mods)))
    return g


def room(mod: str) -> str:
    """The top-level module or package under dlsched (``""``: the package face)."""
    parts = mod.split(".")[1:]
    return parts[0] if parts else ""


def test_every_module_has_a_floor():
    assert {room(m) for m in modules()} <= set(FLOOR), sorted({room(m) for m in modules()} - set(FLOOR))


def test_import_graph_has_no_cycle():
    cycles = list(nx.simple_cycles(graph()))
    assert not cycles, f"import cycles: {cycles[:5]}"


def upward(g: nx.DiGraph) -> list[tuple[str, str]]:
    """Edges to a higher floor, or between two sibling rooms of one floor."""
    return [(a, b) for a, b in g.edges if FLOOR[room(b)] > FLOOR[room(a)]
            or any({room(a), room(b)} == s for s in SIBLINGS)]


def test_nothing_imports_upwards():
    wrong = upward(graph())
    assert not wrong, f"imports above their floor: {wrong}"


#: optional or heavy dependencies (pyproject's extras): the only reason to import inside a function
OPTIONAL = {"torch", "gymnasium", "dask", "distributed", "pyomo", "cvxpy", "matplotlib", "ortools", "pyscipopt", "gurobipy", "numba"}


def top_imports(path: Path) -> set[str]:
    """Absolute names imported at ``path``'s module top (``from a.b import c`` gives ``a.b`` and ``a.b.c``)."""
    out = set()
    for n in ast.parse(path.read_text()).body:
        if isinstance(n, ast.Import):
            out |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            out |= {n.module} | {f"{n.module}.{a.name}" for a in n.names}
    return out


def needs_optional(mod: str, mods: dict[str, Path]) -> bool:
    """Whether importing ``mod`` imports an optional dependency (through module tops only)."""
    seen, todo = set(), [mod]
    while todo:
        m = todo.pop()
        if m in seen or m not in mods:
            continue
        seen.add(m)
        tops = top_imports(mods[m])
        if any(t.split(".")[0] in OPTIONAL for t in tops):
            return True
        todo += [t for t in tops if t in mods]
    return False


def function_level_imports(path: Path, known: set[str]) -> list[tuple[int, str]]:
    """(line, module) of each dlsched module ``path`` imports inside a function."""
    out = []
    for fn in ast.walk(ast.parse(path.read_text())):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for n in ast.walk(fn):
                if isinstance(n, ast.ImportFrom) and n.module and not n.level:
                    for a in n.names:
                        out += [(n.lineno, m) for m in (f"{n.module}.{a.name}", n.module) if m in known][:1]
                elif isinstance(n, ast.Import):
                    out += [(n.lineno, a.name) for a in n.names if a.name in known]
    return out


def test_imports_sit_at_module_top_unless_they_need_an_optional_dependency():
    """docs/architecture.md: a dlsched module imported inside a function is one that pulls in an
    optional dependency (torch, numba, ...), so that the module importing it loads without it."""
    mods = modules()
    wrong = sorted({f"{module_name(p)}:{line} {m}" for p in mods.values() if p.name != "__init__.py" or p.parent != ROOT
                    for line, m in function_level_imports(p, set(mods)) if not needs_optional(m, mods)})
    assert not wrong, f"function-level imports of dlsched modules with no optional dependency: {wrong}"


def test_the_face_imports_nothing_at_module_top():
    """``dlsched/__init__.py`` loads its names when used (PEP 562), so its top imports only the version."""
    tree = ast.parse((ROOT / "__init__.py").read_text())
    tops = {a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names}
    tops |= {n.module for n in tree.body if isinstance(n, ast.ImportFrom)}
    assert tops <= {"__future__", "importlib", "dlsched.version"}, tops


def test_import_dlsched_is_light():
    code = "import sys, dlsched; print(sum(1 for m in sys.modules if m == 'dlsched' or m.startswith('dlsched.')))"
    n = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert n <= LIGHT_IMPORT


@pytest.mark.parametrize("name", sorted(dlsched._FACE))
def test_the_face_names_load(name):
    assert getattr(dlsched, name) is not None


def test_the_checks_see_edges():
    """The graph and the floor test find what they must: an edge that exists, and an upward one made up."""
    g = graph()
    assert g.has_edge("dlsched.models.oasis", "dlsched.instance.oasis")
    assert g.has_edge("dlsched.instance.jsonio", "dlsched.instance.families")
    g.add_edge("dlsched.solvers.hetplace", "dlsched.sim.metrics")
    g.add_edge("dlsched.sim.engine", "dlsched.policies.drf")
    assert set(upward(g)) == {("dlsched.solvers.hetplace", "dlsched.sim.metrics"), ("dlsched.sim.engine", "dlsched.policies.drf")}


def test_check_stays_the_function_whatever_is_imported_first():
    code = ("import dlsched.check, dlsched.api\nfrom dlsched.check import check_smd\nimport dlsched\n"
            "assert callable(dlsched.check) and dlsched.check is dlsched.api.check, dlsched.check")
    subprocess.run([sys.executable, "-c", code], check=True)
