"""examples/bench_network.py: our network and the PyTorch twin agree (loss, gradients, rollout)
before any timing; without PyTorch the section says "skipped"; --show prints the kept record."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import bench_network  # noqa: E402


def test_ours_and_pytorch_agree_in_float64():
    pytest.importorskip("torch")
    worst, same, lp = bench_network.check(64)
    assert worst < bench_network.AGREE and same and lp < bench_network.AGREE


def test_without_pytorch_the_section_is_skipped(monkeypatch, capsys):
    monkeypatch.setattr(bench_network, "torch", None)
    bench_network.run(quick=True)
    assert capsys.readouterr().out.startswith("network: skipped (PyTorch is not installed")


def test_show_prints_the_kept_record():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "bench_network.py"), "--show"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("recorded ") and lines[1].startswith("reproduces: times are measurements")
    assert lines[2] == "$ python examples/bench_network.py"
    for d in bench_network.WIDTHS:
        assert any(line.startswith(f"d = {d}: ours and PyTorch agree") for line in lines)
        assert sum(line.startswith(f"d = {d} ") and "PyTorch / ours" in line for line in lines) == 2
