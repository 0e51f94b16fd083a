"""The cluster a trace is replayed on (MODELS.md §1: servers s with capacities c_s^r, GPU type g(s)).

Servers are rows of one capacity matrix ``capacity[s, r]`` over named resources, so that the
engine and the policies work on whole arrays. Locality is a rack index per server and three
bandwidths (inside a server, between servers of one rack, between racks), the levels that
Optimus's placement principle and HETPLACE's communication term distinguish.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from dlsched.errors import InputError

#: the largest cluster dlsched builds (dense per-server arrays are made; the dlsched/1 schemas use the same bound)
MAX_SERVERS = 100_000


def server_count(n, source: str = "<argument>", where: str = "servers", lo: int = 1) -> int:
    """``n`` servers, refused with an :class:`InputError` unless lo <= n <= :data:`MAX_SERVERS`
    (checked before any per-server array is built)."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or not lo <= n <= MAX_SERVERS:
        raise InputError(source, where, f"{lo} to {MAX_SERVERS:,} servers" if lo else f"at most {MAX_SERVERS:,} servers", n)
    return int(n)


@dataclass(frozen=True, eq=False)
class Cluster:
    """``capacity[s, r]`` of server s in resource ``resources[r]``; ``gpu_type[s]`` ("" if untyped).

    ``rack[s]`` groups servers for locality; bandwidths are in Gbit/s per server link.
    """

    resources: tuple[str, ...]
    capacity: np.ndarray
    gpu_type: tuple[str, ...]
    rack: np.ndarray
    names: tuple[str, ...]
    intra_server_gbps: float = math.inf
    inter_server_gbps: float = 10.0
    inter_rack_gbps: float = 10.0
    source: str = field(default="<cluster>")

    def __post_init__(self) -> None:
        cap = np.asarray(self.capacity, dtype=float)
        object.__setattr__(self, "capacity", cap)
        object.__setattr__(self, "rack", np.asarray(self.rack, dtype=np.int64))
        S = cap.shape[0] if cap.ndim == 2 else -1
        if cap.ndim != 2 or cap.shape[1] != len(self.resources):
            raise InputError(self.source, "capacity", f"a (servers, {len(self.resources)}) matrix", cap.shape)
        if len(set(self.resources)) != len(self.resources):
            raise InputError(self.source, "resources", "distinct resource names", self.resources)
        if not np.isfinite(cap).all() or (cap < 0).any():
            s, r = np.argwhere(~np.isfinite(cap) | (cap < 0))[0]
            raise InputError(self.source, f"servers[{s}].{self.resources[r]}", "a finite capacity >= 0", cap[s, r])
        if S == 0:
            raise InputError(self.source, "servers", "at least one server", "none")
        if len(self.gpu_type) != S or len(self.names) != S or self.rack.shape != (S,):
            raise InputError(self.source, "servers", f"gpu_type, names and rack for each of {S} servers",
                             (len(self.gpu_type), len(self.names), self.rack.shape))
        if "gpu" in self.resources and cap[:, self.index("gpu")].sum() <= 0:
            raise InputError(self.source, "servers", "a cluster with at least one GPU", "no GPUs")
        for name in ("intra_server_gbps", "inter_server_gbps", "inter_rack_gbps"):
            v = getattr(self, name)
            if not (v > 0):
                raise InputError(self.source, name, "a bandwidth > 0", v)

    @property
    def n_servers(self) -> int:
        return self.capacity.shape[0]

    def index(self, resource: str) -> int:
        try:
            return self.resources.index(resource)
        except ValueError:
            raise InputError(self.source, "resources", f"a resource named '{resource}'", self.resources) from None

    def total(self) -> np.ndarray:
        """Σ_s c_s^r, shape (R,)."""
        return self.capacity.sum(axis=0)

    def vector(self, demand: Mapping[str, float], where: str = "demand") -> np.ndarray:
        """A demand given by resource name as an array in this cluster's resource order.

        A resource the cluster does not have is an error (the job could never run), not a zero.
        """
        out = np.zeros(len(self.resources))
        for name, amount in demand.items():
            if name not in self.resources:
                raise InputError(self.source, f"{where}.{name}", f"one of the cluster's resources {self.resources}", name)
            out[self.resources.index(name)] = float(amount)
        return out

    @classmethod
    def homogeneous(cls, n_servers: int, per_server: Mapping[str, float], gpu_type: str = "",
                    servers_per_rack: int | None = None, **bandwidths) -> "Cluster":
        """``n_servers`` identical servers (racks of ``servers_per_rack``, one rack if None); ``bandwidths``
        may also give the ``source`` named in errors."""
        n_servers = server_count(n_servers, str(bandwidths.get("source", "<argument>")), "n_servers", lo=0)
        resources = tuple(per_server)
        cap = np.tile(np.array([float(per_server[r]) for r in resources]), (n_servers, 1))
        per_rack = servers_per_rack or max(n_servers, 1)
        return cls(resources, cap, (gpu_type,) * n_servers, np.arange(n_servers) // per_rack,
                   tuple(f"s{s}" for s in range(n_servers)), **bandwidths)

    @classmethod
    def from_groups(cls, groups: Sequence[tuple[int, Mapping[str, float], str]], servers_per_rack: int | None = None,
                    **bandwidths: float) -> "Cluster":
        """Concatenate groups ``(count, per_server capacities, gpu_type)`` (heterogeneous clusters)."""
        resources: list[str] = []
        for _, per, _ in groups:
            resources += [r for r in per if r not in resources]
        server_count(sum(int(count) for count, _, _ in groups), str(bandwidths.get("source", "<argument>")), lo=0)
        rows, types = [], []
        for count, per, gtype in groups:
            rows += [[float(per.get(r, 0.0)) for r in resources]] * int(count)
            types += [gtype] * int(count)
        S = len(rows)
        per_rack = servers_per_rack or max(S, 1)
        return cls(tuple(resources), np.array(rows, dtype=float).reshape(S, len(resources)), tuple(types),
                   np.arange(S) // per_rack, tuple(f"s{s}" for s in range(S)), **bandwidths)
