r"""The offline time-indexed MILP of the OASiS family (MODELS.md §3.1); data in :mod:`dlsched.instance.oasis`.

Slot convention (MODELS.md §3.1 asks for it): slots are ``t = 1..T``. A job with arrival
:math:`a_i` may run from slot :math:`a_i` on; its completion slot :math:`\hat t_i` is the last
slot in which it has workers; its duration is :math:`\hat t_i - a_i + 1` slots (a job that
finishes inside its arrival slot took one slot), and its utility is
:math:`f_i(\hat t_i - a_i + 1)`.

Offline optimum (MODELS.md §3.1, one-hot completion linearisation), written in worker-slots:

.. math::

    \max \sum_i \sum_{t \ge t^{min}_i} f_i(t - a_i + 1)\, c_i(t)

    \text{s.t.}\;
    \sum_t \sum_h y_{ih}(t) \ge R_i\, x_i,\qquad
    \sum_h y_{ih}(t) \le N_i \sum_{t' \ge t} c_i(t'),\qquad
    \sum_t c_i(t) = x_i,

    \sum_i w_i^r y_{ih}(t) \le c_h^r,\qquad \sum_i s_i^r z_{ik}(t) \le c_k^r,\qquad
    b_i \sum_h y_{ih}(t) \le B_i \sum_k z_{ik}(t),\qquad \sum_k z_{ik}(t) \le \sum_h y_{ih}(t)

with :math:`R_i = \lceil E_i N_i M_i (\tau_i + 2 e_i / b_i) \rceil` worker-slots (the work),
:math:`t^{min}_i = a_i + \lceil R_i / N_i \rceil - 1` the earliest completion slot.

The symbols are fields of :class:`~dlsched.instance.oasis.OasisInstance` (its module has the table).

Tightening used by the matrix builder (docs/oasis.md): variables before :math:`a_i` and
completion indicators before :math:`t^{min}_i` are not created; every y/z has the upper bound
its server's capacity allows; jobs that fit on no server get no variables (:math:`x_i = 0`).
Optional rows: identical servers ordered per slot by a load key (valid because a slot's
assignment to identical servers can be permuted independently of other slots), per-server
links and cumulative-work cuts; off by default (measured slower with HiGHS).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dlsched.instance.oasis import OasisInstance, OasisSchedule, schedule_from_dense
from dlsched.models.mcmdk import MatrixForm

# ----------------------------------------------------------------------------- offline MILP

@dataclass(frozen=True)
class OasisIndex:
    """The column and row map of the matrix form (STYLE.md practice 2).

    Columns: completion indicators ``c`` (job, slot), then workers ``y`` (job, slot, server),
    then PSs ``z`` (job, slot, server); ``c_*``, ``y_*``, ``z_*`` hold those coordinates in
    column order and ``c0``, ``y0``, ``z0`` the first column of each block. Slots are 1-based.
    """

    c_job: np.ndarray
    c_t: np.ndarray
    y_job: np.ndarray
    y_t: np.ndarray
    y_h: np.ndarray
    z_job: np.ndarray
    z_t: np.ndarray
    z_k: np.ndarray
    row_names: tuple[str, ...]

    @property
    def c0(self) -> int:
        return 0

    @property
    def y0(self) -> int:
        return len(self.c_job)

    @property
    def z0(self) -> int:
        return len(self.c_job) + len(self.y_job)

    @property
    def n_cols(self) -> int:
        return self.z0 + len(self.z_job)


class _Rows:
    """Row blocks of a sparse matrix form, collected as coordinate arrays (vectorised builders)."""

    def __init__(self):
        self.rows, self.cols, self.vals, self.lo, self.hi, self.names = [], [], [], [], [], []
        self.count = 0

    def block(self, count, lower, upper, label: str = "") -> int:
        """Append ``count`` rows with bounds [lower, upper]; returns the first row's index."""
        self.lo.append(np.broadcast_to(np.asarray(lower, float), (count,)).copy())
        self.hi.append(np.broadcast_to(np.asarray(upper, float), (count,)).copy())
        self.names.append((label, self.count, count))
        self.count += count
        return self.count - count

    def add(self, r, c, v) -> None:
        """Coefficients v at (rows r, columns c); v broadcasts."""
        self.rows.append(np.asarray(r, dtype=np.int64))
        self.cols.append(np.asarray(c, dtype=np.int64))
        self.vals.append(np.broadcast_to(np.asarray(v, dtype=float), np.shape(r)).copy())

    def matrix(self, n_cols: int) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
        M = sp.csr_matrix((np.concatenate(self.vals), (np.concatenate(self.rows), np.concatenate(self.cols))),
                          shape=(self.count, n_cols))
        M.sum_duplicates()
        M.eliminate_zeros()
        return M, np.concatenate(self.lo), np.concatenate(self.hi)


