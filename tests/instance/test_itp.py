"""Microsoft ITP traces (the ElasticFlow layout): the real files, the elastic variant, the ``SxG``
cluster that sizes a trace which names none, and every kind of bad row."""

import csv

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from dlsched.errors import InputError
from dlsched.instance.cluster_spec import load_cluster, servers_by_gpus
from dlsched.instance.traces import ITP_COLUMNS, load_itp_trace, load_trace, trace_format
from dlsched.sim.policy import Placement
from dlsched.sim.speed import DurationSpeed

HEADER = ",".join(ITP_COLUMNS)
ROW = "a1,100,5000,resnet50,9000,64,4,3600"


def itp_files(data):
    return sorted((data / "microsoft-itp").glob("*.csv"))


def test_every_itp_file_loads_without_loss(data):
    files = itp_files(data)
    assert len(files) == 9
    for path in files:
        with open(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
        assert trace_format(path) == "itp"
        trace = load_trace(path)
        assert len(trace) == len(rows), path.name
        for job, row in zip(trace.jobs[:200], rows):
            assert job.name == f"itp-{row['job_id']}" and job.arrival == float(row["submission_time"])
            assert job.min_workers == job.max_workers == int(row["num_gpu"]) and job.worker_demand == {"gpu": 1.0}
            assert job.iterations == float(row["num_iteration"]) and job.job_type == row["model_name"]
            assert job.meta["duration"] == float(row["duration"]) and job.meta["batch_size"] == int(row["batch_size"])
    assert len(load_trace(data / "microsoft-itp" / "cluster04.csv")) == 15802


def test_rigid_jobs_take_their_recorded_duration_elastic_ones_shrink(data):
    path = data / "microsoft-itp" / "195job.csv"
    rigid, elastic = load_trace(path), load_trace(path, "itp-elastic")
    cluster = servers_by_gpus("4x16")
    speed = DurationSpeed()
    for r, e in zip(rigid.jobs, elastic.jobs):
        n = r.max_workers
        assert r.iterations / speed.rate(r, Placement({0: n}), cluster) == pytest.approx(r.meta["duration"])
        assert (e.min_workers, e.max_workers, e.iterations, e.meta) == (1, n, r.iterations, r.meta)
        # below the recorded size, linear in the workers (the documented speed source)
        assert speed.rate(e, Placement({0: 1}), cluster) == pytest.approx(speed.rate(e, Placement({0: n}), cluster) / n)
    assert load_itp_trace(path, elastic=True).jobs[1].min_workers == 1


def test_servers_by_gpus_cluster():
    c = load_cluster("80x8")
    assert c.n_servers == 80 and c.resources == ("gpu",) and c.total().tolist() == [640.0] and c.source == "80x8"
    for bad in ("0x8", "8x0", "8x", "x8", "8*8", "200000x1"):
        with pytest.raises(InputError):
            servers_by_gpus(bad)
    with pytest.raises(InputError, match="SxG"):
        load_cluster("80y8")


@pytest.mark.parametrize("rows, where, words", [
    (["a1,100,5000,resnet50,9000,64,4"], "line 2", "8 comma-separated fields"),
    (["a1,100,5000,resnet50,9000,64,0,3600"], "line 2, num_gpu", "an integer >= 1"),
    (["a1,100,5000,resnet50,9000,64,2.5,3600"], "line 2, num_gpu", "2.5"),
    (["a1,100,5000,resnet50,9000,64,4,0"], "line 2, duration", "> 0"),
    (["a1,100,5000,resnet50,9000,64,4,nan"], "line 2, duration", "nan"),
    (["a1,100,-1,resnet50,9000,64,4,3600"], "line 2, num_iteration", "-1"),
    (["a1,100,5000,resnet50,50,64,4,3600"], "line 2, deadline", "submission_time 100"),
    (["a1,100,5000,resnet50,9000,0,4,3600"], "line 2, batch_size", "an integer >= 1"),
    (["a1,-3,5000,resnet50,9000,64,4,3600"], "line 2, submission_time", "-3"),
    (["a1,100,5000,,9000,64,4,3600"], "line 2, model_name", "empty"),
    ([ROW, "a2,50,5000,vgg16,9000,64,4,3600"], "line 3", "arrivals in order"),
    ([ROW, ROW], "line 3", "unique job name"),
    ([], "line 2", "no rows"),
])
def test_bad_rows_name_file_line_and_column(tmp_path, rows, where, words):
    p = tmp_path / "itp.csv"
    p.write_text("\n".join([HEADER, *rows]) + "\n")
    with pytest.raises(InputError) as e:
        load_trace(p)
    assert e.value.source == str(p) and e.value.where == where and words in str(e.value)


def test_missing_or_unknown_column(tmp_path):
    p = tmp_path / "itp.csv"
    p.write_text(HEADER + ",colour\n" + ROW + ",red\n")
    with pytest.raises(InputError, match="unknown \\['colour'\\]"):
        load_itp_trace(p)
    p.write_text(HEADER.replace(",deadline", "") + "\n" + ROW.replace(",9000", "") + "\n")
    with pytest.raises(InputError, match="missing \\['deadline'\\]"):
        load_itp_trace(p)


mutation = st.tuples(st.sampled_from(["field", "drop_field", "swap", "drop_line", "dup_line", "truncate"]),
                     st.integers(0, 7), st.integers(0, 9),
                     st.sampled_from(["", "-1", "nan", "inf", "1e308", "x", "0", "-0.5", "\"", "3.5", ",", "1e9"]))


def mutate(lines, mutations):
    lines = list(lines)
    for kind, i, k, value in mutations:
        if not lines:
            break
        i %= len(lines)
        cols = lines[i].split(",")
        k %= len(cols)
        if kind == "field":
            cols[k] = value
            lines[i] = ",".join(cols)
        elif kind == "drop_field":
            del cols[k]
            lines[i] = ",".join(cols)
        elif kind == "swap":
            j = (i + 1) % len(lines)
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "drop_line":
            del lines[i]
        elif kind == "dup_line":
            lines.insert(i, lines[i])
        else:
            lines[i] = lines[i][: len(lines[i]) // 2]
    return lines


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=st.lists(mutation, min_size=1, max_size=3), elastic=st.booleans())
def test_mutated_itp_excerpt_loads_or_raises_input_error(data, tmp_path, mutations, elastic):
    lines = mutate((data / "microsoft-itp" / "cluster04.csv").read_text().splitlines()[:8], mutations)
    p = tmp_path / "mutated.csv"
    p.write_text("\n".join(lines) + "\n")
    try:
        trace = load_itp_trace(p, elastic=elastic)
    except InputError as e:
        assert e.source == str(p) and e.where.startswith("line")
        column = e.where.partition(", ")[2]
        assert not column or column in ITP_COLUMNS     # a bad field names its column
    else:
        assert len(trace) >= 1
        for j in trace.jobs:
            assert np.isfinite([j.arrival, j.iterations, j.meta["duration"]]).all() and j.meta["duration"] > 0
            assert j.max_workers >= 1 and j.min_workers == (1 if elastic else j.max_workers)
            assert j.meta["deadline"] >= j.arrival
