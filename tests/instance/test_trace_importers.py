"""Trace and cluster importers on the real files of shared/data, and every kind of bad input."""

import csv
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from dlsched.errors import InputError
from dlsched.instance.cluster_spec import (gavel_cluster, load_cluster, load_gavel_cluster_specs, load_tiresias_cluster,
                                           openb_cluster, parse_cluster_spec, servers_by_gpus)
from dlsched.instance.traces import (ITP_COLUMNS, load_gavel_trace, load_itp_trace, load_openb_pods, load_pollux_trace,
                                     load_tiresias_trace, load_trace, trace_format)
from dlsched.instance.workload import Trace
from dlsched.sim.policy import Placement
from dlsched.sim.speed import DurationSpeed


def csv_rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def trace_files(data):
    return sorted((data / "gavel").glob("*.trace")) + [data / "tiresias" / "60_job.csv",
                                                       data / "alibaba-openb" / "openb_pod_list_default.csv"]


# ----------------------------------------------------------------------------- real files

def test_every_trace_file_loads_without_loss(data):
    files = trace_files(data)
    assert len(files) == 7
    for path in files:
        if path.suffix == ".trace":
            rows = sum(1 for line in path.read_text().splitlines() if line.strip())
        else:
            rows = len(csv_rows(path))
        trace = load_trace(path)
        assert isinstance(trace, Trace) and len(trace) == rows, path.name


def test_gavel_both_layouts_map_their_columns(data):
    msr = load_gavel_trace(data / "gavel" / "msr_seed0_2869ce.trace")
    j = msr.jobs[0]
    assert (j.job_type, j.iterations, j.arrival, j.max_workers, j.min_workers) == ("Transformer (batch size 128)", 5352613, 0.0, 4, 4)
    assert msr.jobs[2].arrival == 352430.0 and not j.uses_ps
    phys = load_gavel_trace(data / "gavel" / "physical_max_min_fairness.trace")
    j = phys.jobs[0]
    assert (j.job_type, j.iterations, j.max_workers, j.weight, j.arrival) == ("ResNet-18 (batch size 128)", 925982, 4, 1.0, 0.0)
    assert {j.max_workers for t in (msr, phys) for j in t.jobs} >= {1, 2, 4, 8}


def test_tiresias_rows_and_duration_convention(data):
    path = data / "tiresias" / "60_job.csv"
    trace = load_tiresias_trace(path)
    rows = csv_rows(path)
    speed = DurationSpeed()
    cluster = load_tiresias_cluster(data / "tiresias" / "n32g4.csv")
    for job, row in zip(trace.jobs, rows):
        assert job.iterations == float(row["iterations"]) and job.max_workers == int(row["num_gpu"])
        assert job.arrival == float(row["submit_time"]) and job.job_type == row["model_name"]
        # at the requested size the job takes exactly its recorded duration
        rate = speed.rate(job, Placement({0: job.max_workers}), cluster)
        assert job.iterations / rate == pytest.approx(float(row["duration"]))


def test_openb_pods_gpu_shares_cpu_pods_and_durations(data):
    path = data / "alibaba-openb" / "openb_pod_list_default.csv"
    rows = {r["name"]: r for r in csv_rows(path)}
    trace = load_openb_pods(path)
    assert len(trace) == len(rows) == 8152
    cpu_pods = [j for j in trace.jobs if j.meta["num_gpu"] == 0]
    assert len(cpu_pods) == sum(r["num_gpu"] == "0" for r in rows.values()) > 0
    for j in trace.jobs:
        r = rows[j.name]
        k = int(r["num_gpu"])
        assert j.max_workers == max(k, 1)
        assert j.worker_demand.get("gpu", 0.0) == pytest.approx(int(r["gpu_milli"]) / 1000 if k else 0.0)
        assert j.worker_demand["cpu"] * j.max_workers == pytest.approx(int(r["cpu_milli"]) / 1000)
        assert j.worker_demand["memory"] * j.max_workers == pytest.approx(int(r["memory_mib"]) / 1024)
        life = float(r["deletion_time"]) - float(r["creation_time"])
        assert j.meta["duration"] == max(life, 1.0) and j.iterations == j.meta["duration"]
        assert j.meta["phase"] == r["pod_phase"]
    assert trace.jobs[1].worker_demand["gpu"] == pytest.approx(0.46)