def _windows(inst: OasisInstance):
    """Per job: arrival a, earliest completion t_min (T + 1 when it cannot run), horizon."""
    a = inst.arrival
    ok = inst.runnable()
    tmin = np.where(ok, a + inst.min_duration() - 1, inst.horizon + 1)
    return a, tmin, ok


def _grid(jobs: np.ndarray, lo: np.ndarray, T, fit: np.ndarray | None = None):
    """Coordinates (job, slot[, server]) for slots lo_i..T (T a number or one per job; servers with fit > 0), vectorised."""
    counts = np.maximum(T - lo + 1, 0)
    job = np.repeat(jobs, counts)
    start = np.repeat(np.cumsum(counts) - counts, counts)
    t = np.repeat(lo, counts) + np.arange(counts.sum()) - start
    if fit is None:
        return job, t
    S = fit.shape[1]
    job3 = np.repeat(job, S)
    t3 = np.repeat(t, S)
    s3 = np.tile(np.arange(S), len(job))
    keep = fit[job3, s3] > 0
    return job3[keep], t3[keep], s3[keep]


def build_index(inst: OasisInstance) -> OasisIndex:
    a, tmin, ok = _windows(inst)
    jobs = np.flatnonzero(ok)
    T = inst.horizon
    c_job, c_t = _grid(jobs, tmin[jobs], T)
    y_job, y_t, y_h = _grid(jobs, a[jobs], T, inst.worker_fit())
    z_job, z_t, z_k = _grid(jobs, a[jobs], T, inst.ps_fit())
    return OasisIndex(c_job, c_t, y_job, y_t, y_h, z_job, z_t, z_k, ())


