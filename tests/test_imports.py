"""The house: the import graph of dlsched has no cycle and respects the layers (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

import dlsched

ROOT = Path(dlsched.__file__).parent

# a layer may import only from the layers listed for it (and from itself)
LAYERS = {
    "instance": {"errors", "data", "perf", "instance"},
    "perf": {"errors", "data", "perf"},
    "models": {"errors", "data", "perf", "instance", "models"},
    "check": {"errors", "check"},
}


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


def test_import_graph_has_no_cycle():
    cycles = list(nx.simple_cycles(graph()))
    assert not cycles, f"import cycles: {cycles[:5]}"


def _layer(mod: str) -> str:
    parts = mod.split(".")[1:]
    return parts[0] if parts else ""


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_layers(layer):
    g = graph()
    wrong = [(a, b) for a, b in g.edges if _layer(a) == layer and _layer(b) not in LAYERS[layer]]
    assert not wrong, f"{layer} imports above itself: {wrong}"


def test_graph_sees_edges():
    g = graph()
    assert g.has_edge("dlsched.models.oasis", "dlsched.instance.oasis")
    assert g.has_edge("dlsched.instance.jsonio", "dlsched.instance.families")
