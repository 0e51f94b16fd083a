"""OR-Library readers turned into core MCMDK instances (MODELS.md §1).

* multidimensional knapsack, ``mknap1`` / ``mknapcb*`` (a problem count, then per problem
  ``n m optimum``, profits, an m x n matrix, capacities) and the one-problem files of
  ``sac94/`` and GK (header ``n m optimum``, no count): one configuration per item;
* generalized assignment, single-instance layout (``m n``, m rows of costs c_ij, m rows of
  resource use a_ij, m capacities): one configuration per (job j, agent i), every job assigned
  exactly once, max or min sense.

Errors name the file, the token's line and what was expected.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from dlsched.errors import InputError
from dlsched.instance.core import MCMDK, Reference
from dlsched.instance.files import read_text
from dlsched.instance.jsonio import MAGNITUDE_RULE, MAX_MAGNITUDE

_TOKEN = re.compile(r"\S+")
#: a plain decimal number in ASCII (no '1_000', no 'inf'/'nan', no other scripts' digits)
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)


class Tokens:
    """Whitespace-separated numbers of a file, with their line numbers for error messages."""

    def __init__(self, path: str | Path):
        self.source = str(path)
        text = read_text(path)
        toks, lines = [], []
        for ln, line in enumerate(text.splitlines(), 1):
            for t in _TOKEN.findall(line):
                toks.append(t)
                lines.append(ln)
        self.toks, self.lines, self.pos = toks, lines, 0
        self.first_line = next((_TOKEN.findall(l) for l in text.splitlines() if l.strip()), [])

    def where(self) -> str:
        if self.pos < len(self.toks):
            return f"line {self.lines[self.pos]}, token {self.pos + 1}"
        return f"token {self.pos + 1} (after line {self.lines[-1] if self.lines else 0})"

    def take(self, count: int, what: str, integer: bool = False, minimum: float | None = None) -> np.ndarray:
        if self.pos + count > len(self.toks):
            raise InputError(self.source, self.where(), f"{count} numbers for {what}",
                             f"end of file after {len(self.toks) - self.pos}")
        chunk = self.toks[self.pos:self.pos + count]
        arr = numbers(chunk, self._at, what, self.source)
        if integer and not np.all(arr == np.round(arr)):
            bad = int(np.flatnonzero(arr != np.round(arr))[0])
            raise InputError(self.source, self._at(bad), f"an integer for {what}", chunk[bad])
        if minimum is not None and np.any(arr < minimum):
            bad = int(np.flatnonzero(arr < minimum)[0])
            raise InputError(self.source, self._at(bad), f"numbers >= {minimum:g} for {what}", chunk[bad])
        self.pos += count
        return arr

    def _at(self, offset: int) -> str:
        """``where`` of the token ``offset`` places ahead (for an error inside a chunk)."""
        self.pos += offset
        try:
            return self.where()
        finally:
            self.pos -= offset

    def one(self, what: str, integer: bool = False, minimum: float | None = None) -> float:
        return float(self.take(1, what, integer, minimum)[0])


def numbers(tokens: list[str], where, what: str, source: str | None = None) -> np.ndarray:
    """Tokens as float64, each a plain ASCII decimal of magnitude below 10^15 (the rule of
    dlsched/1 files, ``jsonio.MAX_MAGNITUDE``); ``where(i)`` names the place of token i."""
    bad = next((i for i, t in enumerate(tokens) if not _NUMBER.fullmatch(t)), None)
    if bad is None:
        arr = np.array(tokens, dtype=float)
        big = np.flatnonzero(~(np.abs(arr) < MAX_MAGNITUDE))
        if not big.size:
            return arr
        bad = int(big[0])
        raise InputError(source or "<file>", where(bad), f"{MAGNITUDE_RULE} in {what}", tokens[bad])
    raise InputError(source or "<file>", where(bad), f"a plain decimal number in {what}", tokens[bad])


def _mkp(tok: Tokens, name: str) -> MCMDK:
    n = int(tok.one("n (number of items)", integer=True, minimum=1))
    m = int(tok.one("m (number of constraints)", integer=True, minimum=1))
    opt = tok.one("the optimum value")
    p = tok.take(n, f"the {n} profits")
    W = tok.take(n * m, f"the {m} x {n} constraint matrix", minimum=0).reshape(m, n)
    b = tok.take(m, f"the {m} capacities")
    ref = Reference(opt, True, f"{Path(tok.source).name} header") if opt > 0 else None
    return MCMDK(p, sp.csr_matrix(W), b, np.arange(n + 1), "max", "at_most_one", name,
                 tuple(f"item{i}" for i in range(n)), tuple(f"c{k}" for k in range(m)), None, ref,
                 {"origin": "orlib-mkp"}, tok.source)


def count_mkp_problems(path: str | Path) -> int:
    tok = Tokens(path)
    return 1 if len(tok.first_line) >= 3 else int(tok.one("the number of problems", integer=True, minimum=1))


def read_mkp(path: str | Path, problem: int | None = None) -> MCMDK:
    """Read problem ``problem`` (0-based) of an OR-Library MKP file (multi- or one-problem layout)."""
    tok = Tokens(path)
    stem = Path(path).stem
    if len(tok.first_line) >= 3:   # sac94 / GK: "n m optimum" first
        if problem not in (None, 0):
            raise InputError(tok.source, "--problem", "0 (this file holds one problem)", problem)
        return _mkp(tok, stem)
    count = int(tok.one("the number of problems", integer=True, minimum=1))
    k = 0 if problem is None else problem
    if not 0 <= k < count:
        raise InputError(tok.source, "--problem", f"a problem index in 0..{count - 1}", k)
    for i in range(k):
        _skip_mkp(tok)
    return _mkp(tok, f"{stem}-{k}")


def _skip_mkp(tok: Tokens) -> None:
    n = int(tok.one("n", integer=True, minimum=1))
    m = int(tok.one("m", integer=True, minimum=1))
    tok.take(1 + n + n * m + m, "a problem to skip")


def read_gap(path: str | Path, sense: str = "min", reference: float | None = None) -> MCMDK:
    """Read a generalized assignment problem; configuration (j, i) = job j on agent i, row i = agent i."""
    tok = Tokens(path)
    if sense not in ("max", "min"):
        raise InputError("<argument>", "sense", "'max' or 'min'", sense)
    m = int(tok.one("m (agents)", integer=True, minimum=1))
    n = int(tok.one("n (jobs)", integer=True, minimum=1))
    cost = tok.take(m * n, f"the {m} x {n} cost matrix").reshape(m, n)
    use = tok.take(m * n, f"the {m} x {n} resource matrix", minimum=0).reshape(m, n)
    cap = tok.take(m, f"the {m} agent capacities")
    # column of (job j, agent i) is j * m + i; its only resource use is a_ij on row i.
    cols = np.arange(n * m)
    A = sp.csr_matrix((use.T.ravel(), (np.tile(np.arange(m), n), cols)), shape=(m, n * m))
    ref = Reference(reference, True, "bounds.txt") if reference is not None else None
    labels = tuple(f"agent{i}" for _ in range(n) for i in range(m))
    return MCMDK(cost.T.ravel(), A, cap, np.arange(0, n * m + 1, m), sense, "exactly_one",
                 f"{Path(path).name}-{sense}", tuple(f"job{j}" for j in range(n)),
                 tuple(f"agent{i}" for i in range(m)), labels, ref, {"origin": "orlib-gap"}, tok.source)


def gap_bounds(path: str | Path) -> dict[tuple[str, str], tuple[float, float]]:
    """``bounds.txt``: (instance, 'max'|'min') -> (LB, UB)."""
    out = {}
    for ln, line in enumerate(read_text(path).splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 3 or "_" not in parts[0]:
            raise InputError(str(path), f"line {ln}", "'<name>_<Max|Min> LB UB'", line)
        name, sense = parts[0].rsplit("_", 1)
        lb, ub = numbers(parts[1:], lambda i: f"line {ln}", "the bounds LB UB", str(path))
        out[(name, sense.lower())] = (float(lb), float(ub))
    return out


def detect_format(path: str | Path) -> str:
    """'json', 'mkp' or 'gap' from the name or the first line (1 or 3 numbers: MKP; 2: GAP)."""
    p = Path(path)
    if p.suffix.lower() == ".json":
        return "json"
    head = read_text(p)[:4096]
    if head.lstrip().startswith("{"):
        return "json"
    first = next((l.split() for l in head.splitlines() if l.strip()), [])
    if len(first) == 2:
        return "gap"
    if len(first) in (1, 3):
        return "mkp"
    raise InputError(str(p), "line 1", "a dlsched/1 JSON file, an OR-Library MKP file or a GAP file", " ".join(first)[:60])


def best_known(path: str | Path) -> dict[str, float]:
    """``mkcbres.txt``: problem name ("5.100-00": m.n-index) -> best known value (first table only;
    the second is the LP optima)."""
    first = read_text(path).split("LP optimal")[0]
    return {name: float(val) for name, val in
            re.findall(r"^\s*(\d+\.\d+-\d+)\s+([0-9.eE+]+)\s*$", first, flags=re.M)}


def reference_of(inst: MCMDK, table: dict[str, float]) -> tuple[float | None, str]:
    """Best known value of an OR-Library MKP problem (``m.n-kk`` in ``mkcbres.txt``), else the
    instance's own reference (a file header's optimum), else nothing."""
    k = inst.name.rsplit("-", 1)[-1]
    name = f"{inst.n_rows}.{inst.n_jobs}-{int(k):02d}" if k.isdigit() else ""
    if name in table and inst.meta.get("origin") == "orlib-mkp" and "mknapcb" in inst.source:
        return table[name], f"mkcbres.txt {name}"
    if inst.reference is not None:
        return inst.reference.objective, inst.reference.source
    return None, ""