def build_matrix(inst: OasisInstance, *, symmetry: bool = False, relax: bool = False,
                 server_link: bool = False, cumulative_work: bool = False):
    """Matrix form of the offline MILP (module docstring), tightened; returns (MatrixForm, OasisIndex).

    Row families, in order: work (job), link (job, slot), one completion (job), worker capacity
    (server, slot, resource), PS capacity, bandwidth (job, slot), PSs <= workers (job, slot), and
    the optional valid rows: ``server_link`` (y_ih(t) <= u_ih sum_{t'>=t} c_i(t')),
    ``cumulative_work`` (work done by t >= R_i [completed by t]), ``symmetry`` (server, slot)
    between consecutive identical servers. All three are off by default: on the competitive-ratio
    instances HiGHS detects the server symmetry itself and the explicit ordering rows made it
    10-60x slower; the two cut families change little (docs/oasis.md).
    """

    idx = build_index(inst)
    n, T, H, K, Rn = inst.n_jobs, inst.horizon, inst.n_worker_servers, inst.n_ps_servers, len(inst.resources)
    a = inst.arrival
    work = inst.work().astype(float)
    N = inst.chunks.astype(float)
    y0, z0 = idx.y0, idx.z0
    cy = np.arange(len(idx.y_job)) + y0
    cz = np.arange(len(idx.z_job)) + z0
    cc = np.arange(len(idx.c_job))
    # per (job, slot) row offsets: slot t of job i -> jt_off[i] + t - a_i  (slots a_i..T)
    span = T - a + 1
    jt_off = np.cumsum(span) - span
    n_jt = int(span.sum())
    rb = _Rows()
    add, block = rb.add, rb.block
    # work: sum y - R_i sum_t c_i(t) >= 0
    r0 = block(n, 0.0, np.inf, "work")
    add(r0 + idx.y_job, cy, 1.0)
    add(r0 + idx.c_job, cc, -work[idx.c_job])
    # link: sum_h y_ih(t) - N_i sum_{t' >= t} c_i(t') <= 0, for t = a_i..T
    r0 = block(n_jt, -np.inf, 0.0, "link")
    add(r0 + jt_off[idx.y_job] + idx.y_t - a[idx.y_job], cy, 1.0)
    # c_i(t') appears in the link rows of slots a_i..t'
    reps = idx.c_t - a[idx.c_job] + 1
    cj = np.repeat(idx.c_job, reps)
    tt = np.repeat(a[idx.c_job], reps) + np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    add(r0 + jt_off[cj] + tt - a[cj], np.repeat(cc, reps), -N[cj])
    # at most one completion slot per job (x_i = sum_t c_i(t))
    r0 = block(n, -np.inf, 1.0, "one_completion")
    add(r0 + idx.c_job, cc, 1.0)
    # capacities (server, slot, resource): row index ((s * T) + t - 1) * R + r
    for (job, t, s, cols_, dem, cap, S, label) in (
            (idx.y_job, idx.y_t, idx.y_h, cy, inst.worker_demand, inst.worker_cap, H, "worker_capacity"),
            (idx.z_job, idx.z_t, idx.z_k, cz, inst.ps_demand, inst.ps_cap, K, "ps_capacity")):
        r0 = block(S * T * Rn, -np.inf, np.repeat(cap, T, axis=0).reshape(-1), label)
        d = dem[job]                                                   # (nnz, R)
        nz = np.argwhere(d > 0)
        add(r0 + ((s[nz[:, 0]] * T) + t[nz[:, 0]] - 1) * Rn + nz[:, 1], cols_[nz[:, 0]], d[nz[:, 0], nz[:, 1]])
    # bandwidth: b_i sum_h y - B_i sum_k z <= 0
    r0 = block(n_jt, -np.inf, 0.0, "bandwidth")
    add(r0 + jt_off[idx.y_job] + idx.y_t - a[idx.y_job], cy, inst.worker_gbps[idx.y_job])
    add(r0 + jt_off[idx.z_job] + idx.z_t - a[idx.z_job], cz, -inst.ps_gbps[idx.z_job])
    # PSs <= workers
    r0 = block(n_jt, -np.inf, 0.0, "ps_le_workers")
    add(r0 + jt_off[idx.z_job] + idx.z_t - a[idx.z_job], cz, 1.0)
    add(r0 + jt_off[idx.y_job] + idx.y_t - a[idx.y_job], cy, -1.0)
    if server_link:
        # y_ih(t) <= u_ih sum_{t' >= t} c_i(t')  (u_ih = the bound of y_ih), one row per y column
        u = np.minimum(inst.worker_fit()[idx.y_job, idx.y_h], inst.chunks[idx.y_job]).astype(float)
        r0 = block(len(idx.y_job), -np.inf, 0.0, "server_link")
        add(r0 + np.arange(len(idx.y_job)), cy, 1.0)
        # c_i(t') enters the rows of y columns of job i with slot <= t'
        for i in np.unique(idx.c_job):
            ys = np.flatnonzero(idx.y_job == i)
            cs = np.flatnonzero(idx.c_job == i)
            hit = idx.y_t[ys][:, None] <= idx.c_t[cs][None, :]
            rr, cc_ = np.nonzero(hit)
            add(r0 + ys[rr], cc[cs[cc_]], -u[ys[rr]])
    if cumulative_work:
        # work done by slot t >= R_i * [completed by t]:  sum_{s <= t} Y_i(s) - R_i sum_{t' <= t} c_i(t') >= 0
        rows_ct = len(idx.c_job)
        r0 = block(rows_ct, 0.0, np.inf, "cumulative_work")
        for i in np.unique(idx.c_job):
            ys = np.flatnonzero(idx.y_job == i)
            cs = np.flatnonzero(idx.c_job == i)
            hit_y = idx.y_t[ys][None, :] <= idx.c_t[cs][:, None]
            rr, kk = np.nonzero(hit_y)
            add(r0 + cs[rr], cy[ys[kk]], 1.0)
            hit_c = idx.c_t[cs][None, :] <= idx.c_t[cs][:, None]
            rr, kk = np.nonzero(hit_c)
            add(r0 + cs[rr], cc[cs[kk]], -work[i])
    if symmetry:
        # identical servers s < s' (consecutive in their class): load_s(t) >= load_s'(t)
        for (job, t, s, cols_, dem, cap, cls, label) in (
                (idx.y_job, idx.y_t, idx.y_h, cy, inst.worker_demand, inst.worker_cap, inst.worker_class, "worker_symmetry"),
                (idx.z_job, idx.z_t, idx.z_k, cz, inst.ps_demand, inst.ps_cap, inst.ps_class, "ps_symmetry")):
            S = len(cls)
            nxt = np.full(S, -1)
            for c in np.unique(cls):
                members = np.flatnonzero(cls == c)
                nxt[members[:-1]] = members[1:]
            prev = np.full(S, -1)
            prev[nxt[nxt >= 0]] = np.flatnonzero(nxt >= 0)
            pair_row = np.cumsum(nxt >= 0) - (nxt >= 0)          # row of pair (s, nxt[s]) per slot
            r0 = block(int((nxt >= 0).sum()) * T, 0.0, np.inf, label)
            top = cap.max(axis=0)
            key = (dem / np.where(top > 0, top, 1.0)).sum(axis=1)           # load of one unit
            first = nxt[s] >= 0
            add(r0 + pair_row[s[first]] * T + t[first] - 1, cols_[first], key[job[first]])
            second = prev[s] >= 0
            add(r0 + pair_row[prev[s[second]]] * T + t[second] - 1, cols_[second], -key[job[second]])
    M, lo, hi = rb.matrix(idx.n_cols)
    # objective and bounds; c columns of a job are its slots t_min..T in order
    c = np.zeros(idx.n_cols)
    starts = np.searchsorted(idx.c_job, np.unique(idx.c_job))
    for i, lo_, hi_ in zip(idx.c_job[starts].tolist(), starts.tolist(), [*starts[1:].tolist(), len(cc)]):
        c[lo_:hi_] = inst.utility_of(i, idx.c_t[lo_:hi_] - a[i] + 1)
    ub = np.ones(idx.n_cols)
    ub[cy] = np.minimum(inst.worker_fit()[idx.y_job, idx.y_h], inst.chunks[idx.y_job])
    zmax = np.array([int(inst.ps_needed(i, int(inst.chunks[i]))) for i in range(n)], dtype=np.int64)
    ub[cz] = np.minimum(inst.ps_fit()[idx.z_job, idx.z_k], zmax[idx.z_job])
    integrality = np.zeros(idx.n_cols, np.int32) if relax else np.ones(idx.n_cols, np.int32)
    mf = MatrixForm(c, M, lo, hi, np.zeros(idx.n_cols), ub.astype(float), integrality, "max", 0)
    idx = OasisIndex(*[getattr(idx, f) for f in ("c_job", "c_t", "y_job", "y_t", "y_h", "z_job", "z_t", "z_k")],
                     tuple(f"{label}[{start}:{start + count}]" for label, start, count in rb.names))
    return mf, idx