def test_openb_node_lists_are_clusters(data):
    for name in ("openb_node_list_gpu_node.csv", "openb_node_list_all_node.csv"):
        path = data / "alibaba-openb" / name
        rows = csv_rows(path)
        c = load_cluster(path)
        assert c.n_servers == len(rows)
        assert c.total()[c.index("gpu")] == sum(int(r["gpu"]) for r in rows)
        assert c.capacity[0, c.index("cpu")] == int(rows[0]["cpu_milli"]) / 1000
        assert c.gpu_type[0] == rows[0]["model"]
    # the pods fit the nodes' resource names: each pod's demand is a vector of this cluster
    c = openb_cluster()
    pods = load_openb_pods()
    assert all(c.vector(j.worker_demand).shape == (3,) for j in pods.jobs[:50])


def test_gavel_cluster_specs_and_three_type_cluster(data):
    specs = load_gavel_cluster_specs(data / "gavel" / "cluster_specs.json")
    doc = json.loads((data / "gavel" / "cluster_specs.json").read_text())
    assert list(specs) == list(doc)
    for vc, clusters in specs.items():
        for c, spec in zip(clusters, doc[vc]):
            v, p, k = (int(x) for x in spec.split(":"))
            totals = {t: c.capacity[[g == t for g in c.gpu_type], 0].sum() for t in ("v100", "p100", "k80")}
            assert totals == {"v100": v, "p100": p, "k80": k}
    three = gavel_cluster("36:36:36")
    assert three.total()[0] == 108 and set(three.gpu_type) == {"v100", "p100", "k80"}
    odd = gavel_cluster("5:0:2", gpus_per_server=4)
    assert sorted(odd.capacity[:, 0].tolist()) == [1.0, 2.0, 4.0]


def test_tiresias_cluster(data):
    c = load_cluster(data / "tiresias" / "n32g4.csv")
    assert c.n_servers == 32 and c.total().tolist() == [128.0, 1280.0, 8192.0] and c.rack.max() == 0


def test_load_trace_detects_formats_and_synthetic_names(data, tmp_path):
    assert trace_format(data / "tiresias" / "60_job.csv") == "tiresias"
    assert trace_format(data / "alibaba-openb" / "openb_pod_list_default.csv") == "openb"
    p = tmp_path / "gavel.txt"
    p.write_text((data / "gavel" / "msr_seed0_0e4a51.trace").read_text().splitlines()[0] + "\n")
    assert trace_format(p) == "gavel" and len(load_trace(p)) == 1
    assert len(load_trace("dl2:7:3")) == 7 and len(load_trace("poisson:5")) == 5
    assert load_cluster("dl2:4").n_servers == 4
    with pytest.raises(InputError, match="format"):
        load_trace(p, format="slurm")


# ----------------------------------------------------------------------------- Pollux/Sia

POLLUX_HEADER = "name,time,application,num_replicas,batch_size"


def test_pollux_workload_with_each_kind_of_work(tmp_path):
    p = tmp_path / "w.csv"
    p.write_text(f"{POLLUX_HEADER},duration\ncifar10-0,0,cifar10,2,128,600\nbert-1,30,bert,4,12,1200\n")
    t = load_trace(p)
    assert [j.max_workers for j in t.jobs] == [2, 4] and t.jobs[1].meta["duration"] == 1200.0
    assert t.jobs[0].iterations == 600.0 and t.jobs[1].arrival == 30.0
    p.write_text(f"{POLLUX_HEADER},samples\nimagenet-0,5,imagenet,4,256,1024000\n")
    assert load_pollux_trace(p).jobs[0].iterations == pytest.approx(1024000 / (4 * 256))
    p.write_text(f"{POLLUX_HEADER}\nncf-0,0,ncf,1,64\n")
    assert load_pollux_trace(p, work={"ncf": 5000}).jobs[0].iterations == 5000
    with pytest.raises(InputError, match="line 2") as e:
        load_pollux_trace(p)
    assert "ncf" in str(e.value)


# ------------------------------------------------------------------------------ bad input

TIRESIAS_HEADER = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval"


