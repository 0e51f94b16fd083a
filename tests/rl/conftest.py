import pytest

pytest.importorskip("torch", reason="DL2 needs the rl extra: pip install 'dlsched[rl]'")
pytest.importorskip("gymnasium", reason="DL2 needs the rl extra: pip install 'dlsched[rl]'")
