"""One name per concept: no two public classes of dlsched share a name (issue 23, "one of each")."""

import ast
from collections import defaultdict
from pathlib import Path

import dlsched

ROOT = Path(dlsched.__file__).parent


def public_classes() -> dict[str, list[str]]:
    """Every public top-level class name -> the modules that define it."""
    where = defaultdict(list)
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                where[node.name].append(str(path.relative_to(ROOT.parent)))
    return where


def test_no_two_public_classes_share_a_name():
    twice = {name: mods for name, mods in public_classes().items() if len(mods) > 1}
    assert not twice, twice
