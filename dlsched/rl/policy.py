"""The trained DL2 network as a simulator policy, ``dl2`` (MODELS.md §6), and its checkpoint files.

At every slot boundary (``Spec.slot_seconds``) the policy network is run repeatedly on the
state matrix of :mod:`dlsched.rl.slot`, taking the most likely valid action each time, until it
chooses "stop" or no other action is valid (with ``Spec.actions = "jobs"``: once, taking every
window row's most likely size level, :meth:`Slot.fill`); only the difference to the last slot's allocation is
applied. Between boundaries (arrivals, completions) the allocation stays as it is: jobs that
arrive wait for the next slot, as in DL2; with ``decide_at="events"`` (the checkpoint's
``Spec.decide_at``, or the policy's option) the policy also decides at every arrival and
completion.

A checkpoint is a ``torch.save`` of a plain dictionary (loaded with ``weights_only=True``):
``format``, ``spec`` (:class:`~dlsched.rl.slot.Spec` as a dict), ``hidden``, ``policy`` and
``value`` state dicts, ``logit_scale`` (the policy's s, only where s ≠ 1; ``--es-basis``), ``row_prior``
(the policy's Θ, only where it has one; ``--es-features``), ``es_optimizer`` (the search's state, only
where it continues: ``--es-optimizer cma``), ``digest``,
and ``provenance`` (command, seed, versions, training seconds).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, Sequence

import numpy as np
import torch

from dlsched.arguments import checked
from dlsched.errors import InputError
from dlsched.rl.networks import NetShape, PolicyNet, ValueNet, prior_shape
from dlsched.rl.slot import Slot, Spec, fastest_rate
from dlsched.sim.policy import ClusterState, Decision, Event, Placement, PolicyContext

FORMAT = "dlsched-dl2/1"
#: the shipped model (its provenance JSON lies beside it)
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "checkpoints" / "dl2-default.pt"


@dataclass
class Model:
    """A policy and a value network of one shape, and where they came from."""

    shape: NetShape
    policy: PolicyNet
    value: ValueNet
    provenance: dict = field(default_factory=dict)
    #: the state of the search that produced the policy, where one continues it (``--es-optimizer cma``:
    #: :meth:`dlsched.rl.cmaes.CmaSearch.state`), else None
    es_optimizer: dict | None = None

    @classmethod
    def new(cls, spec: Spec, hidden: Sequence[int] = (256, 256), seed: int = 0) -> "Model":
        torch.manual_seed(seed)
        shape = NetShape(spec, tuple(int(h) for h in hidden))
        return cls(shape, PolicyNet(shape), ValueNet(shape))

    @property
    def spec(self) -> Spec:
        return self.shape.spec

    def decide_at(self, decide_at: str) -> None:
        """Ask the policy at ``decide_at`` from now on (its checkpoint records it). When a policy is asked is not
        part of its network's input, so a model trained at DL2's slots may go on training at events."""
        self.shape = self.policy.shape = self.value.shape = replace(self.shape, spec=replace(self.spec, decide_at=decide_at))

    def read_load(self) -> None:
        """Let the row prior Θ read the window's load from now on (``Spec.prior_load``): its new row, Θ's last,
        starts at 0, so the decisions are the same until a search moves it, and a search that had converged
        in Θ's other rows can go on in one more (docs/dl2.md, round 18). A CMA state the model carried was over
        the old coordinates and is dropped."""
        self.shape = self.policy.shape = self.value.shape = replace(self.shape, spec=replace(self.spec, prior_load=True))
        if self.policy.prior is not None:
            self.policy.prior = torch.cat([self.policy.prior, self.policy.prior.new_zeros(1, self.policy.prior.shape[1])])
        self.es_optimizer = None


def save_checkpoint(model: Model, path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    policy, value = model.policy.state_dict(), model.value.state_dict()
    prior = model.policy.prior
    doc = {"format": FORMAT, "spec": model.spec.to_dict(), "hidden": list(model.shape.hidden),
           "policy": policy, "value": value,
           "digest": weights_digest(policy, value, *scale_dict(model.policy.logit_scale), *prior_dict(prior)),
           "provenance": model.provenance}
    if model.policy.logit_scale != 1.0:     # written only where it matters: a file without it reads as s = 1
        doc["logit_scale"] = float(model.policy.logit_scale)
    if prior is not None:                   # likewise: a file without it has no row prior
        doc["row_prior"] = prior.detach().clone()
    if model.es_optimizer is not None:      # so that `--init` continues the search (tensors and numbers)
        doc["es_optimizer"] = model.es_optimizer
    torch.save(doc, tmp)
    tmp.replace(path)


#: the widest hidden layer and the most hidden layers a checkpoint may ask for (a larger one is refused, not allocated)
MAX_HIDDEN, MAX_LAYERS = 16384, 16


def weights_digest(*state_dicts) -> str:
    """SHA-256 of every tensor's name and bytes, in order: stored in a checkpoint, it tells a file
    whose weights were damaged (flipped bytes still load as numbers) from the one that was written."""
    h = hashlib.sha256()
    for sd in state_dicts:
        for name, t in sd.items():
            h.update(name.encode())
            h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def scale_dict(scale: float) -> tuple[dict, ...]:
    """The logit scale s (:class:`~dlsched.rl.networks.PolicyNet`) as a state dict for :func:`weights_digest`,
    none for s = 1 (so the digest of a checkpoint without a scale is unchanged)."""
    return () if scale == 1.0 else ({"logit_scale": torch.tensor(float(scale), dtype=torch.float64)},)


def prior_dict(prior: torch.Tensor | None) -> tuple[dict, ...]:
    """The row prior Θ (:class:`~dlsched.rl.networks.PolicyNet`) as a state dict for :func:`weights_digest`,
    none without one (so the digest of a checkpoint without a prior is unchanged)."""
    return () if prior is None else ({"row_prior": prior},)


def load_checkpoint(path: str | Path | None = None) -> Model:
    """Read a checkpoint; a missing, foreign or mis-shaped file is an :class:`InputError` saying what to do."""
    path = Path(path) if path is not None else DEFAULT_CHECKPOINT
    retrain = "a checkpoint written by `dlsched train dl2` (or omit it to use the shipped model)"
    if not path.is_file():
        raise InputError(str(path), "file", retrain, "no such file")
    try:
        doc = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for a file that is not its format
        raise InputError(str(path), "file", retrain, f"unreadable ({type(exc).__name__})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InputError(str(path), "format", f"'{FORMAT}' ({retrain})",
                         doc.get("format") if isinstance(doc, dict) else type(doc).__name__)
    try:
        spec = Spec.from_dict(doc["spec"])
        hidden = tuple(int(h) for h in doc["hidden"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(str(path), "spec", retrain, str(exc)) from None
    if not 1 <= len(hidden) <= MAX_LAYERS or not all(1 <= h <= MAX_HIDDEN for h in hidden):
        raise InputError(str(path), "hidden", f"1 to {MAX_LAYERS} hidden layers of 1 to {MAX_HIDDEN} units", list(hidden))
    shape = NetShape(spec, hidden)
    model = Model(shape, PolicyNet(shape), ValueNet(shape), dict(doc.get("provenance") or {}))
    for name, net in (("policy", model.policy), ("value", model.value)):
        try:
            net.load_state_dict(doc[name])
        except (KeyError, RuntimeError) as exc:
            first = str(exc).strip().splitlines()
            raise InputError(str(path), name,
                             f"weights of a {name} network with J={spec.J}, {spec.n_types} job types and hidden "
                             f"layers {list(shape.hidden)} (retrain with `dlsched train dl2`)",
                             first[1].strip() if len(first) > 1 else (first[0] if first else name)) from None
    scale = doc.get("logit_scale", 1.0)
    if not isinstance(scale, float) or not np.isfinite(scale) or scale <= 0:
        raise InputError(str(path), "logit_scale", "a finite number > 0 (retrain with `dlsched train dl2`)", scale)
    model.policy.logit_scale = scale
    prior = doc.get("row_prior")
    if prior is not None:
        want = prior_shape(spec)
        if (spec.actions != "jobs" or not isinstance(prior, torch.Tensor) or tuple(prior.shape) != want
                or not bool(torch.isfinite(prior).all())):
            raise InputError(str(path), "row_prior", f"finite {want[0]} × {want[1]} weights of a job-level policy "
                             "(retrain with `dlsched train dl2`)",
                             f"{tuple(prior.shape)} weights" if isinstance(prior, torch.Tensor) else type(prior).__name__)
        model.policy.prior = prior.float()
    for name, net in (("policy", model.policy), ("value", model.value)):
        if not all(bool(torch.isfinite(t).all()) for t in net.state_dict().values()):
            raise InputError(str(path), name, "finite weights (retrain with `dlsched train dl2`)", "NaN or infinite weights")
    if "digest" in doc and doc["digest"] != weights_digest(model.policy.state_dict(), model.value.state_dict(),
                                                           *scale_dict(scale), *prior_dict(model.policy.prior)):
        raise InputError(str(path), "digest", "weights that match the digest written with them (the file is damaged)",
                         "other weights")
    state = doc.get("es_optimizer")
    if state is not None and (not isinstance(state, dict) or not isinstance(state.get("kind"), str)):
        raise InputError(str(path), "es_optimizer", "a search's state as `dlsched train dl2` writes it", type(state).__name__)
    model.es_optimizer = state
    model.policy.eval()
    model.value.eval()
    return model


def choose(model: Model, obs: np.ndarray, mask: np.ndarray):
    """The most likely valid action (greedy inference); with ``Spec.actions = "jobs"`` the most
    likely level of every row (an int64 array of J levels)."""
    with torch.inference_mode():
        x, m = torch.from_numpy(obs)[None], torch.from_numpy(mask)[None]
        if model.spec.actions == "jobs":
            return model.policy.levels(x, m)[0].argmax(dim=1).numpy()
        logits = model.policy(x, m)
    return int(logits.argmax(dim=1))


def fill_slot(slot: Slot, pick) -> int:
    """Run ``pick(obs, mask) -> action`` until "stop" or no other action is valid; the number of inferences."""
    n = 0
    stop = slot.spec.stop
    while True:
        mask = slot.mask()
        if not mask[:stop].any():
            return n
        n += 1
        if not slot.apply(pick(slot.observation(), mask)):
            return n


def one_inference_thread() -> None:
    """One torch thread, for a command that runs ``dl2`` in a process of its own (``simulate``, a bench suite's
    cell): an inference is a batch of one through a small MLP, and a second intra-op thread spin-waits
    (``simulate dl2:60:3 --policy dl2`` at load 2.6: 92.4 CPU-s and 118 s of wall with torch's two threads,
    7.1 CPU-s and 7.5 s with one, the same decisions). Not set by the policy itself, which would change the
    threads of a library caller's process."""
    torch.set_num_threads(1)


