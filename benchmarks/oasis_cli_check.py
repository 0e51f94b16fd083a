"""``dlsched simulate`` on an OASiS instance file against the engine run on the instance in memory (as
benchmarks/oasis_digests.py and benchmarks/budgets_lp.py run it): per policy (``NAME`` or ``NAME@BUDGET_MS``) the
decision digests (each job's first start and completion, hashed), calls, jobs finished, utility and gaps of both
(docs/results/budgets-lp.md). The instance is ``generate(300, seed=2)``, saved to /tmp/oasis-paper300.json.

    cd TREE && PYTHONPATH=$PWD nice -n 10 python benchmarks/oasis_cli_check.py "oasis,dorm,oasis@100000,dorm@100000"
"""
import json, subprocess, sys, time
import dlsched
from digests import digest as dig
from dlsched.instance.oasis_gen import generate
from dlsched.policies.oasis import engine_setting
from dlsched.registry import make_policy
from dlsched.sim.engine import simulate
inst = generate(300, seed=2)
path = "/tmp/oasis-paper300.json"
dlsched.save(inst, path)
for spec in sys.argv[1].split(","):
    pol, *b = spec.split("@")
    extra = ["--decision-budget", b[0]] if b else []
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "dlsched", "simulate", path, "--policy", pol, "--json", "--jobs", "--bound", "none", *extra],
                       capture_output=True, text=True, check=True)
    cli_wall = time.perf_counter() - t0
    d = json.loads(p.stdout)
    trace, cluster, speed, horizon = engine_setting(inst)
    r = simulate(trace, cluster, make_policy(pol, **({"budget_ms": float(b[0])} if b else {})), speed, max_time=horizon)
    l = json.loads(r.to_json(jobs=True))
    print(spec, "cli", dig(d["job_results"]), "lib", dig(l["job_results"]), "calls", d["decision_calls"], l["decision_calls"],
          "done", d["completed"], l["completed"], "utility", d["total_utility"], l["total_utility"], "gap", d["decision_gap"],
          "uncert", d["decisions_uncertified"], f"cli wall {cli_wall:.1f}s", "load", open("/proc/loadavg").read().split()[:3], flush=True)
