"""What ``dorm``'s recorded gap is made of (docs/results/budgets-lp.md): per unbudgeted decision, HiGHS's own MILP
gap, the placed allocation's objective over the MILP's, and how often the MILP gave PSs beyond those its workers need
and counts that did not pack (a job trimmed to no worker zeroes the fairness term).

    python benchmarks/dorm_gap_split.py N SEED      # the generated paper-setting instance generate(N, seed=SEED)
"""
import sys, numpy as np
from dlsched.instance.oasis_gen import generate
from dlsched.policies import oasis_baselines as ob
from dlsched.policies.oasis import engine_setting
from dlsched.registry import make_policy
from dlsched.sim.engine import simulate
n, seed = int(sys.argv[1]), int(sys.argv[2])
inst = generate(n, seed=seed)
rows = []
real_milp, real_alloc = ob.milp, ob.DormPolicy.allocate
def alloc(self, t, sim):
    got = {}
    def m(*a, **k):
        got["res"] = real_milp(*a, **k); return got["res"]
    ob.milp = m
    real_alloc(self, t, sim)
    ob.milp = real_milp
    res = got.get("res")
    if res is None or res.x is None:
        return
    J = list(self.active); nJ = len(J)
    y, z = np.rint(res.x[:nJ]), np.rint(res.x[nJ:2*nJ])
    need = np.array([self.inst.ps_needed(i, int(y[k])) for k, i in enumerate(J)])
    placed_y = np.array([sim.alloc[i][0].sum() if i in sim.alloc else 0 for i in J])
    rows.append((res.mip_gap, -res.fun, -res.mip_dual_bound, -self.record.objectives[-1], int((z > need).sum()),
                 int((placed_y < y).sum()), int(((placed_y == 0) & (y > 0)).sum()), nJ))
ob.DormPolicy.allocate = alloc
trace, cluster, speed, horizon = engine_setting(inst)
simulate(trace, cluster, make_policy("dorm"), speed, max_time=horizon)
a = np.array(rows)
print("decisions", len(a), "milp gap mean/max", a[:, 0].mean(), a[:, 0].max())
print("placed objective / milp objective: mean", (a[:, 3] / a[:, 1]).mean(), "min", (a[:, 3] / a[:, 1]).min())
print("decisions with PSs beyond need", int((a[:, 4] > 0).sum()), "with counts trimmed", int((a[:, 5] > 0).sum()),
      "with a job trimmed to 0", int((a[:, 6] > 0).sum()), "active jobs max", int(a[:, 7].max()))