def schedule_from_columns(inst: OasisInstance, idx: OasisIndex, x: np.ndarray) -> OasisSchedule:
    """The schedule of a column vector (rounded); completion = the last slot with workers."""
    x = np.rint(np.asarray(x, dtype=float)).astype(np.int64)
    y = np.zeros((inst.n_jobs, inst.horizon, inst.n_worker_servers), np.int64)
    z = np.zeros((inst.n_jobs, inst.horizon, inst.n_ps_servers), np.int64)
    y[idx.y_job, idx.y_t - 1, idx.y_h] = x[idx.y0:idx.z0]
    z[idx.z_job, idx.z_t - 1, idx.z_k] = x[idx.z0:]
    return schedule_from_dense(inst, y, z)


def columns_from_schedule(inst: OasisInstance, idx: OasisIndex, sched: OasisSchedule) -> np.ndarray:
    """A column vector for a schedule (a warm start for the MILP); entries off the index are dropped.
    Vectorised (keys looked up by ``searchsorted``): 3.1M columns took 6.6 s in Python dicts."""
    x = np.zeros(idx.n_cols)
    done = np.flatnonzero(sched.admitted)
    k = _positions((idx.c_job, idx.c_t), (done, sched.completion[done]))
    x[idx.c0 + k[k >= 0]] = 1.0
    for rows, job, t, s, off in ((sched.workers, idx.y_job, idx.y_t, idx.y_h, idx.y0),
                                 (sched.ps, idx.z_job, idx.z_t, idx.z_k, idx.z0)):
        rows = np.asarray(rows, dtype=np.int64).reshape(-1, 4)
        k = _positions((job, t, s), (rows[:, 0], rows[:, 1], rows[:, 2]))
        x[off + k[k >= 0]] = rows[k >= 0, 3]
    return x


