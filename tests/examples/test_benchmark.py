"""examples/benchmark.py runs as a program and prints its tables; no timing is asserted here."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = str(ROOT / "examples" / "benchmark.py")
HAVE_MPL = importlib.util.find_spec("matplotlib") is not None  # the figure needs the docs extra

TITLES = ["Dense forward, token log-probs, float64", "Dense forward, token log-probs, float32",
          "Dense backward, dL/dlogits", "Tabular policy", "Group advantages",
          "End to end", "JIT: first call", "Dense forward, float64: time per token against V"]


def run(*args, code=None):
    cmd = [sys.executable, "-c", code, SCRIPT, *args] if code else [sys.executable, SCRIPT, *args]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    svg = tmp_path_factory.mktemp("bench") / "perf.svg"
    return run("--quick", *(["--plot", str(svg)] if HAVE_MPL else [])), svg


def test_quick_prints_every_table(quick):
    out, _ = quick
    for title in TITLES if HAVE_MPL else TITLES[:-1]:    # the V sweep is drawn with --plot
        assert title in out, f"{title!r} missing from:\n{out}"
    assert "The project's targets" not in out             # targets are checked on the full shapes
    assert "(2048, 1024)" in out and "(65536, 1024)" not in out        # quick shapes only
    assert "Traceback" not in out


def test_quick_draws_the_figure(quick):
    pytest.importorskip("matplotlib")
    _, svg = quick
    assert svg.exists() and svg.read_text().lstrip().startswith("<?xml")


def test_help():
    out = run("--help")
    assert "--quick" in out and "--plot" in out and "--seed" in out


def test_without_torch():
    """With PyTorch unimportable the benchmark still runs and says so."""
    block = ("import runpy, sys; sys.modules['torch'] = None; sys.argv = sys.argv[1:]; "
             "runpy.run_path(sys.argv[0], run_name='__main__')")
    out = run("--quick", "--sections", "tabular", "--rounds", "1", code=block)
    assert "torch not installed" in out and "PyTorch: not installed" in out
