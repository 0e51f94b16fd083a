"""Decision digests of OASiS-trace policies on the engine run in memory (:func:`dlsched.policies.oasis.engine_setting`):
each job's first start and completion, hashed as ``benchmarks/digests.py`` hashes them, per policy and instance, to
compare two checkouts (docs/results/budgets-lp.md).

    cd TREE && PYTHONPATH=TREE python benchmarks/oasis_digests.py OUT.json "oasis,dorm,dorm@budget_ms=100000"

Instances: the bundled ``oasis-tiny.json`` and the generated paper-setting ``generate(100, seed=1)`` and
``generate(300, seed=2)``. Also prints each run's ``decision_gap``, ``decisions_uncertified``, latency, wall and CPU."""
import json, os, sys, time
from digests import digest
from dlsched.instance.oasis_gen import generate
from dlsched.api import load as load_instance
from dlsched.policies.oasis import engine_setting
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
        trace, cluster, speed, horizon = engine_setting(inst)
        t0, c0 = time.perf_counter(), time.process_time()
        r = simulate(trace, cluster, make_policy(pol, **kw), speed, max_time=horizon)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        d = json.loads(r.to_json(jobs=True))
        res[f"{spec}|{name}"] = digest(d["job_results"])
        print(spec, name, res[f"{spec}|{name}"], "gap", d.get("decision_gap"), "uncert", d.get("decisions_uncertified"),
              "lat", d.get("decision_latency_ms"), f"wall {wall:.1f}s cpu {cpu:.1f}s", flush=True)
        json.dump(res, open(out, "w"), indent=1)