def _positions(keys: tuple[np.ndarray, ...], query: tuple[np.ndarray, ...]) -> np.ndarray:
    """Index of each query tuple among the (distinct) key tuples, -1 where absent (entries >= 0)."""
    keys = [np.asarray(a, dtype=np.int64) for a in keys]
    query = [np.asarray(a, dtype=np.int64) for a in query]
    if keys[0].size == 0 or query[0].size == 0:
        return np.full(query[0].size, -1, dtype=np.int64)
    dims = [int(max(a.max(initial=0), b.max(initial=0))) + 1 for a, b in zip(keys, query)]
    flat = np.ravel_multi_index(keys, dims)
    want = np.ravel_multi_index(query, dims)
    order = np.argsort(flat, kind="stable")
    at = np.minimum(np.searchsorted(flat[order], want), flat.size - 1)
    found = flat[order[at]] == want
    return np.where(found, order[at], -1)


def build_pyomo(inst: OasisInstance):
    """Pyomo model of the offline MILP (no symmetry rows), with variables ``C[i,t]``, ``Y[i,t,h]``, ``Z[i,t,k]``."""
    import pyomo.environ as pyo

    a, tmin, ok = _windows(inst)
    T, H, K = inst.horizon, inst.n_worker_servers, inst.n_ps_servers
    fw, fp = inst.worker_fit(), inst.ps_fit()
    work, N = inst.work(), inst.chunks
    zmax = [int(inst.ps_needed(i, int(N[i]))) for i in range(inst.n_jobs)]
    m = pyo.ConcreteModel(name=inst.name or "oasis")
    jobs = [int(i) for i in np.flatnonzero(ok)]
    m.JT = pyo.Set(dimen=2, initialize=[(i, t) for i in jobs for t in range(int(a[i]), T + 1)])
    m.CT = pyo.Set(dimen=2, initialize=[(i, t) for i in jobs for t in range(int(tmin[i]), T + 1)])
    m.YI = pyo.Set(dimen=3, initialize=[(i, t, h) for (i, t) in m.JT for h in range(H) if fw[i, h] > 0])
    m.ZI = pyo.Set(dimen=3, initialize=[(i, t, k) for (i, t) in m.JT for k in range(K) if fp[i, k] > 0])
    m.C = pyo.Var(m.CT, domain=pyo.Binary)
    m.Y = pyo.Var(m.YI, domain=pyo.NonNegativeIntegers, bounds=lambda m, i, t, h: (0, min(int(fw[i, h]), int(N[i]))))
    m.Z = pyo.Var(m.ZI, domain=pyo.NonNegativeIntegers, bounds=lambda m, i, t, k: (0, min(int(fp[i, k]), zmax[i])))
    f = {(i, t): float(inst.utility_of(i, t - a[i] + 1)) for (i, t) in m.CT}
    m.objective = pyo.Objective(expr=sum(f[it] * m.C[it] for it in m.CT), sense=pyo.maximize)
    Ysum = {(i, t): sum(m.Y[i, t, h] for h in range(H) if (i, t, h) in m.YI) for (i, t) in m.JT}
    Zsum = {(i, t): sum(m.Z[i, t, k] for k in range(K) if (i, t, k) in m.ZI) for (i, t) in m.JT}
    m.work = pyo.Constraint(jobs, rule=lambda m, i: sum(Ysum[i, t] for t in range(int(a[i]), T + 1))
                            >= int(work[i]) * sum(m.C[i, t] for t in range(int(tmin[i]), T + 1)))
    m.one = pyo.Constraint(jobs, rule=lambda m, i: sum(m.C[i, t] for t in range(int(tmin[i]), T + 1)) <= 1)
    m.link = pyo.Constraint(m.JT, rule=lambda m, i, t: Ysum[i, t] <= int(N[i]) * sum(
        m.C[i, u] for u in range(max(t, int(tmin[i])), T + 1)))
    m.bandwidth = pyo.Constraint(m.JT, rule=lambda m, i, t: float(inst.worker_gbps[i]) * Ysum[i, t] <= float(inst.ps_gbps[i]) * Zsum[i, t])
    m.ps_le_workers = pyo.Constraint(m.JT, rule=lambda m, i, t: Zsum[i, t] <= Ysum[i, t])
    R = range(len(inst.resources))

    def cap_rule(vars_, index, dem, cap):
        def rule(m, s, t, r):
            terms = [float(dem[i, r]) * vars_[i, t, s] for i in jobs if (i, t, s) in index and dem[i, r] > 0]
            return sum(terms) <= float(cap[s, r]) if terms else pyo.Constraint.Skip
        return rule

    m.worker_capacity = pyo.Constraint(range(H), range(1, T + 1), R, rule=cap_rule(m.Y, m.YI, inst.worker_demand, inst.worker_cap))
    m.ps_capacity = pyo.Constraint(range(K), range(1, T + 1), R, rule=cap_rule(m.Z, m.ZI, inst.ps_demand, inst.ps_cap))
    return m


