"""What a simulated run produced, and the figures every paper reports from it.

Per job j (trace order): arrival a_j, first start s_j, completion c_j (NaN if it never started or
finished), JCT_j = c_j − a_j, queueing delay q_j = s_j − a_j. Over the completed jobs: average,
median, p95 and p99 JCT; makespan = max_j c_j − min_j a_j; total utility Σ_j U_j(JCT_j) over jobs
that carry a utility (OASiS, MODELS.md §3).

**Fairness** is Jain's index of the jobs' normalised progress rates x_j = JCT_j^iso / JCT_j, where
JCT_j^iso is the job's JCT alone on the empty cluster at its largest size that fits:
J = (Σ x_j)² / (n Σ x_j²) ∈ (0, 1], 1 when every job is slowed down equally.

**Utilisation** of resource r over [t_0, t_end] is Σ_k used_k^r (t_k' − t_k) / (C^r (t_end − t_0)),
C^r the cluster total, over the intervals k between events (``segments``).

Decision latency is the wall time of each ``policy.schedule`` call (``decision_latency_ms``: median,
p99, max); ``decision_gap`` (mean and max of the finite ones, how many, how many infinite) summarises the certified gaps of the decisions of
a policy that records them (dlsched/policies/budget.py), None otherwise, and ``decisions_uncertified`` how many
of its decisions answered with no gap (left out of ``decision_gap``; None for a policy that records none); engine overhead is the
engine's own time (state, apply, advance) per event, apart from the policy's. Peak memory is the
process's largest resident set so far when the result was taken (``resource.getrusage``
``ru_maxrss``, MiB; None where the platform has no ``resource`` module).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

from dlsched.result import jain, json_safe
from dlsched.provenance import environment


def _q(x: np.ndarray, q: float) -> float | None:
    return float(np.percentile(x, q)) if x.size else None


def _mean(x: np.ndarray) -> float | None:
    return float(x.mean()) if x.size else None


def _gap_summary(gap: np.ndarray) -> dict | None:
    """``decision_gap``: mean and max of the finite gaps, how many decisions carry a gap, and how many of those gaps
    are infinite (a decision that ran nothing of its model against a positive bound: oasis's cut pricing). Apart,
    since JSON has no infinity: an infinite max was written as null, which reads as no gap at all."""
    if not gap.size:
        return None
    finite = gap[np.isfinite(gap)]
    return {"mean": _mean(finite), "max": float(finite.max()) if finite.size else None, "decisions": int(gap.size),
            "infinite": int(gap.size - finite.size)}


@dataclass
class SimResult:
    """A simulated run. Arrays are indexed by trace index; NaN marks "never happened"."""

    policy: str
    status: str                   # completed | max_time | time_limit | stalled | stopped
    message: str
    trace: str
    cluster: str
    names: tuple[str, ...]
    arrival: np.ndarray
    first_start: np.ndarray
    completion: np.ndarray
    isolated_jct: np.ndarray
    utility: np.ndarray           # U_j(JCT_j) for completed jobs with a utility, else NaN
    unschedulable: dict[str, str]
    resources: tuple[str, ...]
    capacity_total: np.ndarray
    segments: np.ndarray          # (k, 2) start and end of each interval between events
    segment_used: np.ndarray      # (k, R) resources held in that interval
    decision_seconds: np.ndarray
    engine_seconds: float
    n_events: int
    sim_time: float
    wall_seconds: float
    seed: int = 0
    restart_seconds: float = 0.0
    max_time: float | None = None
    peak_memory_mib: float | None = None
    decision_gaps: np.ndarray = field(default_factory=lambda: np.zeros(0))   # certified gap per decision, where given
    decisions_uncertified: int | None = None      # decisions that answered with no gap (None: the policy records none)
    extra: dict = field(default_factory=dict)

    @property
    def jct(self) -> np.ndarray:
        return self.completion - self.arrival

    @property
    def queueing_delay(self) -> np.ndarray:
        return self.first_start - self.arrival

    @property
    def completed(self) -> np.ndarray:
        return ~np.isnan(self.completion)

    def makespan(self) -> float | None:
        c = self.completion[self.completed]
        return float(c.max() - self.arrival.min()) if c.size else None

    def utilisation(self) -> dict[str, float | None]:
        """Time-averaged share of each resource held, from the first arrival to the end of the run."""
        seg, used = self.segments, self.segment_used
        keep = seg[:, 1] > self.arrival.min() if seg.size else np.zeros(0, bool)
        seg, used = seg[keep], used[keep]
        if not seg.size:
            return {r: None for r in self.resources}
        dt = seg[:, 1] - np.maximum(seg[:, 0], self.arrival.min())
        span = dt.sum()
        out = {}
        for r, name in enumerate(self.resources):
            cap = self.capacity_total[r]
            out[name] = float((used[:, r] * dt).sum() / (cap * span)) if cap > 0 and span > 0 else None
        return out

    def utilisation_series(self, resource: str = "gpu") -> tuple[np.ndarray, np.ndarray]:
        """(times, share held) as a step function: share[k] holds over [times[k], times[k+1])."""
        r = self.resources.index(resource)
        cap = self.capacity_total[r]
        if not self.segments.size:
            return np.zeros(0), np.zeros(0)
        return self.segments[:, 0], self.segment_used[:, r] / cap if cap > 0 else np.zeros(len(self.segments))

    def summary(self) -> dict:
        """The headline metrics as plain JSON values (see the module docstring)."""
        done = self.completed
        jct = self.jct[done]
        qd = self.queueing_delay[~np.isnan(self.first_start)]
        dec = self.decision_seconds
        gap = self.decision_gaps
        u = self.utility[~np.isnan(self.utility)]
        return {
            "policy": self.policy, "status": self.status, "message": self.message,
            "trace": self.trace, "cluster": self.cluster,
            "jobs": len(self.names), "completed": int(done.sum()), "unschedulable": len(self.unschedulable),
            "avg_jct": _mean(jct), "median_jct": _q(jct, 50), "p95_jct": _q(jct, 95), "p99_jct": _q(jct, 99),
            "makespan": self.makespan(), "avg_queueing_delay": _mean(qd),
            "jain_fairness": jain(self.isolated_jct[done] / jct) if jct.size else None,
            "fairness_of": "JCT_iso / JCT (normalised progress rate)",
            "total_utility": float(u.sum()) if u.size else None,
            "utilisation": self.utilisation(),
            "decision_calls": int(dec.size), "decision_median_s": _q(dec, 50), "decision_p95_s": _q(dec, 95),
            "decision_latency_ms": {"median": _q(dec * 1e3, 50), "p99": _q(dec * 1e3, 99),
                                    "max": float(dec.max() * 1e3) if dec.size else None},
            "decision_gap": _gap_summary(gap),
            "decisions_uncertified": self.decisions_uncertified,
            "engine_seconds": self.engine_seconds, "events": self.n_events,
            "engine_per_event_s": self.engine_seconds / self.n_events if self.n_events else None,
            "sim_time": self.sim_time, "wall_seconds": self.wall_seconds, "peak_memory_mib": self.peak_memory_mib,
            "seed": self.seed, "restart_seconds": self.restart_seconds, "max_time": self.max_time,
        }

    def jobs_table(self) -> list[dict]:
        """One row per job: name, arrival, first start, completion, JCT, queueing delay (None = never)."""
        def v(x):
            return None if math.isnan(x) else float(x)

        return [{"name": n, "arrival": v(a), "first_start": v(s), "completion": v(c), "jct": v(c - a), "queueing_delay": v(s - a),
                 "unschedulable": self.unschedulable.get(n)}
                for n, a, s, c in zip(self.names, self.arrival.tolist(), self.first_start.tolist(), self.completion.tolist())]

    def to_json(self, *, jobs: bool = True, **extra) -> str:
        """The summary, the per-job rows and the environment (dlsched.provenance.environment()) as strict
        JSON (a NaN or infinite figure, such as ``--max-time inf``, is written as null)."""

        doc = {**self.summary(), "environment": environment(), **self.extra, **extra}
        if jobs:
            doc["job_results"] = self.jobs_table()
            doc["unschedulable_reasons"] = self.unschedulable
        return json.dumps(json_safe(doc), allow_nan=False)
