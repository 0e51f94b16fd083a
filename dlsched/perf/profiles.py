"""Built-in layer profiles of DL2's eight models (MODELS.md §2.1, §6).

``CALIBRATED`` holds the five per-model constants fitted by :mod:`dlsched.perf.calibrate` on
``shared/data/dl2/config_speed.txt`` (layerwise overlap, zero-speed rows dropped). They are
stored as data so that loading an instance needs neither the data folder nor a fit; the test
``tests/perf/test_calibration.py`` re-fits and checks that these constants still reproduce the
measurements. Regenerate with ``python -m dlsched.perf.calibrate``.

Units: kappa s/(MAC·sample), beta_w/beta_p/mu_p bytes/s, delta s. ``batch`` is the global
batch of the measurements (DL2's grid).
"""

from __future__ import annotations

from functools import lru_cache

from dlsched.errors import InputError
from dlsched.perf.architectures import ARCHITECTURES, BYTES_PER_PARAM
from dlsched.perf.layered import LayerProfile

BACKWARD_RATIO = 2.0

CALIBRATED = {
    "resnet-50": {"kappa": 7.84769e-14, "beta_w": 5123070000.0, "beta_p": 539271000.0, "mu_p": 161393000.0, "delta": 0.452444},
    "vgg-16": {"kappa": 1.55193e-18, "beta_w": 18977500000.0, "beta_p": 948872000.0, "mu_p": 80038700000000.0, "delta": 1.17189},
    "resnext-110": {"kappa": 5.32076e-18, "beta_w": 35877500000.0, "beta_p": 104495000.0, "mu_p": 4438140000000.0, "delta": 0.274737},
    "inception-bn": {"kappa": 3.36403e-13, "beta_w": 2679260000.0, "beta_p": 535806000.0, "mu_p": 801674000.0, "delta": 0.357108},
    "seq2seq": {"kappa": 9.01153e-18, "beta_w": 2206360000000.0, "beta_p": 1942340000.0, "mu_p": 4456210000.0, "delta": 0.130607},
    "cnn-text-classification": {"kappa": 7.24892e-11, "beta_w": 7509530000.0, "beta_p": 1501910000.0, "mu_p": 9090670000.0, "delta": 0.496239},
    "dssm": {"kappa": 2.98366e-10, "beta_w": 158719000.0, "beta_p": 2422560000.0, "mu_p": 504459000.0, "delta": 0.148702},
    "wlm": {"kappa": 1.48389e-17, "beta_w": 11007800000.0, "beta_p": 177330000.0, "mu_p": 241369000.0, "delta": 0.368918},
}

#: global batch of DL2's measurements per model (config_speed.txt)
MEASURED_BATCH = {"resnet-50": 32, "vgg-16": 32, "resnext-110": 128, "inception-bn": 128, "seq2seq": 64,
                  "cnn-text-classification": 50, "dssm": 256, "wlm": 160}

MODELS = tuple(CALIBRATED)


def profile_from_params(model: str, params: dict, backward_ratio: float = BACKWARD_RATIO) -> LayerProfile:
    """The calibrated :class:`LayerProfile` of a DL2 model from its five constants."""
    names, n_params, macs = ARCHITECTURES[model]()
    phi = params["kappa"] * macs
    return LayerProfile(model, phi, backward_ratio * phi, BYTES_PER_PARAM * n_params, params["beta_w"],
                        params["beta_p"], params["mu_p"], params["delta"], tuple(names),
                        {"source": "calibrated on shared/data/dl2/config_speed.txt"})


@lru_cache(maxsize=None)
def builtin(name: str) -> LayerProfile:
    """The calibrated profile of a DL2 model (``resnet-50``, ``vgg-16``, ...)."""
    if name not in CALIBRATED:
        raise InputError("<argument>", "profile", f"one of {', '.join(MODELS)}", name)
    return profile_from_params(name, CALIBRATED[name])
