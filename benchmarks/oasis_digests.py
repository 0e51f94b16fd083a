"""Decision digests of OASiS-trace policies on the engine (``dlsched simulate`` reads no OASiS instance): each job's
first start and completion, hashed, per policy and instance, to compare two checkouts (docs/results/budgets-lp.md).

    cd TREE && PYTHONPATH=TREE python benchmarks/oasis_digests.py OUT.json "oasis,dorm,dorm@budget_ms=100000"

Instances: the bundled ``oasis-tiny.json`` and the generated paper-setting ``generate(100, seed=1)`` and
``generate(300, seed=2)``. Also prints each run's ``decision_gap``, ``decisions_uncertified``, latency, wall and CPU."""
import hashlib, json, os, sys, time
import numpy as np
from dlsched.instance.oasis_gen import generate
from dlsched.api import load as load_instance
from dlsched.policies.oasis import to_trace
from dlsched.registry import make_policy
from dlsched.sim.engine import simulate
out, specs = sys.argv[1], sys.argv[2].split(",")
here = os.path.dirname(__import__("dlsched").__file__)
insts = {"tiny": load_instance(os.path.join(here, "instances", "oasis-tiny.json")),
         "paper100": generate(100, seed=1), "paper300": generate(300, seed=2)}
res = json.load(open(out)) if os.path.exists(out) else {}
for spec in specs:
    pol, *params = spec.split("@")
    kw = {k: json.loads(v) for k, v in (p.split("=") for p in params)}
    for name, inst in insts.items():
        trace, cluster, speed = to_trace(inst, slot_seconds=1.0)
        t0, c0 = time.perf_counter(), time.process_time()
        r = simulate(trace, cluster, make_policy(pol, **kw), speed, max_time=float(inst.horizon))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        d = json.loads(r.to_json(jobs=True))
        rows = [(j["name"], round(j["first_start"] or -1, 6), round(j["completion"] or -1, 6)) for j in d["job_results"]]
        lat = np.asarray(r.decision_seconds) * 1e3 if hasattr(r, "decision_seconds") else None
        res[f"{spec}|{name}"] = hashlib.blake2b(repr(rows).encode(), digest_size=8).hexdigest()
        print(spec, name, res[f"{spec}|{name}"], "gap", d.get("decision_gap"), "uncert", d.get("decisions_uncertified"),
              "lat", d.get("decision_latency_ms"), f"wall {wall:.1f}s cpu {cpu:.1f}s", flush=True)
        json.dump(res, open(out, "w"), indent=1)