class DL2Policy:
    """DL2: a neural policy warmed up on an existing scheduler, fine-tuned by actor-critic, deciding per slot (MODELS.md §6).

    ``checkpoint`` is a file (the shipped model if None) or a :class:`Model`. ``inference_seconds``
    and ``inference_cpu_seconds`` collect the wall and the CPU time of every network inference (one
    action) in memory; results store only their summary, :meth:`inference_stats`. The CPU time is
    the process's (every thread torch uses), so on a shared machine it is the inference's own cost
    where the wall time also counts the time slices other processes took.
    """

    name = "dl2"

    @checked
    def __init__(self, checkpoint: str | Path | Model | None = None, decide_at: Literal["slots", "events"] | None = None):
        self.model = checkpoint if isinstance(checkpoint, Model) else load_checkpoint(checkpoint)
        # the checkpoint's decision timing unless overridden (the network reads the same features either way)
        self.spec = self.model.spec if decide_at is None else replace(self.model.spec, decide_at=decide_at)
        self.slot_seconds = self.spec.slot_seconds
        self.inferences = 0
        self.inference_seconds: list[float] = []
        self.inference_cpu_seconds: list[float] = []

    def _choose(self, obs: np.ndarray, mask: np.ndarray) -> int:
        t0, c0 = time.perf_counter(), time.process_time()
        a = choose(self.model, obs, mask)
        self.inference_cpu_seconds.append(time.process_time() - c0)
        self.inference_seconds.append(time.perf_counter() - t0)
        return a

    def inference_stats(self) -> dict:
        """Count, median, 95th percentile, mean and largest wall time of one inference (ms) so far, and
        the median, 95th percentile and largest CPU time (``cpu_p50``, ``cpu_p95``, ``cpu_max``)."""
        ms = np.asarray(self.inference_seconds, dtype=float) * 1e3
        cpu = np.asarray(self.inference_cpu_seconds, dtype=float) * 1e3
        if not ms.size:
            return {"count": 0, "p50": None, "p95": None, "mean": None, "max": None,
                    "cpu_p50": None, "cpu_p95": None, "cpu_max": None}
        return {"count": int(ms.size), "p50": float(np.median(ms)), "p95": float(np.percentile(ms, 95)),
                "mean": float(ms.mean()), "max": float(ms.max()),
                "cpu_p50": float(np.median(cpu)), "cpu_p95": float(np.percentile(cpu, 95)), "cpu_max": float(cpu.max())}

    def reset(self, ctx: PolicyContext) -> None:
        self.previous: dict[int, Placement] = {}
        self.next_slot = 0.0
        self.last_decision = 0.0
        self.type_index: np.ndarray | None = None
        self.slots_run: np.ndarray | None = None
        self.inferences = 0
        self.speed = ctx.speed
        self.rate: np.ndarray | None = None

    def schedule(self, state: ClusterState, events: Sequence[Event]) -> Decision:
        if self.type_index is None:
            self.type_index = self.spec.type_index(state.jobs)
            self.slots_run = np.zeros(len(state.jobs), dtype=float)
            if self.spec.rows == "remaining":
                self.rate = fastest_rate(state.jobs, self.speed)
        on_event = self.spec.decide_at == "events" and any(e.kind != "timer" for e in events)
        k = round(state.time / self.slot_seconds)
        on_grid = abs(state.time - k * self.slot_seconds) <= 1e-9 * self.slot_seconds * max(1, k)
        if not on_event and not (on_grid and state.time + 1e-9 >= self.next_slot):
            # between boundaries: keep the slot's allocation (finished jobs drop out); a first
            # call off the grid (the first arrival) waits for the next boundary, as in DL2Env
            active = set(np.asarray(state.active).tolist())
            self.previous = {j: pl for j, pl in self.previous.items() if j in active}
            self.next_slot = max(self.next_slot, self.spec.next_boundary(state.time) if not on_grid else state.time)
            return Decision(dict(self.previous), next_call=self.next_slot)
        # the time the last allocation ran, in slots (as DL2Env counts it)
        self.slots_run[list(self.previous)] += (state.time - self.last_decision) / self.slot_seconds
        self.last_decision = state.time
        slot = Slot(self.spec, state, self.type_index, self.slots_run, self.rate)
        if self.spec.actions == "jobs":
            if len(slot.jobs):      # one inference sizes every window job
                slot.fill(self._choose(slot.observation(), slot.level_mask()))
                self.inferences += 1
        else:
            self.inferences += fill_slot(slot, self._choose)
        self.previous = slot.placements(self.previous)
        self.next_slot = self.spec.next_boundary(state.time)
        return Decision(dict(self.previous), next_call=self.next_slot)
