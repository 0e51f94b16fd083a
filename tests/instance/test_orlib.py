"""OR-Library readers and the acceptance runs of issue 2: every problem to its known optimum."""

from pathlib import Path

import pytest

import dlsched
from dlsched.errors import InputError
from dlsched.instance import orlib
from dlsched.result import Status

BACKENDS = ["highs", "pyomo", "cvxpy"]


def sac94_files(data):
    return sorted((data / "orlib/mkp/sac94").glob("*/*.dat"))


def test_mknap1_header(data):
    path = data / "orlib/mkp/mknap1.txt"
    assert orlib.count_mkp_problems(path) == 7
    inst = dlsched.load(path, problem=0)
    assert (inst.n_jobs, inst.n_rows, inst.reference.objective) == (6, 10, 3800)
    assert inst.value.tolist() == [100, 600, 1200, 2400, 500, 2000]
    assert inst.b.tolist() == [80, 96, 20, 36, 44, 48, 10, 18, 22, 24]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("k", range(7))
def test_mknap1_optimum(data, k, backend):
    inst = dlsched.load(data / "orlib/mkp/mknap1.txt", problem=k)
    res = dlsched.solve(inst, backend=backend, gap=0.0, threads=1)
    assert res.status == Status.OPTIMAL
    assert res.objective == pytest.approx(inst.reference.objective, abs=1e-6)
    assert dlsched.check(inst, res).feasible


def test_chu_beasley_problems_carry_their_best_known_value(data, tmp_path):
    """A problem of a Chu-Beasley file gets the best known value of the mkcbres.txt beside it (not
    an optimum); a copy of the file without the table beside it has no reference."""
    inst = dlsched.load(data / "orlib/mkp/mknapcb1.txt", problem=1)
    assert inst.reference.objective == 24274 and not inst.reference.optimal
    assert inst.reference.source == "mkcbres.txt 5.100-01"
    alone = tmp_path / "mknapcb1.txt"
    alone.write_text((data / "orlib/mkp/mknapcb1.txt").read_text())
    assert dlsched.load(alone, problem=1).reference is None


def solve_to_optimum(paths, backend):
    for path in paths:
        inst = dlsched.load(path)
        res = dlsched.solve(inst, backend=backend, gap=0.0, threads=1, time_limit=60)
        assert res.status == Status.OPTIMAL, path
        assert res.objective == pytest.approx(inst.reference.objective, abs=1e-6), path
        report = dlsched.check(inst, res)
        assert report.feasible and report.objective == pytest.approx(res.objective), path


@pytest.mark.parametrize("backend", BACKENDS)
def test_sac94_optimum(data, backend):
    """Every SAC-94 file by the matrix path; by the modelling front ends (about 1 s a file to build
    through Pyomo or CVXPY) every fifth file in the default run, every file under ``-m slow``."""
    files = sac94_files(data)
    assert len(files) >= 50
    solve_to_optimum(files if backend == "highs" else files[::5], backend)


@pytest.mark.slow
@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "highs"])
def test_sac94_optimum_every_file_by_the_front_ends(data, backend):
    solve_to_optimum(sac94_files(data), backend)


def gap_cases(data):
    bounds = orlib.gap_bounds(data / "orlib/gap/bounds.txt")
    return [(name, sense, lb) for (name, sense), (lb, ub) in sorted(bounds.items()) if lb == ub]


def solve_gap_to_optima(data, cases):
    unfinished = []
    for name, sense, opt in cases:
        inst = dlsched.load(data / "orlib/gap" / name, sense=sense)
        assert inst.reference is not None and inst.reference.objective == opt
        res = dlsched.solve(inst, gap=0.0, threads=1, time_limit=20)
        assert res.status.has_solution(), (name, sense)
        assert dlsched.check(inst, res).feasible
        if res.status == Status.OPTIMAL:
            assert res.objective == pytest.approx(opt), (name, sense)
        else:
            unfinished.append((name, sense, res.gap))
            # the bound must still bracket the optimum
            assert (res.bound >= opt - 1e-6) if sense == "max" else (res.bound <= opt + 1e-6)
    assert len(unfinished) <= 2, unfinished


def test_gap_known_optima(data):
    """GAP instances with LB = UB to that value (HiGHS matrix path): every fifth in name and sense
    order in the default run (two of each of the 12 sizes, both senses; 0.2 s each, 120 in all),
    every one under ``-m slow``."""
    cases = gap_cases(data)
    assert len(cases) >= 100
    some = cases[::5]
    assert {n[:5] for n, _, _ in some} == {n[:5] for n, _, _ in cases} and {s for _, s, _ in some} == {"max", "min"}
    solve_gap_to_optima(data, some)


@pytest.mark.slow
def test_gap_known_optima_every_instance(data):
    solve_gap_to_optima(data, gap_cases(data))


@pytest.mark.parametrize("backend", BACKENDS)
def test_gap_backends(data, backend):
    for sense, opt in (("max", 336), ("min", 261)):
        inst = dlsched.load(data / "orlib/gap/c0515_1", sense=sense)
        res = dlsched.solve(inst, backend=backend)
        assert res.objective == pytest.approx(opt)
        assert dlsched.check(inst, res).feasible


# ------------------------------------------------------------------ bad input

def test_truncated_mkp(tmp_path, data):
    lines = (data / "orlib/mkp/mknap1.txt").read_text().splitlines()
    bad = tmp_path / "trunc.txt"
    bad.write_text("\n".join(lines[:8]))
    with pytest.raises(InputError) as err:
        dlsched.load(bad)
    msg = str(err.value)
    assert "trunc.txt" in msg and "end of file" in msg and "constraint matrix" in msg


def test_problem_out_of_range(data):
    with pytest.raises(InputError, match=r"problem index in 0\.\.6, found 7"):
        dlsched.load(data / "orlib/mkp/mknap1.txt", problem=7)


def test_one_problem_file_rejects_problem_index(data):
    with pytest.raises(InputError, match="holds one problem"):
        dlsched.load(sac94_files(data)[0], problem=2)


def test_non_number_token(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("1\n2 1 0\n5 x\n1 1\n3\n")
    with pytest.raises(InputError, match=r"bad.txt: at line 3, token 6: expected a plain decimal number in the 2 profits, found x"):
        dlsched.load(bad)


def test_truncated_gap(tmp_path, data):
    lines = (data / "orlib/gap/c0515_1").read_text().splitlines()
    bad = tmp_path / "gapcut"
    bad.write_text("\n".join(lines[:6]))
    with pytest.raises(InputError, match="gapcut: .*expected 75 numbers for the 5 x 15 resource matrix"):
        dlsched.load(bad, format="gap")


def test_missing_file():
    with pytest.raises(InputError, match="no such file"):
        dlsched.load(Path("/nonexistent/file.txt"))
