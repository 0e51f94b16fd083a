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

_NUMBER = re.compile(r"\S+")


class Tokens:
    """Whitespace-separated numbers of a file, with their line numbers for error messages."""

    def __init__(self, path: str | Path):
        self.source = str(path)
        try:
            text = Path(path).read_text()
        except FileNotFoundError:
            raise InputError(self.source, "file", "an existing file", "no such file") from None
        except UnicodeDecodeError:
            raise InputError(self.source, "file", "a text file", "binary data") from None
        toks, lines = [], []
        for ln, line in enumerate(text.splitlines(), 1):
            for t in _NUMBER.findall(line):
                toks.append(t)
                lines.append(ln)
        self.toks, self.lines, self.pos = toks, lines, 0
        self.first_line = next((_NUMBER.findall(l) for l in text.splitlines() if l.strip()), [])

    def where(self) -> str:
        if self.pos < len(self.toks):
            return f"line {self.lines[self.pos]}, token {self.pos + 1}"
        return f"token {self.pos + 1} (after line {self.lines[-1] if self.lines else 0})"

    def take(self, count: int, what: str, integer: bool = False) -> np.ndarray:
        if self.pos + count > len(self.toks):
            raise InputError(self.source, self.where(), f"{count} numbers for {what}",
                             f"end of file after {len(self.toks) - self.pos}")
        chunk = self.toks[self.pos:self.pos + count]
        try:
            arr = np.array(chunk, dtype=float)
        except ValueError:
            bad = next(i for i, t in enumerate(chunk) if not _is_number(t))
            self.pos += bad
            raise InputError(self.source, self.where(), f"a number in {what}", chunk[bad]) from None
        if integer and not np.all(arr == np.round(arr)):
            raise InputError(self.source, self.where(), f"integers for {what}", chunk)
        self.pos += count
        return arr

    def one(self, what: str, integer: bool = False, minimum: float | None = None) -> float:
        at = self.where()
        x = float(self.take(1, what, integer)[0])
        if minimum is not None and x < minimum:
            raise InputError(self.source, at, f"{what} >= {minimum:g}", x)
        return x


def _is_number(t: str) -> bool:
    try:
        float(t)
        return True
    except ValueError:
        return False


def _mkp(tok: Tokens, name: str) -> MCMDK:
    n = int(tok.one("n (number of items)", integer=True, minimum=1))
    m = int(tok.one("m (number of constraints)", integer=True, minimum=1))
    opt = tok.one("the optimum value")
    p = tok.take(n, f"the {n} profits")
    at = tok.where()
    W = tok.take(n * m, f"the {m} x {n} constraint matrix").reshape(m, n)
    b = tok.take(m, f"the {m} capacities")
    if np.any(W < 0):
        raise InputError(tok.source, at, "non-negative constraint coefficients", float(W.min()))
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
    use = tok.take(m * n, f"the {m} x {n} resource matrix").reshape(m, n)
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
    for ln, line in enumerate(Path(path).read_text().splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 3 or "_" not in parts[0]:
            raise InputError(str(path), f"line {ln}", "'<name>_<Max|Min> LB UB'", line)
        name, sense = parts[0].rsplit("_", 1)
        out[(name, sense.lower())] = (float(parts[1]), float(parts[2]))
    return out


def detect_format(path: str | Path) -> str:
    """'json', 'mkp' or 'gap' from the name or the first line (1 or 3 numbers: MKP; 2: GAP)."""
    p = Path(path)
    if p.suffix.lower() == ".json":
        return "json"
    if not p.exists():
        raise InputError(str(p), "file", "an existing file", "no such file")
    with open(p, "rb") as fh:
        head = fh.read(4096)
    if head.lstrip().startswith(b"{"):
        return "json"
    first = next((l.split() for l in head.decode(errors="replace").splitlines() if l.strip()), [])
    if len(first) == 2:
        return "gap"
    if len(first) in (1, 3):
        return "mkp"
    raise InputError(str(p), "line 1", "a dlsched/1 JSON file, an OR-Library MKP file or a GAP file", " ".join(first)[:60])
