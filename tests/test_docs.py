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


def test_generated_pages_are_what_their_results_files_give(monkeypatch, capsys):
    """Every docs/report/*/report.md is remade from its committed results file(s) by the command
    written on it: a hand edit, or results changed without remaking the page, fails here."""
    from dlsched.bench.report import main, pages

    monkeypatch.chdir(ROOT)
    found = pages(DOCS / "report")
    assert {p.parent.name for p, _ in found} >= {"quick", "solvers", "sim-small", "oasis-quick"}
    stale = [str(p.relative_to(ROOT)) for p, argv in found if main([*argv, "--check"]) != 0]
    assert not stale, f"pages that differ from their results files (remake: dlsched report --pages docs/report): {stale}"


def test_a_hand_edited_page_is_caught(tmp_path, monkeypatch, capsys):
    import shutil

    from dlsched.bench.report import main

    monkeypatch.chdir(ROOT)
    page = DOCS / "report" / "sim-small" / "report.md"
    copy = tmp_path / "sim-small"
    shutil.copytree(page.parent, copy)
    argv = ["docs/report/sim-small/results.jsonl", "--out", str(copy), "--no-figures"]
    assert main(argv) == 0 and main([*argv, "--check"]) == 0
    (copy / "report.md").write_text((copy / "report.md").read_text().replace("| drf | 3/3", "| drf | 2/3"))
    assert main([*argv, "--check"]) == 1


def test_every_page_is_in_the_site_navigation():
    """Hand-written pages and generated reports alike (mkdocs only logs a page left out of nav)."""
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = [*DOCS.glob("*.md"), *(DOCS / "report").glob("*/report.md")]
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
