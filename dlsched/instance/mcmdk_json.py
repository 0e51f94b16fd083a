"""The ``mcmdk`` family in dlsched/1 files (schema: ``schema/mcmdk.schema.json``)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dlsched.errors import InputError
from dlsched.instance.core import MCMDK, Reference
from dlsched.instance.fields import int_list


def parse_reference(doc: dict) -> Reference | None:
    ref = doc.get("reference")
    return Reference(float(ref["objective"]), bool(ref.get("optimal", True)), ref.get("source", "")) if ref else None


def dump_reference(ref: Reference | None) -> dict:
    return {"reference": {"objective": ref.objective, "optimal": ref.optimal, "source": ref.source}} if ref else {}


def parse(doc: dict, source: str) -> MCMDK:
    rows = doc["rows"]
    row_names = [r.get("name", f"row{k}") for k, r in enumerate(rows)]
    if len(set(row_names)) != len(row_names):
        dup = next(n for n in row_names if row_names.count(n) > 1)
        raise InputError(source, "$.rows", "unique row names", f"'{dup}' twice")
    row_index = {n: k for k, n in enumerate(row_names)}
    values, r_idx, c_idx, data, labels, counts, names = [], [], [], [], [], [], []
    col = 0
    for j, job in enumerate(doc["jobs"]):
        names.append(job.get("name", f"job{j}"))
        counts.append(len(job["configurations"]))
        for o, cfg in enumerate(job["configurations"]):
            values.append(cfg["value"])
            labels.append(cfg.get("label", ""))
            use = cfg["use"]
            if isinstance(use, list):
                if len(use) != len(rows):
                    raise InputError(source, f"$.jobs[{j}].configurations[{o}].use", f"{len(rows)} numbers (one per row)", f"{len(use)}")
                ks = [k for k, a in enumerate(use) if a != 0]
                data.extend(use[k] for k in ks)
            else:
                unknown = [k for k in use if k not in row_index]
                if unknown:
                    raise InputError(source, f"$.jobs[{j}].configurations[{o}].use.{unknown[0]}", f"a row name ({', '.join(row_names[:6])}...)", unknown[0])
                ks = [row_index[k] for k in use]
                data.extend(use.values())
            r_idx.extend(ks)
            c_idx.extend([col] * len(ks))
            col += 1
    A = sp.csr_matrix((data, (r_idx, c_idx)), shape=(len(rows), col))
    return MCMDK(np.array(values, dtype=float), A, np.array([r["capacity"] for r in rows], dtype=float),
                 np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), doc.get("sense", "max"),
                 doc.get("choose", "at_most_one"), doc.get("name", ""), tuple(names), tuple(row_names),
                 tuple(labels) if any(labels) else None, parse_reference(doc), doc.get("meta", {}), source,
                 doc.get("description", ""))


def _num(x: float):
    return int(x) if float(x).is_integer() and abs(x) < 2**53 else float(x)


def dump(inst: MCMDK) -> dict:
    A = inst.A.tocsc()
    dense = inst.n_rows <= 64 or A.nnz > 0.5 * inst.n_rows * max(inst.n_cols, 1)
    jobs = []
    for j in range(inst.n_jobs):
        cfgs = []
        for col in range(inst.job_ptr[j], inst.job_ptr[j + 1]):
            lo, hi = A.indptr[col], A.indptr[col + 1]
            if dense:
                use = [0] * inst.n_rows
                for k, a in zip(A.indices[lo:hi].tolist(), A.data[lo:hi].tolist()):
                    use[k] = _num(a)
            else:
                use = {inst.row_name(k): _num(a) for k, a in zip(A.indices[lo:hi].tolist(), A.data[lo:hi].tolist())}
            cfg = {"value": _num(inst.value[col]), "use": use}
            if inst.config_labels and inst.config_labels[col]:
                cfg = {"label": inst.config_labels[col], **cfg}
            cfgs.append(cfg)
        jobs.append({"name": inst.job_name(j), "configurations": cfgs})
    doc = {"name": inst.name, **({"description": inst.description} if inst.description else {}), "sense": inst.sense, "choose": inst.choose, **dump_reference(inst.reference),
           "rows": [{"name": inst.row_name(k), "capacity": _num(inst.b[k])} for k in range(inst.n_rows)], "jobs": jobs}
    if inst.meta:
        doc["meta"] = inst.meta
    return doc


def parse_solution(inst: MCMDK, sol, source: str) -> np.ndarray:
    """A core solution: a list with the chosen configuration index of every job (-1 = none)."""
    return np.array(int_list(sol, source, "$.solution"), dtype=np.int64)


def dump_solution(choice) -> list[int] | None:
    return None if choice is None else [int(o) for o in choice]
