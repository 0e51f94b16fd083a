r"""Tabu search with strategic oscillation on the core MCMDK (MODELS.md §1), from the LP's incumbent.

Method ``tabu``. The MKP is the MCMDK with one configuration per job; the search works on the
general model (any number of configurations per job, ``at_most_one`` or ``exactly_one``). Built
from the ideas of Glover & Kochenberger (1996: strategic oscillation across the feasibility
boundary) and Vasquez & Hao (2001: a search kept close to the LP optimum), not from their code:

1. the LP relaxation gives capacity prices :math:`u`, the bound :math:`L(u)` and the regrets
   :math:`r_{j,o}` (:mod:`dlsched.solvers.lp`); ``lp-round`` gives the first incumbent z;
2. **fixing** (``fixing``, default on): by (★) of docs/layers.md a solution worth at least
   :math:`z + \delta` uses only options with :math:`r_{j,o} \le L(u) - z - \delta` (δ = 1 for
   integer gains, else 0); the others are never entered. The set shrinks as z improves;
3. **core**: only the ``core_share`` of the jobs (at least ``core_min``) whose choice the
   prices decide least firmly (smallest regret of their second-best option,
   :func:`dlsched.solvers.core.job_slack`) move; the others keep the incumbent's choice. With
   ``misfits`` (default off) the core also holds every job whose incumbent choice is not its best
   at the LP prices (positive regret, :func:`misfit_jobs`): on the MKP the items the rounding's
   greedy repair took against the prices, which a core by slack alone keeps fixed for the whole
   search (on a generated 10 x 500 problem such an item ranked 428th of 500 by slack, and the
   search stayed 0.4 % behind ``core``; the results log, docs/results/index.md, issue 14);
4. **moves** (:mod:`dlsched.solvers.tabu_kernel`, compiled with numba), all evaluated in each
   iteration against the usage vector: "job j takes column c, or none", and with ``swaps`` (default
   on) "job i drops its configuration and job j without one takes column c". The best admissible
   move is made and its jobs are tabu for a random tenure in ``[t, 2t]``,
   ``t = max(1, tenure × free jobs)``; a tabu move is admitted when it gives a feasible solution
   better than the best (aspiration);
5. **strategic oscillation**: overused capacity costs :math:`\lambda_k` per unit, with the LP
   price :math:`u_k` as its floor (at least :data:`FLOOR_SHARE` of the row's mean gain per unit);
   a row's weight grows by the factor ``lam_up`` in each iteration it is overused (at most
   ``lam_cap`` times its floor) and all shrink back towards the floors while the solution is
   feasible, so the search crosses the boundary of the feasible region and comes back;
6. **restarts**: after ``stall × free jobs`` iterations without a better solution the prices are
   perturbed, :math:`u_k e^{\sigma\xi_k}` (σ = ``price_noise``), which gives another core (step 3)
   and other weight floors (step 5); the search goes back to the best solution, drops ``kick`` of
   its free chosen jobs (the lowest gain per unit of the perturbed prices, with random noise),
   makes them tabu and goes on. With ``centres="hyperplanes"`` (default ``"prices"``; MKP-like
   models, ``at_most_one``) the restarts instead cycle over the cardinality hyperplanes
   :math:`\sum x = k` whose LP can still beat the incumbent (Vasquez & Hao's hyperplanes; the range
   of :func:`dlsched.solvers.cardinality.cardinality_range`, recomputed after an improvement): the
   core and the weight floors come from the duals :math:`(u, \mu)` of :math:`z_{LP}(k)`, the
   regrets being those of the gains :math:`g - \mu` at prices :math:`u` (the price noise on top),
   so each restart searches around another LP optimum.

**Bound.** The search proves nothing beyond the LP: the bound is :math:`L(u)` (rounded down for
integer gains), and the method stops early only when z reaches it (or the requested ``gap``).
Without a time limit it stops after :data:`UNTIMED_RESTARTS` restarts in a row without a better
solution (termination ``heuristic``).

**Cost.** One iteration costs :math:`O(\text{core columns} \times m)` for the one-job moves and
:math:`O(\text{chosen} \times \text{unchosen core columns} \times m)` for the swaps (a move's rows
stop being summed once its penalty rules it out); swaps are left out while that product exceeds
:data:`SWAP_WORK` (wide scheduling-shaped models). The usage matrix is held dense (columns ×
rows), so models above :data:`DENSE_ENTRIES` entries are refused. numba's import and the load of
the cached compiled code count against the time limit (``stats["jit_import_seconds"]``,
``stats["jit_first_chunk_seconds"]``); in a fresh environment the kernel must first be compiled
(measured: 2 s idle, 8-9 s under load; the results log, docs/results/index.md), which cannot be interrupted: a call with
less than :data:`COMPILE_SECONDS` left that finds no compiled kernel starts a background process
that compiles and caches it (:func:`compile_in_background`) and meanwhile searches with the
kernel's Python original (:func:`python_search`: the same moves, about 100 times slower;
``stats["kernel"]`` says so), switching to the compiled kernel as soon as it is ready. Its answer
is a search's, never worse than its start, within the limit (on mknapcb1 problem 0 with a fresh
cache under load: 24,381, the best known value, at 5 s; 24,304 at 2 s; the start, 24,253, at 1 s).
A call with more time compiles the kernel itself.

Defaults were chosen on generated Chu–Beasley problems with seeds below 100 (the results log,
docs/results/index.md, issue 14).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
import types
from dataclasses import replace
from pathlib import Path

import numpy as np

from dlsched.errors import InputError
from dlsched.instance.classic_gen import chu_beasley_mkp
from dlsched.instance.core import MCMDK
from dlsched.result import Result, Status
from dlsched.solvers.cardinality import cardinality_range
from dlsched.solvers.core import SEARCH_SHARE, Tracker, finish, job_slack, perturbed, start
from dlsched.solvers.lp import LPInfo, gain, integral_gains, lagrangian
from dlsched.solvers.options import RESOLUTION, SolveOptions
from dlsched.arguments import flag
from dlsched.solvers.registry import call, register

#: the usage matrix is held dense (columns x rows, 8 bytes each): at most this many entries (160 MB)
DENSE_ENTRIES = 20_000_000
#: without a time limit the search stops after this many restarts in a row without a better solution
UNTIMED_RESTARTS = 50
#: swaps are evaluated only while (core jobs x core columns x rows) is at most this (about 10 ms
#: per iteration); beyond it, on wide scheduling-shaped models, the one-job moves alone
SWAP_WORK = 20_000_000
#: standard deviation of the log-normal noise on the gain-per-price ratios that pick the jobs a restart drops
KICK_NOISE = 0.3
#: weight floor of a row the LP does not price, as a share of its mean gain per unit of use
FLOOR_SHARE = 1e-3
#: a limited call that finds the kernel neither loaded nor cached (it would compile, 2-9 s measured)
#: searches only if at least this many seconds remain; else it returns its start (the time limit holds)
COMPILE_SECONDS = 15.0
#: ... and switches to the compiled kernel (loading it from the cache) only with this many seconds left
MIN_SEARCH_SECONDS = 0.5
#: numba's import and the load of the cached kernel (its first call in a process), neither of which
#: can be interrupted: measured 0.35-0.46 s and 0.45-0.70 s on the shared 2-core machine at load 7
#: (``stats["jit_import_seconds"]``, ``stats["jit_first_chunk_seconds"]``); a limited call that
#: has less than what it still needs of these plus MIN_SEARCH_SECONDS left returns its start
JIT_IMPORT_SECONDS = 0.6
KERNEL_LOAD_SECONDS = 0.9


#: where the restarts centre the core (option ``centres``, module docstring step 6; the first is the default)
CENTRES = ("prices", "hyperplanes")

#: the compiling process this process has started (at most one)
_compiling: subprocess.Popen | None = None


def compile_kernel() -> None:
    """Compile the kernel and cache it on disk, where every later process finds it: an unlimited
    call on a small MKP (the kernel is compiled for the argument types every call uses). A benchmark
    calls it before its timed cells; :func:`compile_in_background` runs it in another process."""
    call(chu_beasley_mkp(30, 5, 0.5, seed=0), "tabu", SolveOptions(threads=1))


def compile_in_background() -> subprocess.Popen:
    """Start (once per process) a separate process that compiles and caches the kernel, so that a
    limited call does not wait for numba and the calls after it find the kernel ready."""
    global _compiling
    if _compiling is None:
        root = str(Path(__file__).resolve().parents[2])      # this copy of dlsched, whatever sys.path says
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
        program = "from dlsched.solvers.tabu import compile_kernel; compile_kernel()"
        _compiling = subprocess.Popen([sys.executable, "-c", program], env=env, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    return _compiling


def jit_seconds() -> float:
    """The uninterruptible seconds this process still needs before the kernel's first iteration:
    numba's import unless done, the cached kernel's load unless done (compiling is handled apart)."""
    kernel = sys.modules.get("dlsched.solvers.tabu_kernel")
    if kernel is None:
        return JIT_IMPORT_SECONDS + KERNEL_LOAD_SECONDS
    return 0.0 if kernel.search.signatures else KERNEL_LOAD_SECONDS


def python_search():
    """The search kernel's Python original calling its helper's Python original (the numba
    dispatcher of ``penalty`` would compile it, seconds that no limit can interrupt), with a
    generator of its own where the compiled kernel has numba's (numpy's global one stays untouched)."""
    from dlsched.solvers import tabu_kernel

    py = tabu_kernel.search.py_func
    own_np = types.SimpleNamespace(inf=np.inf, empty=np.empty, random=np.random.RandomState())
    return types.FunctionType(py.__code__, {**py.__globals__, "penalty": tabu_kernel.penalty.py_func, "np": own_np},
                              py.__name__)


def kernel_ready(search) -> bool:
    """Whether the compiled search kernel is loaded in this process or cached on disk for the
    current source (numba's cache index; a private part of numba, so any failure reads "not ready")."""
    if search.signatures:
        return True
    try:
        return bool(search._cache._cache_file._load_index())
    except Exception:   # noqa: BLE001  (numba's internals moved: compile, as without a cache)
        return False


def _positive(name: str, value, *, upper: float | None = None, above_one: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    ok = v > (1.0 if above_one else 0.0) and math.isfinite(v) and (upper is None or v <= upper)
    if not ok:
        want = "a number > 1" if above_one else (f"a number in (0, {upper:g}]" if upper else "a positive number")
        raise InputError("<argument>", name, want, value)
    return v


class State:
    """The search state shared with the kernel (arrays changed in place) and the bookkeeping of
    restarts; all column indices are the core model's."""

    def __init__(self, inst: MCMDK, tr: Tracker, floor: np.ndarray):
        self.inst = inst
        self.g = gain(inst)
        self.Ad = np.ascontiguousarray(inst.A.T.toarray())
        self.cap = inst.b.astype(float)
        self.tol = 1e-9 * np.maximum(1.0, np.abs(self.cap))
        self.job_ptr = inst.job_ptr.astype(np.int64)
        self.col_job = inst.col_job
        self.cur = np.full(inst.n_jobs, -1, dtype=np.int64)
        if tr.choice is not None:
            on = tr.choice >= 0
            self.cur[on] = self.job_ptr[np.flatnonzero(on)] + tr.choice[on]
        else:          # no incumbent (an exactly_one model the repair failed on): the LP's largest column per job
            x = tr.lp.x
            if inst.choose == "exactly_one":
                for j in np.flatnonzero(inst.n_configs > 0):     # only in this rare fallback
                    lo, hi = self.job_ptr[j], self.job_ptr[j + 1]
                    self.cur[j] = lo + int(np.argmax(x[lo:hi]))
        self.best = self.cur.copy()
        self.floor = floor
        self.lam = floor.copy()
        self.tabu_until = np.zeros(inst.n_jobs, dtype=np.int64)
        self.w = np.zeros(inst.n_rows)
        self.state = np.zeros(3)
        self.refresh()
        self.state[2] = self.state[1] if self.feasible(self.cur) else -math.inf

    def gain_of(self, cur: np.ndarray) -> float:
        return float(self.g[cur[cur >= 0]].sum())

    def usage(self, cur: np.ndarray) -> np.ndarray:
        return self.Ad[cur[cur >= 0]].sum(axis=0)

    def feasible(self, cur: np.ndarray) -> bool:
        if self.inst.choose == "exactly_one" and np.any(cur < 0):
            return False
        return bool(np.all(self.usage(cur) - self.cap <= self.tol))

    def refresh(self) -> None:
        """Usage and gain of ``cur`` recomputed from scratch (no drift across long searches)."""
        self.w[:] = self.usage(self.cur)
        self.state[1] = self.gain_of(self.cur)

    def choice(self, cur: np.ndarray) -> np.ndarray:
        out = np.full(self.inst.n_jobs, -1, dtype=np.int64)
        on = cur >= 0
        out[on] = cur[on] - self.job_ptr[np.flatnonzero(on)]
        return out


def fixing_masks(inst: MCMDK, tr: Tracker, fixing: bool) -> tuple[np.ndarray, np.ndarray]:
    """Columns and empty choices a better solution may use (module docstring, step 2)."""
    none_allowed = inst.choose == "at_most_one"
    if not fixing or tr.choice is None:
        return np.ones(inst.n_cols, dtype=bool), np.full(inst.n_jobs, none_allowed)
    delta = 1.0 if integral_gains(inst) else 0.0
    room = tr.lp.bound_gain - tr.gain - delta + 1e-6 * max(1.0, abs(tr.lp.bound_gain))
    allowed = tr.lp.regret <= room
    none_ok = (tr.lp.regret_none <= room) if none_allowed else np.zeros(inst.n_jobs, dtype=bool)
    return allowed, none_ok


def misfit_jobs(inst: MCMDK, tr: Tracker, info: LPInfo) -> np.ndarray:
    """The jobs whose incumbent choice is not their best at ``info``'s prices (positive regret;
    on the MKP the items the LP rounding's repair added or dropped against the prices)."""
    out = np.zeros(inst.n_jobs, dtype=bool)
    if tr.choice is None:
        return out
    on = tr.choice >= 0
    cols = inst.job_ptr[np.flatnonzero(on)] + tr.choice[on]
    r = np.where(on, 0.0, info.regret_none)
    r[on] = info.regret[cols]
    return r > 1e-9 * max(1.0, abs(info.bound_gain))


def search_masks(inst: MCMDK, tr: Tracker, info: LPInfo, fixing: bool, core_jobs: int, misfits: bool = False
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Columns and empty choices the search may enter, the jobs that may move and those with a
    choice to make: the fixing (step 2) intersected with the ``core_jobs`` jobs whose choice the
    prices of ``info`` decide least firmly (:func:`job_slack`, step 3)."""
    allowed, none_ok = fixing_masks(inst, tr, fixing)
    if core_jobs < inst.n_jobs:
        in_core = np.zeros(inst.n_jobs, dtype=bool)
        in_core[np.argsort(job_slack(inst, info), kind="stable")[:core_jobs]] = True
        if misfits:
            in_core |= misfit_jobs(inst, tr, tr.lp)
        allowed &= in_core[inst.col_job]
        none_ok &= in_core
    options = np.bincount(inst.col_job[allowed], minlength=inst.n_jobs) + none_ok
    return allowed, none_ok, np.flatnonzero(options > 0), options > 1


def shifted(inst: MCMDK, mu: float) -> MCMDK:
    r"""``inst`` with every gain lowered by :math:`\mu` (the price of the cardinality row)."""
    return replace(inst, value=inst.value - mu if inst.sense == "max" else inst.value + mu)


def centre(inst: MCMDK, lp: LPInfo, u: np.ndarray, mu: float) -> LPInfo:
    r"""``lp`` with the prices ``u`` and the regrets of the gains :math:`g - \mu` at them (a hyperplane
    centre, module docstring step 6; its bound fields are ``lp``'s, the certified ones)."""
    _, best, regret, regret_none = lagrangian(shifted(inst, mu), u)
    return replace(lp, u=u, best=best, regret=regret, regret_none=regret_none)


def hyperplane_duals(inst: MCMDK, tr: Tracker, opts: SolveOptions) -> list[tuple[int, np.ndarray, float]]:
    r"""``(k, u, mu)``: the prices of :math:`z_{LP}(k)` for every k whose LP can beat the incumbent
    (module docstring step 6); empty under ``exactly_one`` or without an incumbent."""
    if inst.choose != "at_most_one" or tr.choice is None:
        return []
    duals: dict[int, np.ndarray] = {}
    cardinality_range(inst, tr.gain, 1.0 if integral_gains(inst) else 0.0, opts, duals=duals)
    out = []
    for k, y in sorted(duals.items()):
        # HiGHS's dual signs flip with the sense (as in lp.solve_lp): keep the sign whose
        # Lagrangian bound of the hyperplane, u.b + mu k + sum_j max(0, max_o g - A'u - mu), is smaller
        cands = []
        for sgn in (1.0, -1.0):
            u, mu = np.maximum(sgn * y[: inst.n_rows], 0.0), float(sgn * y[-1])     # the cardinality row is the last
            cands.append((lagrangian(shifted(inst, mu), u)[0] + mu * k, sgn, u, mu))
        _, _, u, mu = min(cands, key=lambda c: (c[0], c[1]))
        out.append((k, u, mu))
    return out


def restart(s: State, rng: np.random.Generator, kick: float, tenure_hi: int, free: np.ndarray,
            allowed: np.ndarray, none_ok: np.ndarray) -> None:
    """Back to the best solution, minus ``kick`` of its free chosen jobs (those with the lowest
    gain per unit of the current weight floors, with random noise; module docstring, step 5)."""
    s.cur[:] = s.best
    s.lam[:] = s.floor
    cand = np.flatnonzero((s.cur >= 0) & free)
    if cand.size:
        cols = s.cur[cand]
        ratio = s.g[cols] / np.maximum(s.Ad[cols] @ s.floor, 1e-12)
        key = np.log(np.maximum(ratio, 1e-300)) + KICK_NOISE * rng.standard_normal(cand.size)
        k = max(1, int(round(kick * cand.size)))
        out = cand[np.argsort(key)[:k]]
        for j in out:          # k jobs, a few per restart
            lo, hi = s.job_ptr[j], s.job_ptr[j + 1]
            if none_ok[j]:
                s.cur[j] = -1
            else:
                alt = lo + np.flatnonzero(allowed[lo:hi])
                alt = alt[alt != s.cur[j]]
                if alt.size:
                    s.cur[j] = rng.choice(alt)
        s.tabu_until[:] = 0
        s.tabu_until[out] = int(s.state[0]) + tenure_hi
    s.refresh()


@register("tabu", description="tabu search with strategic oscillation from the LP incumbent (fixing by LP regret, "
          "restarts under perturbed prices)",
          params=("tenure", "stall", "kick", "lam_up", "lam_cap", "price_noise", "fixing", "swaps", "core_share",
                  "core_min", "search_share", "centres", "misfits"),
          supports=("gap", "raw"))
def tabu(instance, opts: SolveOptions, tenure: float = 0.01, stall: float = 20.0, kick: float = 0.2,
         lam_up: float = 1.1, lam_cap: float = 1e4, price_noise: float = 0.3, fixing: bool = True,
         swaps: bool = True, core_share: float = 0.15, core_min: int = 80,
         search_share: float = SEARCH_SHARE, centres: str = CENTRES[0], misfits: bool = False) -> Result:
    """Tabu search on the core MCMDK (module docstring)."""
    tenure = _positive("tenure", tenure, upper=1.0)
    stall = _positive("stall", stall)
    kick = _positive("kick", kick, upper=1.0)
    lam_up = _positive("lam_up", lam_up, above_one=True)
    lam_cap = _positive("lam_cap", lam_cap, above_one=True)
    price_noise = _positive("price_noise", price_noise) if price_noise != 0 else 0.0
    search_share = _positive("search_share", search_share, upper=1.0)
    core_share = _positive("core_share", core_share, upper=1.0)
    core_min = int(_positive("core_min", core_min))
    fixing = flag(fixing, "fixing")
    swaps = flag(swaps, "swaps")
    misfits = flag(misfits, "misfits")
    if centres not in CENTRES:
        raise InputError("<argument>", "centres", "one of " + ", ".join(CENTRES), centres)
    opts = opts.started()
    inst = instance.to_core()
    if inst.n_cols * max(inst.n_rows, 1) > DENSE_ENTRIES:
        raise InputError("<argument>", "method", f"a model of at most {DENSE_ENTRIES:,} columns x rows for method 'tabu' "
                         "(it holds the usage matrix dense); use 'core' on larger models",
                         f"{inst.n_cols:,} columns x {inst.n_rows} rows")
    inst, tr, stats = start(inst, opts, search_share)
    if tr.lp.status != Status.OPTIMAL or tr.done or inst.n_jobs == 0:
        return finish("tabu", inst, opts, tr, stats, tr.lp.termination if tr.lp.status != Status.OPTIMAL else "optimal")
    if opts.budget.limited and opts.budget.remaining() < jit_seconds() + MIN_SEARCH_SECONDS:
        stats["kernel"] = "not loaded"
        return finish("tabu", inst, opts, tr, stats, "time_limit",
                      message=f"tabu's search kernel is not loaded in this process (numba's import and the kernel's "
                              f"load take about {jit_seconds():.1f} s and cannot be interrupted): returned its start "
                              "solution within the limit; a call with a larger limit searches")
    j0 = time.perf_counter()
    from dlsched.solvers.tabu_kernel import search    # numba: imported (and compiled once) only when used
    stats["jit_import_seconds"] = round(time.perf_counter() - j0, 4)
    kernel, compiling = search, None
    if opts.budget.limited and opts.budget.remaining() < COMPILE_SECONDS and not kernel_ready(search):
        # a first call searches with the kernel's Python original (same moves, about 100x slower)
        # while another process compiles and caches it, and switches to it once it is ready: the
        # answer is a search's, not the start's, and the limit holds (the compile cannot be interrupted)
        compiling, kernel = compile_in_background(), python_search()
        stats["kernel"] = "python (the compiled kernel was not ready)"

    per_unit = np.abs(gain(inst)).sum() / np.maximum(np.asarray(inst.A.sum(axis=1)).ravel(), 1e-12)

    def floor_of(info: LPInfo) -> np.ndarray:
        return np.maximum(np.maximum(info.u, FLOOR_SHARE * per_unit), 1e-12)     # positive: penalty 0 means feasible

    s = State(inst, tr, floor_of(tr.lp))
    rng = np.random.default_rng(opts.seed)
    n_core = min(inst.n_jobs, max(int(math.ceil(core_share * inst.n_jobs)), core_min))

    class Space:
        """The part of the model the search moves in (fixing x core at ``info``'s prices)."""

        def __init__(self, info: LPInfo):
            self.allowed, self.none_ok, self.jobs, self.free = search_masks(inst, tr, info, fixing, n_core, misfits)
            self.cols = np.flatnonzero(self.allowed)
            self.n_free = max(1, int(self.free.sum()))
            self.swaps = swaps and self.jobs.size * self.cols.size * inst.n_rows <= SWAP_WORK

    info = tr.lp
    sp = Space(info)
    tenure_lo = max(1, int(round(tenure * sp.n_free)))
    iters, chunk, since, restarts, idle, first = 0, 16, 0, 0, 0, True
    planes, planes_at = [], None      # hyperplane centres and the incumbent gain they were computed for
    timed = opts.clock.limited
    if compiling is not None:
        chunk = 1       # Python iterations cost up to 100x more: let the chunk size grow from one
    while not tr.done:
        if opts.clock.remaining() <= RESOLUTION / 5 or (not timed and idle >= UNTIMED_RESTARTS):
            break
        if compiling is not None and compiling.poll() == 0 and kernel_ready(search) \
                and opts.clock.remaining() > KERNEL_LOAD_SECONDS + MIN_SEARCH_SECONDS:
            kernel, compiling, first = search, None, True     # the compiled kernel, seeded afresh
            stats["kernel"] = "compiled during the call (python until then)"
        # a chunk ends at the next restart at the latest
        t, ran = time.perf_counter(), max(1, min(chunk, int(stall * sp.n_free) + 1 - since))
        improved = kernel(s.Ad, s.g, s.job_ptr, s.col_job, s.cap, s.tol, sp.jobs, sp.cols, sp.allowed, sp.none_ok,
                          s.cur, s.w, s.lam, s.floor, s.tabu_until, s.best, s.state, ran, tenure_lo, 2 * tenure_lo,
                          lam_up, lam_cap, sp.swaps, int(rng.integers(2**31 - 1)) if first else -1)
        secs = time.perf_counter() - t
        if first:
            stats["jit_first_chunk_seconds"] = round(secs, 4)   # includes loading (or compiling) the kernel
            first = False
        elif secs > 0:     # chunks of about RESOLUTION seconds: the time limit is checked that often
            target = min(RESOLUTION, 0.5 * opts.clock.remaining()) if timed else RESOLUTION
            chunk = int(min(max(1, ran * target / secs), 4 * ran + 1))
        iters += ran
        since += ran
        s.refresh()
        if improved and s.feasible(s.best) and tr.offer(s.choice(s.best), s.gain_of(s.best)):
            since = idle = 0
            sp = Space(info)
        if since > stall * sp.n_free:
            if centres == "hyperplanes" and planes_at != tr.gain:
                planes, planes_at = hyperplane_duals(inst, tr, opts), tr.gain
            if planes:       # the next round searches around the LP optimum of another hyperplane
                _, u, mu = planes[restarts % len(planes)]
                noise = np.exp(price_noise * rng.standard_normal(u.size)) if price_noise > 0 else 1.0
                info = centre(inst, tr.lp, u * noise, mu)
                s.floor[:] = floor_of(info)
                sp = Space(info)
            elif price_noise > 0:      # the next round searches the core of other prices
                info = perturbed(inst, tr.lp, rng, price_noise)
                s.floor[:] = floor_of(info)
                sp = Space(info)
            restart(s, rng, kick, 2 * tenure_lo, sp.free, sp.allowed, sp.none_ok)
            restarts += 1
            idle += 1
            since = 0
    stats.update(iterations=iters, restarts=restarts, swaps=sp.swaps, hyperplanes=len(planes),
                 free_jobs=int(sp.free.sum()),
                 tenure=[tenure_lo, 2 * tenure_lo], allowed_columns=int(sp.allowed.sum()))
    return finish("tabu", inst, opts, tr, stats, "time_limit" if timed else "heuristic")
