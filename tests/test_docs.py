"""The documentation: every figure has the command that made it beside it; the site builds strictly."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
FIGURE = re.compile(r"[\w./-]+\.png")
COMMAND = re.compile(r"`[^`]*(?:dlsched |python )[^`]*`")
NEAR = 6      # lines either side of a figure where its command must be


def figure_mentions() -> list[tuple[Path, int, str]]:
    out = []
    for md in sorted(DOCS.rglob("*.md")):
        for k, line in enumerate(md.read_text().splitlines()):
            for m in FIGURE.finditer(line):
                if "figures/" in m.group() or line.lstrip().startswith("!["):
                    out.append((md, k, m.group()))
    return out


def test_every_figure_has_its_command_beside_it():
    mentions = figure_mentions()
    assert mentions
    missing = []
    for md, k, fig in mentions:
        lines = md.read_text().splitlines()
        window = "\n".join(lines[max(0, k - NEAR): k + NEAR + 1])
        if not COMMAND.search(window):
            missing.append(f"{md.relative_to(ROOT)}:{k + 1} {fig}")
    assert not missing, "figures without a command within %d lines: %s" % (NEAR, missing)


def test_every_figure_file_is_shown_somewhere():
    shown = {Path(fig).name for _, _, fig in figure_mentions()}
    files = [p for p in DOCS.rglob("*.png")]
    assert files and not [p for p in files if p.name not in shown]


RESULTS = DOCS / "results"
#: one generated page per area (docs/results/AREA/report.md)
AREAS = {"layers", "exact-solvers", "front-ends", "smd", "oasis", "hetplace", "simulator", "dl2", "timelimits"}
MAX_LINES = 400            # a results page is read in five minutes


def test_generated_pages_are_what_their_results_files_give(monkeypatch, capsys):
    """Every docs/results/*/report.md is remade from its committed results file(s) by the command
    written on it: a hand edit, or results changed without remaking the page, fails here."""
    from dlsched.bench.report import main, pages

    monkeypatch.chdir(ROOT)
    found = pages(RESULTS)
    assert {p.parent.name for p, _ in found} == AREAS
    stale = [str(p.relative_to(ROOT)) for p, argv in found if main([*argv, "--check"]) != 0]
    assert not stale, f"pages that differ from their results files (remake: dlsched report --pages docs/results): {stale}"


def test_results_pages_are_short():
    long = {str(p.relative_to(ROOT)): n for p in RESULTS.rglob("*.md") if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"results pages over {MAX_LINES} lines: {long}"


LINK = re.compile(r"\[([^\]]+)\]\(([\w./-]+/report\.md)(?:#([\w-]+))?\)")
NUMBER = re.compile(r"(?<![\w.,])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w.,]*\d)|(?<![\w.,])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w.,]*\d)")


def slug(heading: str) -> str:
    """The anchor MkDocs' toc gives a heading."""
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", heading.strip().lower()))


def guide_claims(text: str) -> tuple[list[str], set[str]]:
    """What is wrong with the links of the "which method when" guide: each number in a link's text
    must be in the generated page it points to (under the anchor's heading, when it has one);
    also the set of pages it links."""
    bad, linked = [], set()
    for m in LINK.finditer(text):
        label, target, anchor = m.groups()
        page = RESULTS / target
        linked.add(target)
        if not page.is_file():
            bad.append(f"{target}: no such page")
            continue
        body = page.read_text()
        if anchor is not None:
            parts = re.split(r"^#+ (.*)$", body, flags=re.M)
            found = {slug(h): b for h, b in zip(parts[1::2], parts[2::2])}
            if anchor not in found:
                bad.append(f"{target}#{anchor}: no such heading")
                continue
            body = found[anchor]
        for num in NUMBER.findall(label):
            if not re.search(rf"(?<![\w.]){re.escape(num)}(?![\w]|\.\d)", body):
                bad.append(f"{label!r}: {num} is not in {target}" + (f"#{anchor}" if anchor else ""))
    return bad, linked


def test_the_guide_quotes_the_generated_tables():
    """docs/results/index.md ("which method when") is written by hand; each figure it quotes sits in a
    link to the generated table it comes from, and that table must hold it."""
    text = (RESULTS / "index.md").read_text()
    bad, linked = guide_claims(text)
    assert not bad, bad
    assert {Path(t).parent.name for t in linked} == AREAS, "every results page is linked from the guide"
    assert len(LINK.findall(text)) >= 2 * len(AREAS)


def test_a_wrong_figure_in_the_guide_is_caught():
    text = (RESULTS / "index.md").read_text()
    m = next(m for m in LINK.finditer(text) if NUMBER.search(m.group(1)))
    num = NUMBER.search(m.group(1)).group()
    wrong = text.replace(m.group(0), m.group(0).replace(num, num + "97", 1), 1)
    assert guide_claims(wrong)[0]
    assert guide_claims(text.replace(m.group(0), m.group(0).replace(".md", ".md#no-such-heading"), 1))[0]


def test_a_hand_edited_page_is_caught(tmp_path, monkeypatch, capsys):
    import shutil

    from dlsched.bench.report import main

    monkeypatch.chdir(ROOT)
    page = RESULTS / "simulator" / "report.md"
    copy = tmp_path / "simulator"
    shutil.copytree(page.parent, copy)
    argv = ["docs/results/simulator/results.jsonl", "--out", str(copy), "--no-figures"]
    assert main(argv) == 0 and main([*argv, "--check"]) == 0
    (copy / "report.md").write_text((copy / "report.md").read_text().replace("| drf | 3/3", "| drf | 2/3"))
    assert main([*argv, "--check"]) == 1


def test_every_page_is_in_the_site_navigation():
    """Hand-written pages and generated reports alike (mkdocs only logs a page left out of nav)."""
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = [*DOCS.glob("*.md"), *RESULTS.rglob("*.md")]
    missing = [p.relative_to(DOCS).as_posix() for p in pages if f": {p.relative_to(DOCS).as_posix()}" not in nav]
    assert not missing, missing


@pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("mkdocs", "material", "mkdocstrings")),
                    reason="the docs tools are not installed (pip install -e '.[docs]')")
def test_site_builds_strictly(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin",
                                                                          "HOME": str(tmp_path)}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "index.html").read_text().count("run_suite") > 0


# --- README: every command runs as written -------------------------------------------------------

README = ROOT / "README.md"
FIRST = ["pip install -e '.[dev,rl,dist,solvers,docs]' && dlsched bench quick", "python -m pytest -q"]
#: README commands too slow for the test suite: checked (they parse, name a suite that exists,
#: read what the chain writes), not run
SLOW = {"bench", "train"}


def readme_blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", README.read_text(), flags=re.M | re.S)


def readme_commands() -> list[list[list[str]]]:
    """Every line of the README's bash blocks after the first, as chains (split at ``&&``) of argv lists."""
    import shlex

    out = []
    for block in readme_blocks("bash")[1:]:
        for line in block.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line:
                out.append([shlex.split(part) for part in line.split("&&")])
    return out


def test_readme_opens_with_install_and_test_commands():
    """CI (.ci/run) and the lead's checker rely on these two lines."""
    assert readme_blocks("bash")[0].splitlines() == FIRST


def test_readme_offers_three_doors():
    head = "\n".join(README.read_text().splitlines()[:50])       # the first screen
    for door in ("dlsched solve ", "dlsched simulate ", "dlsched.solve(", "dlsched.simulate("):
        assert door in head, door


@pytest.fixture
def readme_cwd(tmp_path, monkeypatch):
    """A checkout as the README assumes it (instances/, ../shared/data) whose outputs land in tmp."""
    from dlsched.data import data_dir

    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(data_dir())
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "instances").symlink_to(ROOT / "instances")
    monkeypatch.chdir(repo)
    return repo


def check_slow(chain: list[list[str]]) -> None:
    from dlsched import registry
    from dlsched.cli import parser

    written = set()
    for argv in chain:
        assert argv[0] == "dlsched", argv
        args = parser().parse_args(argv[1:])
        if args.command == "bench":
            assert args.suite in registry.SUITES, argv
            if args.suite == "run":
                suite = args.rest[0]
                assert (ROOT / "dlsched" / "bench" / "suites" / f"{suite}.toml").is_file() or (ROOT / suite).is_file(), argv
                out = args.rest[args.rest.index("--out") + 1] if "--out" in args.rest else f"results/{Path(suite).stem}.jsonl"
                written.add(out)
        elif args.command == "report":
            files = [a for a in args.rest if not a.startswith("-")]
            assert files and all(f in written or (ROOT / f).is_file() for f in files), (argv, written)


def test_readme_commands_run_as_written(readme_cwd, capsys):
    from dlsched.cli import main

    chains = readme_commands()
    assert len(chains) >= 20
    for chain in chains:
        if any(argv[1] in SLOW for argv in chain):
            check_slow(chain)
            continue
        for argv in chain:
            assert argv[0] == "dlsched", argv
            assert main(argv[1:]) == 0, " ".join(argv)
    assert (readme_cwd / "figs").is_dir() and (readme_cwd / "solution.json").is_file()


def test_readme_python_runs_as_written(readme_cwd, capsys):
    (block,) = readme_blocks("python")
    exec(compile(block, "README.md", "exec"), {})
    assert "completed" in capsys.readouterr().out


def test_a_wrong_readme_command_is_caught(readme_cwd):
    with pytest.raises(AssertionError):
        check_slow([["dlsched", "bench", "run", "mkp", "--jobs", "2"], ["dlsched", "report", "results.jsonl"]])
    with pytest.raises(SystemExit):
        check_slow([["dlsched", "bench"]])


def test_no_control_characters_in_sources_or_pages():
    # a formula written through a string that is not raw turns \t, \b into a tab and a backspace
    # ("\text" -> TAB + "ext"): the page shows broken mathematics and nothing else fails
    bad = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
    files = [*ROOT.joinpath("dlsched").rglob("*.py"), *ROOT.joinpath("tests").rglob("*.py"),
             *ROOT.joinpath("benchmarks").rglob("*.py"), *DOCS.rglob("*.md")]
    hits = [f"{p.relative_to(ROOT)}:{k + 1}" for p in files
            for k, line in enumerate(p.read_text().splitlines()) if bad.search(line) or "\t" in line and p.suffix == ".py"]
    assert not hits, f"control characters (tab in Python) at {hits}"