@pytest.mark.parametrize("text, where, words", [
    ("job_id,num_gpu,submit_time,iterations,model_name,duration\n0,1,0,5,vgg,3\n", "line 1", "missing ['interval']"),
    (TIRESIAS_HEADER + ",colour\n0,1,0,5,vgg,3,1,red\n", "line 1", "unknown ['colour']"),
    (TIRESIAS_HEADER + "\n0,1,0,5,vgg,-3,1\n", "line 2, duration", "-3"),
    (TIRESIAS_HEADER + "\n0,1,0,5,vgg,3,1\n1,-2,4,5,vgg,3,1\n", "line 3, num_gpu", "-2"),
    (TIRESIAS_HEADER + "\n0,1,10,5,vgg,3,1\n1,1,4,5,vgg,3,1\n", "line 3", "arrivals in order"),
    (TIRESIAS_HEADER + "\n", "line 2", "no rows"),
    (TIRESIAS_HEADER + "\n0,1,nan,5,vgg,3,1\n", "line 2, submit_time", "nan"),
    (TIRESIAS_HEADER + "\n0,1,0,inf,vgg,3,1\n", "line 2, iterations", "inf"),
    (TIRESIAS_HEADER + "\n0,1,0,5,vgg,3\n", "line 2", "7 comma-separated fields"),
    (TIRESIAS_HEADER + "\n0,two,0,5,vgg,3,1\n", "line 2, num_gpu", "two"),
])
def test_tiresias_bad_input_names_file_and_line(tmp_path, text, where, words):
    p = tmp_path / "jobs.csv"
    p.write_text(text)
    with pytest.raises(InputError) as e:
        load_tiresias_trace(p)
    assert e.value.source == str(p) and e.value.where == where and words in str(e.value)


def gavel_line(steps="100", arrival="0.0", sf="1"):
    return "\t".join(["ResNet-50 (batch size 64)", "python3 main.py", "--num_steps", "1", steps, arrival, sf])


@pytest.mark.parametrize("lines, where", [
    ([gavel_line(), "a\tb\tc"], "line 2"),
    ([gavel_line(steps="-5")], "line 1, total_steps"),
    ([gavel_line(sf="0")], "line 1, scale_factor"),
    ([gavel_line(arrival="inf")], "line 1, arrival time"),
    ([gavel_line(arrival="9"), gavel_line(arrival="3")], "line 2"),
    ([""], "line 1"),
])
def test_gavel_bad_input_names_file_and_line(tmp_path, lines, where):
    p = tmp_path / "bad.trace"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as e:
        load_gavel_trace(p)
    assert e.value.source == str(p) and e.value.where == where


def test_openb_bad_input(tmp_path, data):
    head = (data / "alibaba-openb" / "openb_pod_list_default.csv").read_text().splitlines()[:3]
    p = tmp_path / "pods.csv"
    p.write_text("\n".join([head[0], head[1], head[2].replace(",427061,12902960,", ",427061,100,")]) + "\n")
    with pytest.raises(InputError) as e:
        load_openb_pods(p)
    assert e.value.where == "line 3, deletion_time"
    p.write_text("\n".join([head[0], head[1].replace(",1,1000,", ",1,0,")]) + "\n")
    with pytest.raises(InputError, match="gpu_milli"):
        load_openb_pods(p)


def test_missing_file_and_unknown_format(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_trace(tmp_path / "nope.trace")
    p = tmp_path / "x.csv"
    p.write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="line 1"):
        load_trace(p)
    with pytest.raises(InputError, match="no such file"):
        load_cluster(tmp_path / "nope.json")


# ------------------------------------------------------------------------------- cluster spec

def test_cluster_spec_servers_groups_racks_and_bandwidths():
    c = parse_cluster_spec({"servers": [{"name": "big", "capacity": {"gpu": 8, "cpu": 64}, "gpu_type": "A100", "rack": 2}],
                            "groups": [{"count": 3, "capacity": {"gpu": 4}, "gpu_type": "v100"}],
                            "servers_per_rack": 2, "inter_rack_gbps": 25, "inter_server_gbps": 40})
    assert c.names == ("big", "v100-0", "v100-1", "v100-2")
    assert c.resources == ("gpu", "cpu") and c.capacity[1].tolist() == [4.0, 0.0]
    assert c.rack.tolist() == [2, 0, 1, 1] and c.inter_rack_gbps == 25 and c.inter_server_gbps == 40
    assert c.gpu_type == ("A100", "v100", "v100", "v100")