def build_cvxpy(inst: OasisInstance):
    """CVXPY problem of the offline MILP over dense tensors (no symmetry rows).

    Returns (problem, C (n, T) boolean, Y list over slots of (n, H) integer, Z list of (n, K)).
    Slots and servers a job may not use are fixed to 0 by its upper bounds.
    """
    import cvxpy as cp

    a, tmin, ok = _windows(inst)
    n, T, H, K = inst.n_jobs, inst.horizon, inst.n_worker_servers, inst.n_ps_servers
    N = inst.chunks.astype(float)
    zmax = np.array([float(inst.ps_needed(i, int(N[i]))) for i in range(n)])
    t_idx = np.arange(1, T + 1)
    c_mask = (t_idx[None, :] >= tmin[:, None]) & ok[:, None]
    F = np.array([[float(inst.utility_of(i, t - a[i] + 1)) if c_mask[i, t - 1] else 0.0 for t in t_idx] for i in range(n)])
    C = cp.Variable((n, T), boolean=True, name="C")
    Y = [cp.Variable((n, H), integer=True, name=f"Y{t}") for t in t_idx]
    Z = [cp.Variable((n, K), integer=True, name=f"Z{t}") for t in t_idx]
    yub = np.minimum(inst.worker_fit(), N[:, None])
    zub = np.minimum(inst.ps_fit(), zmax[:, None])
    cons = [C <= c_mask.astype(float), cp.sum(C, axis=1) <= 1]
    total_y = 0
    for k, t in enumerate(t_idx):
        live = ((t >= a) & ok).astype(float)[:, None]
        cons += [Y[k] >= 0, Y[k] <= yub * live, Z[k] >= 0, Z[k] <= zub * live]
        ys, zs = cp.sum(Y[k], axis=1), cp.sum(Z[k], axis=1)
        later = cp.sum(C[:, k:], axis=1)
        cons += [ys <= cp.multiply(N, later),
                 cp.multiply(inst.worker_gbps, ys) <= cp.multiply(inst.ps_gbps, zs),
                 zs <= ys,
                 inst.worker_demand.T @ Y[k] <= inst.worker_cap.T,
                 inst.ps_demand.T @ Z[k] <= inst.ps_cap.T]
        total_y = total_y + ys
    cons.append(total_y >= cp.multiply(inst.work().astype(float), cp.sum(C, axis=1)))
    return cp.Problem(cp.Maximize(cp.sum(cp.multiply(F, C))), cons), C, Y, Z


