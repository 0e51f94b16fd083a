"""``dlsched bench dl2``: the DL2 acceptance study (MODELS.md §6, docs/dl2.md).

On validation traces of DL2's job mix (``dl2_trace`` seeds 1..N; training used 1000-1047 and the
checkpoint was picked on 2000-2002, so none of these was seen in training) the shipped DL2
network, DRF, Optimus and SMD are simulated on the same cluster in the same run:

* ``jct_reduction_vs_drf`` = 1 − mean_k JCT̄_k(DL2) / mean_k JCT̄_k(DRF) (JCT̄_k: average JCT of
  trace k), likewise vs Optimus and SMD (the paper: 44.1 % and 17.5 % vs DRF and Optimus);
* ``agreement``: fraction of its teacher's actions (the checkpoint's, e.g. Optimus) the network
  takes on the first three validation traces (the warm-up model's figure on held-out traces is in ``provenance``);
* ``inference_ms_p50`` / ``_p95`` / ``_max``: wall time of one network inference (one action), CPU:
  the median over the runs of each run's median (95th percentile), and the largest (each result
  row keeps only its run's summary, :func:`pooled_latency`); ``inference_cpu_ms_p50`` / ``_p95`` /
  ``_max`` the same of its CPU time, which a loaded machine does not inflate;
* on ``--small`` tiny traces (5 jobs, 2 nodes) the average JCT against the exact time-indexed
  optimum (MODELS.md §2.4, HiGHS with ``--time-limit``): ``gap_to_optimum`` = JCT̄(DL2)/JCT̄(OPT) − 1;
* ``training``: seconds, episodes and the checkpoint's command (from its provenance);
* ``lower_bound``: the mean over the validation traces of lower bounds on each trace's average
  JCT (:mod:`dlsched.sim.bounds`: alone, SRPT per resource, the time-indexed LP), each policy's
  mean over it, and ``max_reduction_vs_drf`` = 1 − bound / DRF: no schedule reduces DRF's
  average JCT by more;
* ``other_teachers``: warm-up agreement and tuning figures of the runs not shipped;
* the checkpoint's teacher is simulated beside the baselines when it is none of them
  (``jct_reduction_vs_<teacher>``): how much of DL2's figure is its teacher's;
* ``slotted``: DRF and Optimus deciding only at DL2's slot boundaries, and, for a checkpoint that
  decides at arrivals and completions too (``decide_at``), DL2 deciding only at the boundaries.

``--quick`` (:data:`QUICK`): 5 validation traces, the agreement on one, no tiny traces. ``--json``
prints exactly one JSON object. The results are written as they come into ``--out`` (default
``results/dl2-DIGEST/``): the simulation and study cells as resumable results files, the summary
so far as ``summary.json`` after every phase; a run stopped by SIGTERM or Ctrl-C keeps them.
The simulations are the cells of the suite file ``dl2`` (``dlsched/bench/suites/dl2.toml``) with
these settings; the agreement and the small-trace study are the cells of the study suite
``dl2-studies`` (:func:`studies`).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from dlsched.bench import environment, register_suite
from dlsched.bench.runner import run_suite
from dlsched.bench.suite import suite_from_definition
from dlsched.bench.tasks import load_definition, results_of, with_grid, with_params, with_settings
from dlsched.errors import DlschedError
from dlsched.instance.synthetic import dl2_cluster, dl2_trace
from dlsched.registry import make_policy, policy_names
from dlsched.sim.bounds import trace_lower_bound
from dlsched.sim.engine import simulate
from dlsched.sim.speed import TableSpeed

BASELINES = ("drf", "optimus", "smd")
#: Optimus with the NNLS speed estimator (``speed_model="nnls"``, the default before the authors'
#: estimator replaced it): on DL2's mix it is the stronger of the two, so DL2 is set beside both
OPTIMUS_NNLS = {"name": "optimus", "label": "optimus-nnls", "params": {"speed_model": "nnls"}}


def _run(trace, cluster, policy, speed) -> tuple[float | None, str]:
    try:
        res = simulate(trace, cluster, policy, speed)
    except DlschedError as exc:
        return None, str(exc)
    if res.status != "completed":
        return None, f"{res.status}: {res.message}"
    return float(np.mean(res.jct)), ""


def _reduction(dl2: list, other: list) -> float | None:
    pairs = [(a, b) for a, b in zip(dl2, other) if a is not None and b is not None]
    if not pairs:
        return None
    a, b = np.array(pairs).T
    return float(1.0 - a.mean() / b.mean())


def study_suite(seeds, n_jobs: int, n_servers: int, checkpoint, teacher: dict | None = None):
    """The bundled ``dl2`` suite file (``dlsched/bench/suites/dl2.toml``) with these settings: DL2
    and the baselines, plus DL2's warm-up teacher (``{"name", "params"}``) when it is none of them,
    so that DL2 is set beside the policy it copied."""

    extra = [teacher] if teacher and teacher["name"] not in BASELINES and teacher["name"] in policy_names() else []
    return suite(seeds, n_jobs, n_servers, checkpoint, [b for b in BASELINES if b in policy_names()] + [OPTIMUS_NNLS] + extra)


def study(seeds, n_jobs: int, n_servers: int, checkpoint, progress: bool, teacher: dict | None = None,
          out=None) -> dict:
    """DL2 and the baselines on the validation traces (:func:`study_suite`), each finished cell
    appended to the results file ``out`` (resumed if it holds some already; ``None``: kept in memory)."""

    s = study_suite(seeds, n_jobs, n_servers, checkpoint, teacher)
    return summarise_suite(run_suite(s, out, progress=progress), s)


def summarise_suite(rows: list[dict], suite) -> dict:
    """JCTs, reductions and inference latency from the rows of a dl2 suite (``dlsched bench run dl2``)."""
    names = list(dict.fromkeys(r["policy"] for r in rows if r["policy"] != "dl2"))
    seeds = list(dict.fromkeys(r["trace_seed"] for r in rows))
    n_jobs = suite.definition["traces"][0].get("params", {}).get("n_jobs")
    n_servers = suite.definition.get("cluster", {}).get("params", {}).get("n_servers")
    jct: dict[str, list] = {"dl2": [], **{b: [] for b in names}}
    errors: dict[str, str] = {}
    latency: list[dict] = []
    for r in rows:
        jct[r["policy"]].append(r.get("avg_jct") if r["status"] == "completed" else None)
        if (r.get("inference_ms") or {}).get("count"):
            latency.append(r["inference_ms"])
        if r["status"] != "completed":
            errors[f"{r['policy']}/{r['trace_seed']}"] = r.get("exception") or f"{r['status']}: {r.get('message')}"
    out = {"seeds": list(seeds), "n_jobs": n_jobs, "n_servers": n_servers,
           "mean_jct": {k: (float(np.mean([x for x in v if x is not None])) if any(x is not None for x in v) else None)
                        for k, v in jct.items()},
           "per_trace_jct": jct, "errors": errors, **pooled_latency(latency)}
    for b in names:
        out[f"jct_reduction_vs_{b}"] = _reduction(jct["dl2"], jct[b])
    return out


def pooled_latency(runs: list[dict]) -> dict:
    """The latency figures of several runs from their summaries (DL2Policy.inference_stats): the
    median of the runs' medians, the median of their 95th percentiles, the largest time, the count; of
    the wall time and, where the rows recorded it, of the CPU time."""
    out = {}
    for key in ("", "cpu_"):       # wall time, then CPU time
        got = [r for r in runs if r.get(f"{key}p50") is not None]
        if key and not got:
            continue            # rows written before the CPU time was recorded: no CPU figures, rather than None
        out[f"inference_{key}ms_p50"] = float(np.median([r[f"{key}p50"] for r in got])) if got else None
        out[f"inference_{key}ms_p95"] = float(np.median([r[f"{key}p95"] for r in got])) if got else None
        out[f"inference_{key}ms_max"] = float(max(r[f"{key}max"] for r in got)) if got else None
    out["inferences"] = int(sum(r["count"] for r in runs))
    return out


def suite(seeds, n_jobs: int, n_servers: int, checkpoint, baselines):
    """The bundled ``dl2`` suite file with these traces, nodes, checkpoint and baselines (names, or
    suite policy entries ``{"name", "params"}``)."""
    doc, path = load_definition("dl2")
    dl2 = {"name": "dl2", **({} if checkpoint is None else {"params": {"checkpoint": str(checkpoint)}})}
    doc = {**doc, "cluster": {"generator": "dl2", "params": {"n_servers": n_servers}},
           "traces": [{**doc["traces"][0], "seeds": list(seeds), "params": {"n_jobs": n_jobs}}],
           "policies": [dl2, *(b if isinstance(b, dict) else {"name": b} for b in baselines)]}
    return suite_from_definition(doc, path, source=f"{path} (with the command line's settings)")


def bound_study(seeds, n_jobs: int, n_servers: int, mean_jct: dict, slot_seconds: float) -> dict:
    """Lower bounds on the average JCT of every validation trace (:mod:`dlsched.sim.bounds`) and how
    far each policy's mean is above their mean; ``max_reduction_vs_drf`` = 1 − bound / DRF is the
    largest reduction against DRF that any schedule could reach."""
    cluster, speed = dl2_cluster(n_servers), TableSpeed()
    each = [trace_lower_bound(dl2_trace(n_jobs, seed=s), cluster, speed, slot_seconds=slot_seconds) for s in seeds]
    per = [e["bound"] for e in each]
    lb = float(np.mean(per))
    out = {"mean": lb, "per_trace": per, "alone": float(np.mean([e["alone"] for e in each])),
           "capacity": {r: float(np.mean([e["capacity"][r] for e in each])) for r in each[0]["capacity"]},
           "lp": float(np.mean([e["lp"] for e in each])) if all(e["lp"] is not None for e in each) else None,
           "lp_slot_seconds": slot_seconds}
    for k, v in mean_jct.items():
        if v is not None:
            out[f"{k}_over_bound"] = v / lb
    for b in ("drf", "optimus"):
        if mean_jct.get(b):
            out[f"max_reduction_vs_{b}"] = 1.0 - lb / mean_jct[b]
    return out


def other_teachers() -> dict:
    """Warm-up and tuning figures of the runs that were not shipped, from their provenance files
    (``dlsched/rl/checkpoints/runs/*.json``, written by ``dlsched train dl2`` beside their checkpoints)."""
    from dlsched.rl.policy import DEFAULT_CHECKPOINT

    out = {}
    for path in sorted((DEFAULT_CHECKPOINT.parent / "runs").glob("*.json")):
        prov = json.loads(path.read_text())
        out[path.stem] = {"command": prov.get("command"), "teacher": prov.get("config", {}).get("teacher"),
                          "warmup_agreement_held_out": prov.get("agreement", {}).get("held_out"),
                          "warmup_agreement_held_out_by_action": prov.get("agreement", {}).get("held_out_by_action"),
                          **{k: prov.get(k) for k in ("teacher_tune_jct", "best_tune_jct", "best_episode",
                                                      "episodes_run", "training_seconds")}}
    return out


def agreement_task(seed: int, n_jobs: int, n_servers: int, teacher: str | None = None,
                   teacher_params: dict | None = None, checkpoint: str | None = None) -> dict:
    """On validation trace ``seed``: how many of its teacher's actions (the teacher replayed through
    DL2's environment, issued in the checkpoint's ``order``) the network's most likely action matches; a cell of the ``dl2-studies`` suite.
    ``teacher=None``: the checkpoint's own teacher and options (from its provenance)."""
    from dlsched.rl.env import DL2Env
    from dlsched.rl.policy import load_checkpoint
    from dlsched.rl.train import agreement, teacher_samples
    model = load_checkpoint(checkpoint)
    config = model.provenance.get("config", {})
    if teacher is None:
        teacher, teacher_params = config.get("teacher", "drf"), config.get("teacher_params")
    env = DL2Env([dl2_trace(n_jobs, seed=seed)], dl2_cluster(n_servers), TableSpeed(), model.spec)
    # the teacher's actions in the order the checkpoint was taught them (``train dl2 --order``)
    X, M, A, _ = teacher_samples(env, lambda: make_policy(teacher, **(teacher_params or {})), [0], 0.9,
                                 config.get("order", "share"))
    return {"seed": seed, "samples": len(A), "agreed": round(agreement(model, X, M, A) * len(A)) if len(A) else 0}


def slotted_study(seeds, n_jobs: int, n_servers: int, spec, baselines, dl2_jct: list, checkpoint=None) -> dict:
    """DRF and Optimus deciding only at DL2's slot boundaries: each one's allocation at a boundary,
    issued through DL2's environment (the warm-up's teacher replay, :func:`dlsched.rl.train.teacher_picker`)
    and held for the slot, as every scheduler runs in DL2's own slotted simulator. Mean JCT per
    policy, and DL2's reduction against each at the same decision interval: a checkpoint that
    decides at events too (``Spec.decide_at``) is also run deciding only at the boundaries (``dl2``),
    and that run is the one compared; else ``dl2_jct``, DL2's own run, is."""
    from dataclasses import replace

    from dlsched.rl.env import DL2Env
    from dlsched.rl.train import rollout, teacher_picker
    traces, cluster, speed = [dl2_trace(n_jobs, seed=s) for s in seeds], dl2_cluster(n_servers), TableSpeed()
    env = DL2Env(traces, cluster, speed, replace(spec, decide_at="slots"))
    out: dict = {"slot_seconds": spec.slot_seconds}
    if spec.decide_at != "slots":
        from dlsched.rl.policy import DL2Policy

        per = [_run(tr, cluster, DL2Policy(checkpoint, decide_at="slots"), speed)[0] for tr in traces]
        out["dl2"] = {"per_trace_jct": per, "mean_jct": float(np.mean(per)) if all(x is not None for x in per) else None}
        dl2_jct = per
    for b in baselines:
        per = []
        for k in range(len(seeds)):
            rollout(env, teacher_picker(env, lambda: make_policy(b)), 0.9, trace=k)
            res = env.result()
            per.append(float(np.mean(res.jct)) if bool(np.all(res.completed)) else None)
        out[b] = {"per_trace_jct": per, "mean_jct": float(np.mean(per)) if all(x is not None for x in per) else None}
        out[f"jct_reduction_vs_{b}"] = _reduction(dl2_jct, per)
    return out


def small_task(seed: int, time_limit: float, checkpoint: str | None = None) -> dict:
    """One tiny trace (5 jobs, 2 nodes, ``dl2_trace`` seed ``seed``): the exact time-indexed optimum
    (HiGHS within ``time_limit``), its lower bound, DL2 and DRF; a cell of the ``dl2-studies`` suite."""
    from dlsched.rl.policy import DL2Policy
    cluster, speed, tr = dl2_cluster(2), TableSpeed(), dl2_trace(5, seed=seed)
    t0 = time.monotonic()
    opt, err = _run(tr, cluster, make_policy("time-indexed", time_limit=time_limit), speed)
    row = {"seed": seed, "opt": opt, "opt_seconds": time.monotonic() - t0, "opt_error": err or None,
           "bound": trace_lower_bound(tr, cluster, speed, slot_seconds=600.0)["bound"]}
    for name, pol in (("dl2", DL2Policy(checkpoint)), ("drf", make_policy("drf"))):
        row[name], err = _run(tr, cluster, pol, speed)
        row[f"{name}_error"] = err or None
    return row


def studies(agreement_seeds, small_seeds, n_jobs: int, n_servers: int, checkpoint, teacher: dict,
            time_limit: float, progress: bool = False, out=None) -> dict:
    """The bundled ``dl2-studies`` suite with these settings, run by the one suite runner:
    ``agreement_with_teacher`` pooled over the traces' decisions (:func:`agreement_task`), and
    ``small``, DL2 and DRF against the exact time-indexed optimum on tiny traces (:func:`small_task`;
    ``None`` without small seeds)."""
    doc, path = load_definition("dl2-studies")
    doc = with_grid(with_settings(doc, time_limit=time_limit), "dl2.agreement", seed=list(agreement_seeds))
    doc = with_params(doc, "dl2.agreement", n_jobs=n_jobs, n_servers=n_servers, teacher=teacher["name"],
                      teacher_params=teacher.get("params") or None)
    small_seeds = list(small_seeds) if "time-indexed" in policy_names() else []
    doc = {**doc, "tasks": [t for t in doc["tasks"] if t["name"] != "dl2.small" or small_seeds]}
    doc = with_grid(doc, "dl2.small", seed=small_seeds or None)
    for task in ("dl2.agreement", "dl2.small"):
        doc = with_params(doc, task, checkpoint=None if checkpoint is None else str(checkpoint))
    rows = run_suite(suite_from_definition(doc, path, source=f"{path} (with the command line's settings)"), out,
                     progress=progress)
    agree = results_of(rows, "dl2.agreement")
    n = sum(r["samples"] for r in agree)
    traces = results_of(rows, "dl2.small")
    ok = [r for r in traces if r["opt"] and r["dl2"]]
    small = {"traces": traces, "time_limit": time_limit,
             "opt_over_bound": float(np.mean([r["opt"] for r in ok]) / np.mean([r["bound"] for r in ok])) if ok else None,
             "gap_to_optimum": float(np.mean([r["dl2"] for r in ok]) / np.mean([r["opt"] for r in ok]) - 1) if ok else None,
             "drf_gap_to_optimum": (float(np.mean([r["drf"] for r in ok if r["drf"]]) / np.mean([r["opt"] for r in ok]) - 1)
                                    if ok and all(r["drf"] for r in ok) else None)}
    return {"agreement_with_teacher": sum(r["agreed"] for r in agree) / n if n else None,
            "small": small if small_seeds else None,
            "errors": {r["cell"]: r["exception"] for r in rows if "exception" in r}}


#: what ``--quick`` and the full study run: validation traces, traces for the teacher agreement,
#: tiny traces against the exact optimum and its time limit (s). The quick run leaves the tiny
#: traces out: their exact solves take their whole minute each (at 10 s one found no schedule and
#: one stopped above DL2's JCT: no optimum to compare with)
QUICK = {"traces": 5, "agreement": 1, "small": 0, "time_limit": 60.0}
FULL = {"traces": 20, "agreement": 3, "small": 4, "time_limit": 60.0}
#: CPU seconds of one 60-job validation trace on 16 nodes, measured with ``time.process_time`` on
#: the 2-core development machine (for the estimate printed up front; scaled by jobs / 60)
CPU_PER_TRACE = {"dl2": 3.7, "drf": 0.2, "optimus": 3.3, "optimus-nnls": 3.4, "smd": 7.8, "teacher": 3.3,
                 "bound": 3.8, "slotted drf": 0.9, "slotted optimus": 5.0, "slotted dl2": 3.7, "agreement": 6.9}


def estimate(n: int, n_jobs: int, agreement: int, small: int, time_limit: float, teacher_extra: bool,
             decide_at: str) -> dict[str, float]:
    """CPU seconds each phase of the study is expected to take (:data:`CPU_PER_TRACE`); the small
    traces' exact solves at their time limit (they run in a child process: wall time, not this CPU's)."""
    c, k = CPU_PER_TRACE, n * n_jobs / 60
    sims = sum(c[p] for p in ("dl2", "drf", "optimus", "optimus-nnls", "smd")) + (c["teacher"] if teacher_extra else 0)
    slotted = c["slotted drf"] + c["slotted optimus"] + (c["slotted dl2"] if decide_at != "slots" else 0)
    return {"simulations": sims * k, "lower bounds": c["bound"] * k, "slotted": slotted * k,
            "studies": c["agreement"] * agreement * n_jobs / 60 + small * (1.0 + time_limit)}


def _cpu_seconds() -> float:
    """This process's CPU time and that of its children that have ended."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class Heartbeat:
    """A line on stderr every ``every`` seconds while a phase runs (``enabled`` for runs whose output
    is not a terminal, where no progress bar is drawn): phase, cells written so far, elapsed, and the time
    left, estimated from ``cpu_estimate`` (the study's CPU seconds) and the share of a core the run has had
    so far (``clock``: its CPU seconds), so that a run the machine's load starves says so, not "0 min left"."""

    def __init__(self, cpu_estimate: float, every: float = 60.0, enabled: bool = True, clock=_cpu_seconds):
        import threading

        self.t0, self.cpu, self.every, self.enabled, self.clock = time.monotonic(), cpu_estimate, every, enabled, clock
        self.cpu0 = clock()
        self.phase, self.count = "", lambda: None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        if self.enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self.enabled:
            self._thread.join()

    def line(self) -> str:
        elapsed = time.monotonic() - self.t0
        used = self.clock() - self.cpu0
        share = used / elapsed if elapsed > 0 else 0.0
        n = self.count()
        cells = f", {n} cells written" if n is not None else ""
        if used >= self.cpu:
            left = f"past its estimate of {self.cpu / 60:.1f} CPU-min ({used / 60:.1f} used)"
        elif share >= 0.01:
            left = f"estimate {(self.cpu - used) / share / 60:.1f} min left at the {share:.2f} of a core it has had"
        else:
            left = f"no CPU time yet to estimate from ({self.cpu / 60:.1f} CPU-min to run)"
        return f"bench dl2: {self.phase}{cells}; {elapsed / 60:.1f} min elapsed, {left}"

    def _run(self) -> None:
        import sys

        while not self._stop.wait(self.every):
            print(self.line(), file=sys.stderr, flush=True)


class Stopped(BaseException):
    """SIGTERM (a ``timeout``): stop at once, keep what was computed. Like ``KeyboardInterrupt`` not
    an ``Exception``, so that code which catches a policy's or a cell's errors does not swallow it
    (a timeout of the first version went unnoticed inside the slotted phase and the run went on)."""


def _count_rows(path) -> int | None:
    try:
        return max(sum(1 for _ in open(path, "rb")) - 1, 0)
    except OSError:
        return None


@register_suite("dl2")
def main(argv: list[str]) -> int:
    import signal
    import sys
    from pathlib import Path

    ap = argparse.ArgumentParser(prog="dlsched bench dl2", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help=f"{QUICK['traces']} validation traces, teacher agreement on {QUICK['agreement']}, "
                         f"no tiny traces (about 2.5 CPU minutes)")
    ap.add_argument("--traces", type=int, default=None, help=f"validation traces (seeds 1..N; default {FULL['traces']}, "
                                                             f"quick {QUICK['traces']})")
    ap.add_argument("--jobs", type=int, default=60, help="jobs per validation trace (the training setting)")
    ap.add_argument("--servers", type=int, default=16, help="nodes (the training setting)")
    ap.add_argument("--small", type=int, default=None, help=f"tiny traces against the exact optimum (default "
                                                            f"{FULL['small']}, quick {QUICK['small']})")
    ap.add_argument("--time-limit", type=float, default=None,
                    help=f"seconds per exact time-indexed solve (default {FULL['time_limit']:.0f}, quick {QUICK['time_limit']:.0f})")
    ap.add_argument("--checkpoint", default=None, help="a DL2 checkpoint (default: the shipped model)")
    ap.add_argument("--bound-slot", type=float, default=2400.0,
                    help="slot (s) of the time-indexed LP lower bound (smaller: tighter, slower)")
    ap.add_argument("--out", type=Path, default=None,
                    help="folder for the results as they are computed (default results/dl2-SETTINGS); a rerun with "
                         "the same settings resumes the simulations done there")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    import torch

    from dlsched.rl.policy import load_checkpoint

    # an inference is a batch of one through a small MLP: a second intra-op thread doubled the CPU time of a
    # dl2:60:3 run (4.3 against 2.5 CPU-s) for the same wall time, and on a loaded machine its spin-waits made
    # one inference in 20 take 20 ms of CPU (a --quick run: 655 CPU-s in all); training does the same (--threads)
    torch.set_num_threads(1)

    mode = QUICK if args.quick else FULL
    n = args.traces or mode["traces"]
    n_small = args.small if args.small is not None else mode["small"]
    time_limit = args.time_limit if args.time_limit is not None else mode["time_limit"]
    model = load_checkpoint(args.checkpoint)
    prov = model.provenance
    config = prov.get("config", {})
    teacher = {"name": config.get("teacher", "drf"), "params": config.get("teacher_params") or {}}
    seeds = range(1, n + 1)
    sims = study_suite(seeds, args.jobs, args.servers, args.checkpoint, teacher)
    out_dir = args.out or Path("results") / f"dl2-{sims.digest()[:8]}"
    out_dir.mkdir(parents=True, exist_ok=True)
    summary_path = out_dir / "summary.json"
    phases = estimate(n, args.jobs, mode["agreement"], n_small, time_limit,
                      any(p.get("label", p["name"]) == teacher["name"] for p in sims.definition["policies"][5:]),
                      model.spec.decide_at)
    cpu = sum(phases.values())
    # the wall time to expect: CPU time stretched by the load of the machine (other processes share the cores)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    stretch = max(1.0, (load + 1) / (os.cpu_count() or 1))
    print(f"bench dl2{' --quick' if args.quick else ''}: {n} validation traces, agreement on {mode['agreement']}, "
          f"{n_small} small at {time_limit:.0f} s; estimate {cpu / 60:.1f} CPU-min, about {cpu * stretch / 60:.1f} min "
          f"at the current load ({load:.1f} on {os.cpu_count()} cores); results written to {out_dir}/ as they come",
          file=sys.stderr, flush=True)
    out: dict = {"complete": False, "phases_done": [], "traces": n, "results_dir": str(out_dir)}

    def save() -> None:
        tmp = summary_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(out) + "\n")
        tmp.replace(summary_path)

    def stop(signum, frame):
        raise Stopped(signal.Signals(signum).name)

    wall0 = time.monotonic()
    progress = not args.json and sys.stderr.isatty()
    old_term = signal.signal(signal.SIGTERM, stop) if hasattr(signal, "SIGTERM") else None
    try:
        with Heartbeat(cpu, enabled=not progress) as beat:    # a terminal has the progress bars
            beat.phase, beat.count = "simulations", lambda: _count_rows(out_dir / "dl2.jsonl")
            out.update(summarise_suite(run_suite(sims, out_dir / "dl2.jsonl", progress=progress), sims))
            out["phases_done"].append("simulations")
            save()
            beat.phase, beat.count = "lower bounds", lambda: None
            out["lower_bound"] = bound_study(seeds, args.jobs, args.servers, out["mean_jct"], args.bound_slot)
            out["phases_done"].append("lower bounds")
            save()
            beat.phase = "DRF and Optimus at DL2's slots"
            out["slotted"] = slotted_study(seeds, args.jobs, args.servers, model.spec,
                                           [b for b in ("drf", "optimus") if b in out["mean_jct"]],
                                           out["per_trace_jct"]["dl2"], args.checkpoint)
            out["phases_done"].append("slotted")
            save()
            beat.phase, beat.count = "teacher agreement and small traces", lambda: _count_rows(out_dir / "dl2-studies.jsonl")
            st = studies(range(1, 1 + mode["agreement"]), range(101, 101 + n_small), args.jobs, args.servers,
                         args.checkpoint, teacher, time_limit, progress=progress, out=out_dir / "dl2-studies.jsonl")
            out["agreement_with_teacher"] = st["agreement_with_teacher"]
            out["small"] = st["small"]
            out["errors"] = {**out["errors"], **st["errors"]}
            out["phases_done"].append("studies")
            out["complete"] = True
    except (Stopped, KeyboardInterrupt) as exc:
        out["stopped"] = f"{type(exc).__name__} {exc}".strip()
        print(f"bench dl2: stopped ({out['stopped']}) after {', '.join(out['phases_done']) or 'no phase'}; what was "
              f"computed is in {out_dir}/ (a rerun with the same settings resumes the simulations)", file=sys.stderr, flush=True)
    finally:
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)
    out["warmup_agreement_held_out"] = prov.get("agreement", {}).get("held_out")
    out["warmup_agreement_held_out_by_action"] = prov.get("agreement", {}).get("held_out_by_action")
    out["teacher"] = teacher["name"]
    out["teacher_params"] = teacher["params"]
    out["decide_at"] = model.spec.decide_at
    out["other_teachers"] = other_teachers()
    out["training"] = {k: prov.get(k) for k in ("command", "seed", "training_seconds", "total_training_seconds", "warmup_seconds",
                                                "episodes_run", "best_episode", "best_tune_jct", "teacher_tune_jct")}
    out["bench_seconds"] = time.monotonic() - wall0
    out["estimate_cpu_seconds"] = phases
    out["environment"] = environment(torch=prov.get("torch"))
    save()
    if args.json:
        print(json.dumps(out))
        return 0 if out["complete"] else 130
    report(out, n, args.jobs, args.servers)
    return 0 if out["complete"] else 130


def report(out: dict, n: int, n_jobs: int, n_servers: int) -> None:
    """The study's figures as text (the phases that finished)."""
    if "mean_jct" not in out:
        return
    print(f"DL2 on {n} validation traces ({n_jobs} jobs, {n_servers} nodes of DL2's mix):")
    for k, v in out["mean_jct"].items():
        print(f"  {k:10s} mean JCT {v / 3600:8.2f} h" if v is not None else f"  {k:10s} n/a")
    for b in out["mean_jct"]:
        if out.get(f"jct_reduction_vs_{b}") is not None:
            print(f"  JCT reduction vs {b:8s} {100 * out[f'jct_reduction_vs_{b}']:6.1f} %")
    lb, nan = out.get("lower_bound"), float("nan")
    if lb:
        print(f"  lower bound on mean JCT {lb['mean'] / 3600:.2f} h; mean JCT / bound: DRF {lb.get('drf_over_bound', nan):.2f}, "
              f"Optimus {lb.get('optimus_over_bound', nan):.2f}, DL2 {lb.get('dl2_over_bound', nan):.2f}; "
              f"no schedule is more than {100 * lb.get('max_reduction_vs_drf', nan):.1f} % below DRF")
    sl = out.get("slotted") or {}
    if sl.get("dl2", {}).get("mean_jct") is not None:
        print(f"  DL2 deciding at DL2's slots only (the checkpoint decides at events too): mean JCT "
              f"{sl['dl2']['mean_jct'] / 3600:.2f} h")
    for b in ("drf", "optimus"):
        if sl.get(b, {}).get("mean_jct") is not None:
            print(f"  {b} deciding at DL2's slots only: mean JCT {sl[b]['mean_jct'] / 3600:.2f} h; "
                  f"DL2 {100 * sl[f'jct_reduction_vs_{b}']:.1f} % lower")
    if out.get("agreement_with_teacher") is not None:
        print(f"  agreement with the teacher (held-out, shipped model): {100 * out['agreement_with_teacher']:.1f} %")
    if out["inference_ms_p50"] is not None:
        cpu = (f" (CPU: median {out['inference_cpu_ms_p50']:.3f} ms, p95 {out['inference_cpu_ms_p95']:.3f} ms)"
               if out.get("inference_cpu_ms_p50") is not None else "")
        print(f"  inference: median {out['inference_ms_p50']:.3f} ms, p95 {out['inference_ms_p95']:.3f} ms of wall time{cpu}")
    if out.get("small") and out["small"].get("gap_to_optimum") is not None:
        print(f"  small traces: DL2 {100 * out['small']['gap_to_optimum']:.1f} % above the time-indexed optimum, "
              f"which is {out['small']['opt_over_bound']:.2f} x the lower bound")
    if out["errors"]:
        print(f"  runs without a result: {out['errors']}")