@pytest.mark.parametrize("doc, where", [
    ({}, "$"),
    ({"servers": []}, "$.servers"),
    ({"servers": [{"capacity": {"gpu": -1}}]}, "$.servers[0].capacity.gpu"),
    ({"servers": [{"capacity": {"gpu": 1}, "colour": "red"}]}, "$.servers[0]"),
    ({"groups": [{"count": 0, "capacity": {"gpu": 1}}]}, "$.groups[0].count"),
    ({"servers": [{"capacity": {"gpu": float("nan")}}]}, "$.servers[0].capacity.gpu"),
    ({"servers": [{"capacity": {"gpu": 1}}], "inter_rack_gbps": 0}, "$.inter_rack_gbps"),
    ({"servers": [{"name": "a", "capacity": {"gpu": 1}}, {"name": "a", "capacity": {"gpu": 1}}]}, "$.servers"),
    ({"servers": [{"capacity": {"gpu": 0, "cpu": 8}}]}, "servers"),
])
def test_cluster_spec_errors_name_the_json_path(doc, where):
    with pytest.raises(InputError) as e:
        parse_cluster_spec(doc, "c.json")
    assert e.value.source == "c.json" and e.value.where == where


def test_cluster_spec_file_and_bad_gavel_specs(tmp_path):
    p = tmp_path / "c.json"
    p.write_text(json.dumps({"groups": [{"count": 2, "capacity": {"gpu": 8}, "gpu_type": "v100"}]}))
    assert load_cluster(p).total().tolist() == [16.0]
    p.write_text('{"groups": [')
    with pytest.raises(InputError, match="line 1"):
        load_cluster(p)
    p.write_text(json.dumps({"philly": ["0:0:0"]}))
    with pytest.raises(InputError, match="at least one GPU"):
        load_cluster(p)
    p.write_text(json.dumps({"philly": ["8:8"]}))
    with pytest.raises(InputError, match="philly"):
        load_cluster(p)
    q = tmp_path / "n.csv"
    q.write_text("num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,4,0,8,64\n")
    with pytest.raises(InputError, match="GPU"):
        load_cluster(q)


# ------------------------------------------------------------------ fuzzing real excerpts

def _excerpts(data):
    out = {}
    for path in trace_files(data)[:1] + trace_files(data)[3:4] + trace_files(data)[-2:]:
        out[path.suffix + path.name] = (path.suffix, path.read_text().splitlines()[:6])
    return out


mutation = st.tuples(st.sampled_from(["field", "drop_field", "swap", "drop_line", "dup_line", "truncate"]),
                     st.integers(0, 5), st.integers(0, 12),
                     st.sampled_from(["", "-1", "nan", "inf", "1e308", "x", "0", "-0.5", "\"", "3.5", ",", "\t"]))


def mutate(lines, mutations, sep):
    lines = list(lines)
    for kind, i, k, value in mutations:
        if not lines:
            break
        i %= len(lines)
        cols = lines[i].split(sep)
        k %= len(cols)
        if kind == "field":
            cols[k] = value
            lines[i] = sep.join(cols)
        elif kind == "drop_field":
            del cols[k]
            lines[i] = sep.join(cols)
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
@given(which=st.integers(0, 3), mutations=st.lists(mutation, min_size=1, max_size=3))
def test_mutated_real_excerpts_load_or_raise_input_error(data, tmp_path, which, mutations):
    suffix, lines = list(_excerpts(data).values())[which]
    lines = mutate(lines, mutations, "\t" if suffix == ".trace" else ",")
    p = tmp_path / f"mutated{suffix}"
    p.write_text("\n".join(lines) + "\n")
    try:
        trace = load_trace(p)
    except InputError as e:
        assert e.source == str(p) and (e.where.startswith("line") or e.where == "file")
    else:
        assert len(trace) >= 1 and all(np.isfinite([j.arrival, j.iterations]).all() for j in trace.jobs)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from(["alibaba-openb/openb_node_list_all_node.csv", "tiresias/n32g4.csv"]),
       mutations=st.lists(mutation, min_size=1, max_size=3))
def test_mutated_cluster_files_load_or_raise_input_error(data, tmp_path, which, mutations):
    lines = mutate((data / which).read_text().splitlines()[:5], mutations, ",")
    p = tmp_path / "mutated.csv"
    p.write_text("\n".join(lines) + "\n")
    try:
        c = load_cluster(p)
    except InputError as e:
        assert e.source == str(p)
    else:
        assert np.isfinite(c.capacity).all() and c.total()[c.index("gpu")] > 0