# ----------------------------------------------------------------------------- pooled relaxation

@dataclass
class PooledIndex:
    """Column map of :func:`build_pooled_matrix`: run indicators ``u`` then pooled workers ``Y``.

    ``slack`` is the utility the truncation may leave out (added to the bound to keep it valid).
    """

    u_job: np.ndarray
    u_t: np.ndarray
    y_job: np.ndarray
    y_t: np.ndarray
    slack: float
    jobs: np.ndarray


def build_pooled_matrix(inst: OasisInstance, *, eps: float = 1e-6, relax: bool = False):
    r"""Pooled-server relaxation of the offline MILP; its optimum (plus ``slack``) bounds OPT from above.

    Every server of a kind is merged into one pool with the summed capacity, PSs are priced at
    the fewest that serve the workers, :math:`Z_i(t) = (b_i/B_i) Y_i(t)`, and workers are
    continuous. With the run indicator :math:`u_i(t) = \sum_{t' \ge t} c_i(t')` (so
    :math:`c_i(t) = u_i(t) - u_i(t+1)`, which keeps the LP of the one-hot form and has linearly
    many nonzeros):

    .. math::

        \max \sum_i \Big[ f_i(t^{min}_i - a_i + 1)\, u_i(t^{min}_i)
              + \sum_{t > t^{min}_i} \big(f_i(t - a_i + 1) - f_i(t - a_i)\big)\, u_i(t) \Big]

        \text{s.t.}\; \sum_t Y_i(t) \ge R_i\, u_i(t^{min}_i),\quad
        Y_i(t) \le \bar Y_i\, u_i(\max(t, t^{min}_i)),\quad u_i(t+1) \le u_i(t),

        \sum_i w_i^r Y_i(t) \le \sum_h c_h^r,\qquad
        \sum_i s_i^r (b_i/B_i)\, Y_i(t) \le \sum_k c_k^r

    with :math:`\bar Y_i = \min(N_i, \sum_h \lfloor c_h / w_i \rfloor, \lfloor (B_i/b_i) \sum_k \lfloor c_k / s_i \rfloor \rfloor)`.
    Any schedule of §3.1 maps to a feasible point of equal utility (sum its workers over servers),
    so the optimum is an upper bound. For size, a job is kept only while
    :math:`f_i \ge` ``eps`` :math:`\cdot \max_j f_j(D^{min}_j)`: dropping a job, or the completions
    after its utility falls below that threshold, removes at most that utility, which ``slack``
    adds back. Returns (MatrixForm, PooledIndex).
    """

    a, tmin, ok = _windows(inst)
    T = inst.horizon
    n = inst.n_jobs
    fmax = np.zeros(n)
    fmax[ok] = [float(inst.utility_of(int(i), tmin[i] - a[i] + 1)) for i in np.flatnonzero(ok)]
    thr = eps * fmax.max() if ok.any() else 0.0
    last = np.full(n, -1, dtype=np.int64)
    kept_f = []                                  # utility of each kept job at completion slots t_min..last
    for i in np.flatnonzero(ok & (fmax > thr)):
        f = inst.utility_of(int(i), np.arange(tmin[i], T + 1) - a[i] + 1)
        last[i] = tmin[i] + np.flatnonzero(f > thr)[-1]
        kept_f.append(f[: last[i] - tmin[i] + 1])
    jobs = np.flatnonzero(last >= 0)
    slack = float(fmax[ok & (last < 0)].sum() + thr * len(jobs))
    u_job, u_t = _grid(jobs, tmin[jobs], last[jobs])
    y_job, y_t = _grid(jobs, a[jobs], last[jobs])
    nu, ny = len(u_job), len(y_job)
    # column of u_i(t): u_off[i] + t - tmin_i
    u_len = np.zeros(n, np.int64)
    u_len[jobs] = last[jobs] - tmin[jobs] + 1
    u_off = np.cumsum(u_len) - u_len
    cu = np.arange(nu)
    cy = nu + np.arange(ny)
    ps_total = np.floor(inst.ps_gbps / inst.worker_gbps * inst.ps_fit().sum(axis=1) + 1e-9)
    ybar = np.minimum.reduce([inst.chunks.astype(float), inst.worker_fit().sum(axis=1).astype(float), ps_total])
    work = inst.work().astype(float)
    rb = _Rows()
    add, block = rb.add, rb.block
    pos = np.zeros(n, np.int64)
    pos[jobs] = np.arange(len(jobs))
    r0 = block(len(jobs), 0.0, np.inf, "work")
    add(r0 + pos[y_job], cy, 1.0)
    add(r0 + pos[jobs], u_off[jobs], -work[jobs])
    r0 = block(ny, -np.inf, 0.0, "link")
    add(r0 + np.arange(ny), cy, 1.0)
    add(r0 + np.arange(ny), u_off[y_job] + np.maximum(y_t, tmin[y_job]) - tmin[y_job], -ybar[y_job])
    step = u_t > tmin[u_job]                                            # u_i(t) <= u_i(t-1)
    r0 = block(int(step.sum()), -np.inf, 0.0, "run_monotone")
    add(r0 + np.arange(step.sum()), cu[step], 1.0)
    add(r0 + np.arange(step.sum()), cu[step] - 1, -1.0)
    Rn = len(inst.resources)
    ps_per_worker = inst.ps_demand * (inst.worker_gbps / inst.ps_gbps)[:, None]
    for dem, cap, label in ((inst.worker_demand, inst.worker_cap.sum(axis=0), "worker_pool"),
                            (ps_per_worker, inst.ps_cap.sum(axis=0), "ps_pool")):
        r0 = block(T * Rn, -np.inf, np.tile(cap, T), label)              # row (t - 1) * R + r
        d = dem[y_job]
        nz = np.argwhere(d > 0)
        add(r0 + (y_t[nz[:, 0]] - 1) * Rn + nz[:, 1], cy[nz[:, 0]], d[nz[:, 0], nz[:, 1]])
    M, lo, hi = rb.matrix(nu + ny)
    c = np.zeros(nu + ny)
    f = np.concatenate(kept_f) if nu else np.zeros(0)
    first = ~step
    c[cu[first]] = f[first]
    c[cu[step]] = f[step] - f[np.flatnonzero(step) - 1]
    ub = np.concatenate([np.ones(nu), ybar[y_job]])
    integrality = np.concatenate([np.full(nu, 0 if relax else 1), np.zeros(ny)]).astype(np.int32)
    mf = MatrixForm(c, M, lo, hi, np.zeros(nu + ny), ub, integrality, "max", 0)
    return mf, PooledIndex(u_job, u_t, y_job, y_t, slack, jobs)

