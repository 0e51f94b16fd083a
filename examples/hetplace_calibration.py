"""The §4.1 calibration table (MODELS.md §4.1) as Markdown: the fitted communication term c_i per
Gavel job type, the implied model size at the calibration bandwidth, and the model's mean relative
throughput error at scale factors 2, 4, 8 (over the GPU types measured).

    python examples/hetplace_calibration.py [--gbps 10]
"""

import argparse

from dlsched.perf.throughputs import calibrate, load_gavel


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gbps", type=float, default=10.0, help="bandwidth the measurements are attributed to")
    args = ap.parse_args(argv)
    table = load_gavel()
    cal = calibrate(table)
    print(f"| job type | c_i (ms) | D_i at {args.gbps:g} Gbps (MB) | error sf 2 | sf 4 | sf 8 |")
    print("|---|---:|---:|---:|---:|---:|")
    for jt in table.job_types:
        errs = [cal.rel_error.get((jt, s)) for s in (2, 4, 8)]
        cells = " | ".join("—" if e is None else f"{100 * e:.1f}%" for e in errs)
        print(f"| {jt} | {1000 * cal.comm_seconds[jt]:.2f} | {cal.model_size_mb(jt, args.gbps):.1f} | {cells} |")
    by = cal.error_by_scale()
    print(f"| **mean over job types** | | | {100 * by[2]:.1f}% | {100 * by[4]:.1f}% | {100 * by[8]:.1f}% |")
    print(f"\n{cal.points} multi-GPU measurements fitted; job types with scale factor 1 only: "
          + ", ".join(jt for jt in table.job_types if table.scale_factors(jt) == (1,)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
