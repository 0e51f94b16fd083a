"""The third-party policy example of docs/simulator.md runs as written and schedules correctly."""

import re

from tests.conftest import ROOT


def test_docs_example_runs():
    text = (ROOT / "docs" / "simulator.md").read_text()
    block = text.split("## Plugging in a third-party policy", 1)[1]
    code = re.search(r"```python\n(.*?)```", block, re.S).group(1)
    ns: dict = {}
    exec(compile(code, "docs/simulator.md", "exec"), ns)
    res = ns["result"]
    assert res.status == "completed" and res.completed.all()
    # 60 jobs of 1-4 GPUs on 16 GPUs: every job pays its 30 s restart at least once, some are preempted
    assert (res.jct >= res.isolated_jct + 30 - 1e-6).all() and (res.jct > res.isolated_jct + 31).any()
    assert len(code.strip().splitlines()) <= 45
