"""One registry of names (dlsched/registry.py): its tables agree with the modules and decorators
they name, and no other module of dlsched keeps a table of names (adding a family, a method, a
policy, a suite, a generator or a task changes this one file)."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

import dlsched
from dlsched import registry
from dlsched.instance.families import FAMILIES
from dlsched.solvers import registry as methods

ROOT = Path(dlsched.__file__).parent
checker = importlib.import_module("dlsched.check")


@pytest.mark.parametrize("family", sorted(registry.FAMILIES))
def test_each_family_line_names_its_modules(family):
    entry = registry.FAMILIES[family]
    fmt = importlib.import_module(entry.format)
    assert all(callable(getattr(fmt, f, None)) for f in ("parse", "dump", "parse_solution", "dump_solution"))
    assert (ROOT / "instance" / "schema" / f"{family}.schema.json").is_file()
    fn = checker.checker(family)
    assert fn is getattr(checker, entry.checker)
    assert list(inspect.signature(fn).parameters)[2] == "claimed_objective"
    assert entry.example_method in dlsched.methods(family)
    assert FAMILIES[family].core_solutions == entry.core_solutions
    assert entry.core_solutions == ("exact" in dlsched.methods(family) and "lp-round" in dlsched.methods(family))


def test_every_checker_is_a_family_line():
    own = {n for n, f in vars(checker).items() if n.startswith("check_") and inspect.isfunction(f)
           and f.__module__ == "dlsched.check"}
    assert own == {e.checker for e in registry.FAMILIES.values()}


def test_methods_agree_with_their_decorators():
    """Each name of METHODS is registered by exactly the modules listed for it, and nothing else is."""
    for name, modules in registry.METHODS.items():
        for module in modules:
            mod = importlib.import_module(module)
            defined = {m.fn.__module__ for (_, n), m in methods._METHODS.items() if n == name}
            assert mod.__name__ in defined, (name, module)
    registered = {(n, m.fn.__module__) for (_, n), m in methods._METHODS.items()}
    assert registered == {(n, mod) for n, mods in registry.METHODS.items() for mod in mods}


def test_policies_and_suites_load():
    for name, target in registry.POLICIES.items():
        if name == "dl2":
            pytest.importorskip("torch")
        cls = registry.load_target(target, name)
        assert cls.name == name, (name, cls.name)
    from dlsched.bench import MAINS as mains      # filled by @register_suite
    from dlsched.bench.suite import summarised

    for name, module in registry.SUITES.items():
        importlib.import_module(module)
        assert name in mains and mains[name].__module__ == module, name
    # a suite file's ``family`` names a suite whose module summarises it
    assert summarised() == ["smd", "oasis", "hetplace", "dl2", "sim", "timelimits"]


def test_generators_and_tasks_load():
    for table in (registry.GENERATORS, registry.TRACE_GENERATORS, registry.CLUSTER_GENERATORS, registry.TASKS):
        for name, target in table.items():
            assert callable(registry.load_target(target, name)), name


TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")        # "module:attr"

#: the one table of another kind: the package face's public names (PEP 562), in dlsched/__init__.py
FACE = "dlsched/__init__.py"


def _name_tables(path: Path):
    """Line numbers of the dict literals of ``path`` that are tables of names: values "module:attr"
    strings, ("dlsched.module", "function") pairs or all "dlsched.…" module names, or keys that
    are family names."""
    families = set(registry.FAMILIES)
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Dict) or not node.keys:
            continue
        keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        strings = [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
        pairs = [v.elts[0].value for v in node.values if isinstance(v, ast.Tuple) and v.elts
                 and isinstance(v.elts[0], ast.Constant) and isinstance(v.elts[0].value, str)]
        if (any(TARGET.match(x) for x in strings) or any(x.startswith("dlsched.") for x in pairs)
                or (len(strings) == len(node.values) and all(x.startswith("dlsched.") for x in strings))
                or len(families & keys) >= 2):
            yield node.lineno


def test_there_is_one_registry_of_names():
    files = [*ROOT.rglob("*.py"), *(ROOT.parent / "benchmarks").glob("*.py")]
    found = {f"{p.relative_to(ROOT.parent)}:{line}" for p in files
             if p != ROOT / "registry.py" and str(p.relative_to(ROOT.parent)) != FACE for line in _name_tables(p)}
    assert not found, f"tables of names outside dlsched/registry.py: {sorted(found)}"
    own = list(_name_tables(ROOT / "registry.py"))
    assert len(own) >= 6          # the scan finds the registry's own tables (FAMILIES, METHODS, POLICIES, ...)