def test_docs_table_is_what_the_command_prints(data):
    from pathlib import Path

    from dlsched.instance.inventory import data_table

    doc = (Path(__file__).resolve().parents[2] / "docs" / "simulator-data.md").read_text()
    for line in data_table(data).splitlines():
        assert line in doc, line


@settings(max_examples=40, deadline=None)
@given(caps=st.lists(st.tuples(st.integers(0, 8), st.floats(0, 64, allow_nan=False), st.sampled_from(["", "v100", "k80"]),
                               st.integers(0, 3)), min_size=1, max_size=6),
       inter=st.floats(0.5, 100))
def test_cluster_spec_round_trip(caps, inter):
    from dlsched.instance.cluster import Cluster
    from dlsched.instance.cluster_spec import cluster_to_spec

    if sum(c[0] for c in caps) == 0:
        caps[0] = (1, *caps[0][1:])
    c = Cluster(("gpu", "cpu"), np.array([[g, cpu] for g, cpu, _, _ in caps], dtype=float), tuple(t for _, _, t, _ in caps),
                np.array([r for *_, r in caps]), tuple(f"n{i}" for i in range(len(caps))), inter_server_gbps=inter)
    back = parse_cluster_spec(json.loads(json.dumps(cluster_to_spec(c))), "rt.json")
    assert back.resources == c.resources and np.array_equal(back.capacity, c.capacity)
    assert back.gpu_type == c.gpu_type and back.names == c.names and back.rack.tolist() == c.rack.tolist()
    assert (back.intra_server_gbps, back.inter_server_gbps, back.inter_rack_gbps) == (
        c.intra_server_gbps, c.inter_server_gbps, c.inter_rack_gbps)


def test_openb_nodes_round_trip_through_a_spec(data):
    from dlsched.instance.cluster_spec import cluster_to_spec

    c = openb_cluster(data / "alibaba-openb" / "openb_node_list_all_node.csv")
    back = parse_cluster_spec(cluster_to_spec(c))
    assert np.array_equal(back.capacity, c.capacity) and back.gpu_type == c.gpu_type


def test_tiresias_cluster_without_gpus_names_the_file(tmp_path):
    """Found by hypothesis (n32g4.csv with num_gpu_p_node = 0): the cluster's own check must name the file."""
    f = tmp_path / "n1g0.csv"
    f.write_text("num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,2,0,40,256\n")
    with pytest.raises(InputError) as e:
        load_tiresias_cluster(f)
    assert e.value.source == str(f) and "GPU" in str(e.value)


# ---------------------------------------------- Microsoft ITP (ElasticFlow layout), SxG clusters

ITP_HEADER = ",".join(ITP_COLUMNS)
ITP_ROW = "a1,100,5000,resnet50,9000,64,4,3600"


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
    ([ITP_ROW, "a2,50,5000,vgg16,9000,64,4,3600"], "line 3", "arrivals in order"),
    ([ITP_ROW, ITP_ROW], "line 3", "unique job name"),
    ([], "line 2", "no rows"),
])
def test_itp_bad_rows_name_file_line_and_column(tmp_path, rows, where, words):
    p = tmp_path / "itp.csv"
    p.write_text("\n".join([ITP_HEADER, *rows]) + "\n")
    with pytest.raises(InputError) as e:
        load_trace(p)
    assert e.value.source == str(p) and e.value.where == where and words in str(e.value)


def test_itp_missing_or_unknown_column(tmp_path):
    p = tmp_path / "itp.csv"
    p.write_text(ITP_HEADER + ",colour\n" + ITP_ROW + ",red\n")
    with pytest.raises(InputError, match="unknown \\['colour'\\]"):
        load_itp_trace(p)
    p.write_text(ITP_HEADER.replace(",deadline", "") + "\n" + ITP_ROW.replace(",9000", "") + "\n")
    with pytest.raises(InputError, match="missing \\['deadline'\\]"):
        load_itp_trace(p)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=st.lists(mutation, min_size=1, max_size=3), elastic=st.booleans())
def test_mutated_itp_excerpt_loads_or_raises_input_error(data, tmp_path, mutations, elastic):
    lines = mutate((data / "microsoft-itp" / "cluster04.csv").read_text().splitlines()[:8], mutations, ",")
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
