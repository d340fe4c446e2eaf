"""The committed big-vocabulary record: it says where and when it was measured, the page's
rendering of it runs, and the chunk it recommends follows the stated rule."""

import json
import sys
from pathlib import Path

import example_runs  # each example command once per session, forked warm (tests/conftest.py)
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import bench_big_vocab as bench  # noqa: E402


def test_the_record_says_when_where_and_with_what():
    rec = json.loads(Path(bench.RECORD).read_text())
    for key in ("date", "cpu", "cores", "memory_gib", "python", "numpy", "numba", "torch", "commit"):
        assert key in rec["machine"], key
    assert rec["cfg"] == {k: bench.FULL[k] for k in ("V", "d", "N")} | {"chunks": list(bench.FULL["chunks"])}
    assert [p["chunk"] for p in rec["sweep"]] == bench.sweep_chunks(rec["cfg"]["N"])


@pytest.mark.parametrize("flag", ["--show", "--takeaway"])
def test_the_page_commands_print_the_record(flag):
    out = example_runs.run(
        [sys.executable, "scripts/record_big_vocab.py", flag],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    if flag == "--takeaway":
        assert len(lines) == 3 and lines[2].startswith("use chunk=")
    else:
        assert lines[0].startswith("recorded ") and any(x.startswith("use chunk=") for x in lines)


def test_recommend_is_the_fastest_chunk_within_the_memory_goal():
    points = [(16, 0.01, 2.0), (64, 0.05, 1.3), (128, 0.1, 1.25), (256, 0.13, 1.1)]
    assert bench.recommend(points, None, "float32") == (128, 0.1, 1.25)
    with pytest.raises(ValueError, match="points: no swept chunk meets"):
        bench.recommend([(256, 0.13, 1.1)], None, "float32")


def test_a_missing_record_is_a_usage_error(tmp_path):
    out = example_runs.run(
        [sys.executable, "scripts/record_big_vocab.py", "--show", "--path", str(tmp_path / "none.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "--path" in out.stderr and "Traceback" not in out.stderr
