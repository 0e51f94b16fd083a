"""DL2: a learned scheduler (MODELS.md §6), behind the optional extra ``dlsched[rl]``.

Modules: :mod:`~dlsched.rl.slot` (state matrix, the 3J + 1 actions and their mask, elastic
placement of one slot's allocation), :mod:`~dlsched.rl.env` (a ``gymnasium.Env`` over the
simulator), :mod:`~dlsched.rl.networks` (policy and value MLPs), :mod:`~dlsched.rl.train`
(supervised warm-up on a teacher policy, actor-critic fine-tuning), :mod:`~dlsched.rl.policy`
(the trained network as a simulator policy, ``dl2``).

Importing this package needs PyTorch and gymnasium; without them it raises
:class:`MissingExtra`, which says how to install them. The rest of dlsched never imports torch.
"""

from __future__ import annotations

import importlib.util

from dlsched.errors import MissingExtra


def _require() -> None:
    # find_spec, not import: importing this package (to describe the dl2 policy, say) loads no torch
    missing = [mod for mod in ("torch", "gymnasium") if importlib.util.find_spec(mod) is None]
    if missing:
        raise MissingExtra(
            f"DL2 (dlsched.rl) needs {' and '.join(missing)}, which is not installed: "
            "run `pip install 'dlsched[rl]'` (it pins torch==2.13.0, a CPU build)")


_require()
