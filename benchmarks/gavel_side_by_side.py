"""CPU seconds of whole unbudgeted runs of gavel-max-min-fairness-perf on Gavel's 0e4a51 (36:36:36), two checkouts
alternated twice, each in its own process (docs/results/budgets-lp.md: what recording the decisions costs).

    DLSCHED_DATA=/work/shared/data python benchmarks/gavel_side_by_side.py OLD_TREE NEW_TREE
"""
import os, resource, subprocess, sys, time
trees = {"old": sys.argv[1], "new": sys.argv[2]}
cmd = [sys.executable, "-m", "dlsched", "simulate", os.environ.get("DLSCHED_DATA", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data")) + "/gavel/msr_seed0_0e4a51.trace", "--cluster", "36:36:36",
       "--policy", "gavel-max-min-fairness-perf", "--bound", "none", "--json"]
out = {k: [] for k in trees}
for rep in range(2):
    for name, tree in trees.items():
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN); t0 = time.time()
        subprocess.run(["nice", "-n", "10", *cmd], cwd=tree, env={**os.environ, "PYTHONPATH": tree}, capture_output=True, check=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
        out[name].append(cpu)
        print(name, rep, f"cpu {cpu:.2f}s wall {time.time()-t0:.1f}s load {open('/proc/loadavg').read().split()[:3]}", flush=True)
print("new/old CPU ratio", sum(out["new"]) / sum(out["old"]))
