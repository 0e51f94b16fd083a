r"""Calibrating the layered model (MODELS.md §2.1) against DL2's measured speeds.

Per model, the layer table (:mod:`dlsched.perf.architectures`) fixes the *shape*: parameter
bytes :math:`m_\ell` and compute proportional to MACs, :math:`\varphi_\ell = \kappa\,\mathrm{MAC}_\ell`,
:math:`\psi_\ell = r\,\kappa\,\mathrm{MAC}_\ell` (r = 2, backward about twice forward). Five
per-model constants are fitted:

=================  ====================================================
:math:`\kappa`     seconds per MAC per sample (device speed)
:math:`\beta_W`    effective worker bandwidth (bytes/s)
:math:`\beta_P`    effective PS bandwidth (bytes/s)
:math:`\mu_P`      PS update rate (bytes/s)
:math:`\delta`     per-iteration overhead (s)
=================  ====================================================

by least squares on :math:`\log \tau_{model} - \log \tau_{measured}` over the whole valid
(PS, worker) grid (relative errors, so fast and slow points weigh alike), from several
starting points. The error reported is :math:`|\hat g - g| / g` on throughputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from dlsched.perf import optimus_fit
from dlsched.perf.architectures import ARCHITECTURES, BYTES_PER_PARAM
from dlsched.perf.layered import LayerProfile, iteration_time
from dlsched.perf.profiles import BACKWARD_RATIO, builtin, profile_from_params
from dlsched.perf.speeds import SpeedTable, read_config_speed

PARAM_NAMES = ("kappa", "beta_w", "beta_p", "mu_p", "delta")


@dataclass(frozen=True)
class Fit:
    model: str
    params: dict
    median_error: float
    p90_error: float
    points: int


def relative_errors(prof: LayerProfile, table: SpeedTable, overlap: str = "layerwise") -> np.ndarray:
    """|ĝ − g| / g at every measured point."""
    g_hat = 1.0 / iteration_time(prof, table.batch, table.w, table.p, overlap)
    return np.abs(g_hat - table.g) / table.g


def fit_model(table: SpeedTable, overlap: str = "layerwise", starts: int = 6, seed: int = 0) -> Fit:
    """Fit the five constants of ``table.model`` (log-parametrised, bounded, multi-start)."""
    model = table.model
    _, n_params, macs = ARCHITECTURES[model]()
    M = BYTES_PER_PARAM * n_params.sum()
    tau = table.tau
    t_min = float(tau.min())
    rng = np.random.default_rng(seed)

    def unpack(x):
        return dict(zip(PARAM_NAMES, np.exp(x)))

    def residual(x):
        prof = profile_from_params(model, unpack(x))
        return np.log(iteration_time(prof, table.batch, table.w, table.p, overlap)) - np.log(tau)

    # scales: compute about a third of the fastest iteration; bandwidths moving the model in ~t_min
    base = np.log([t_min / (3 * (1 + BACKWARD_RATIO) * macs.sum() * table.batch), 2 * M / t_min,
                   2 * M / t_min, M / t_min, t_min / 10])
    lo, hi = base - 12, base + 12
    best = None
    for k in range(starts):
        x0 = base if k == 0 else base + rng.normal(0, 1.5, base.size)
        sol = least_squares(residual, np.clip(x0, lo + 1e-6, hi - 1e-6), bounds=(lo, hi), method="trf",
                            loss="soft_l1", f_scale=0.1, max_nfev=400)
        if best is None or sol.cost < best.cost:
            best = sol
    params = {k: float(v) for k, v in unpack(best.x).items()}
    err = relative_errors(profile_from_params(model, params), table, overlap)
    return Fit(model, params, float(np.median(err)), float(np.quantile(err, 0.9)), int(err.size))


def calibrate_all(tables: dict[str, SpeedTable], overlap: str = "layerwise") -> dict[str, Fit]:
    return {m: fit_model(t, overlap) for m, t in tables.items() if m in ARCHITECTURES}


def format_constants(fits: dict[str, Fit]) -> str:
    """Python source of the constants table stored in :mod:`dlsched.perf.profiles`."""
    lines = []
    for m, f in fits.items():
        vals = ", ".join(f'"{k}": {float(f"{f.params[k]:.6g}")!r}' for k in PARAM_NAMES)
        lines.append(f'    "{m}": {{{vals}}},')
    return "\n".join(lines)


def error_table(tables: dict[str, SpeedTable] | None = None) -> list[dict]:
    """Per model: median and 90th-percentile relative throughput error of the stored layered
    profiles (both overlap variants evaluated with the stored layerwise constants, and a
    no-overlap refit) and of Optimus's fitted f(p, w), over the whole valid grid."""
    if tables is None:
        tables = read_config_speed()[0]
    rows = []
    for m, tb in tables.items():
        lay = relative_errors(builtin(m), tb)
        no = fit_model(tb, overlap="none", starts=3)
        opt = optimus_fit.relative_errors(optimus_fit.fit_sync(tb), tb)
        rows.append({"model": m, "points": int(tb.p.size),
                     "layered_median": float(np.median(lay)), "layered_p90": float(np.quantile(lay, 0.9)),
                     "no_overlap_median": no.median_error, "no_overlap_p90": no.p90_error,
                     "optimus_median": float(np.median(opt)), "optimus_p90": float(np.quantile(opt, 0.9))})
    return rows


if __name__ == "__main__":  # regenerate dlsched.perf.profiles.CALIBRATED
    print(format_constants(calibrate_all(read_config_speed()[0])))
