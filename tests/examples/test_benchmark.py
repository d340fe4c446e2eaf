"""examples/benchmark.py runs as a program and prints its tables (no timing is asserted here);
the group-advantage kernels it times (examples/_group_kernels.py) equal their NumPy twins."""

import importlib.util
import re
import sys
from pathlib import Path

import example_runs  # each example command once per session, forked warm (tests/conftest.py)
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = str(ROOT / "examples" / "benchmark.py")
HAVE_MPL = importlib.util.find_spec("matplotlib") is not None  # the figure needs the docs extra

TITLES = [
    "Dense forward, token log-probs, float64",
    "Dense forward, token log-probs, float32",
    "Dense backward, dL/dlogits",
    "Tabular policy",
    "Group advantages",
    "End to end",
    "JIT: first call",
    "Validation overhead",
    "Dense forward, float64: time per token against V",
]


def run(*args, code=None):
    cmd = [sys.executable, "-c", code, SCRIPT, *args] if code else [sys.executable, SCRIPT, *args]
    out = example_runs.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout


# With PyTorch unimportable (test_without_torch): the script run after `torch` is set to None
NO_TORCH = (
    "import runpy, sys; sys.modules['torch'] = None; sys.argv = sys.argv[1:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)
NO_TORCH_ARGS = ("--quick", "--sections", "tabular", "--rounds", "1")

# the main job's line, its run also kept as a record (test_record_keeps_the_output)
MAIN = [sys.executable, SCRIPT, "--quick", "--sections", "main", "--record", "{out}/b.json"]
# started when the session starts (tests/conftest.py); the tests below then read their results
QUICK = [sys.executable, SCRIPT, "--quick", *(["--plot", "{out}/perf.svg"] if HAVE_MPL else [])]
EXAMPLE_RUNS = [
    QUICK,
    MAIN,
    [sys.executable, "-c", NO_TORCH, SCRIPT, *NO_TORCH_ARGS],
]


@pytest.fixture(scope="module")
def quick():
    out = example_runs.run(QUICK, cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout, out.files.get("perf.svg")


def test_quick_prints_every_table(quick):
    out, _ = quick
    for title in TITLES if HAVE_MPL else TITLES[:-1]:  # the V sweep is drawn with --plot
        assert title in out, f"{title!r} missing from:\n{out}"
    assert "The project's targets" not in out  # targets are checked on the full shapes
    assert "(2048, 1024)" in out and "(65536, 1024)" not in out  # quick shapes only
    assert "Traceback" not in out


def test_quick_prints_every_validated_entry_over_its_core(quick):
    """One row per public kernel entry (no timing asserted: the ratios are printed, not tested)."""
    from minirl_lm import kernels

    out, _ = quick
    block = out[out.index("Validation overhead") :]
    block = block[: block.index("\n\n")]
    public = [
        n
        for n in dir(kernels)
        if not n.startswith("_")
        and callable(getattr(kernels, n))
        and getattr(kernels, n).__module__ == "minirl_lm.kernels"
    ]
    assert len(public) == 8
    for name in public:
        assert f"\n  {name} " in block, name
    lines = block.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("  ---"))
    assert len(lines) - rule - 1 == 14 and all(line.endswith("x") for line in lines[rule + 1 :])


@pytest.mark.docs_extra
def test_quick_draws_the_figure(quick):
    _, svg = quick
    assert svg is not None and svg.decode().lstrip().startswith("<?xml")


def test_main_job_prints_its_line():
    """`--sections main`: the two whole processes' times, their ratio and whether the K-sweep lines
    agree, in one line of a fixed form (the times are printed, never asserted), and nothing else
    of the benchmark."""
    out = example_runs.run(MAIN, cwd=ROOT, check=True).stdout
    line = r"main job k_sweep: library (\d+\.\d\d) s, plain NumPy (\d+\.\d\d) s \((\d+\.\d\d)x\), output identical"
    m = re.search(rf"^{line}$", out, re.M)
    assert m, out
    lib, plain, ratio = (float(v) for v in m.groups())
    # the ratio is of the two times, which are printed rounded to 0.005 s
    assert abs(plain / lib - ratio) <= ratio * (0.005 / lib + 0.005 / plain) + 0.005
    assert re.search(
        r"^  whole processes, 1 round \(quick\); start-up: import numpy \d\.\d{3} s, "
        r"then minirl_lm\.tasks \d\.\d{3} s \(numba not imported;",
        out,
        re.M,
    )
    assert "Validation overhead" not in out and "Traceback" not in out


def test_help():
    out = run("--help")
    assert "--quick" in out and "--plot" in out and "--seed" in out


def test_without_torch():
    """With PyTorch unimportable the benchmark still runs and says so."""
    out = run(*NO_TORCH_ARGS, code=NO_TORCH)
    assert "torch not installed" in out and "PyTorch: not installed" in out


# ---------------------------------------------------------------- the group-advantage kernels

sys.path.insert(0, str(ROOT / "examples"))
import _group_kernels as gk  # noqa: E402

from minirl_lm.pg import advantages  # noqa: E402


def rel_err(a, b):
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)


@pytest.mark.parametrize("NK", [(3, 2), (4, 8), (1, 64), (5, 3)])
def test_group_kernels_equal_their_numpy_twins(NK):
    """Relative error <= 1e-12 norm-wise against the NumPy twins beside them, and the twins equal
    to the library's validated advantages (the benchmark's third column)."""
    r = np.random.default_rng(NK[1]).standard_normal(NK)
    assert rel_err(gk._group_centred(r), gk.np_centred(r)) <= 1e-12
    for eps in (1e-8, 0.0, 0.5):
        for ddof in (0, 1):
            got = gk._group_standardized(r, eps, ddof)
            assert rel_err(got, gk.np_standardized(r, eps, ddof)) <= 1e-12
    assert rel_err(gk._group_loo(r), gk.np_loo(r)) <= 1e-12
    np.testing.assert_allclose(gk.np_centred(r), advantages.centred(r), rtol=0, atol=1e-14)
    np.testing.assert_allclose(gk.np_standardized(r), advantages.standardized(r), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gk.np_loo(r), advantages.leave_one_out(r), rtol=0, atol=1e-14)


def bitwise_zero(a):
    return a.dtype == np.float64 and np.all(a.view(np.int64) == 0)


def test_group_kernels_k1_is_bitwise_zero():
    r = np.random.default_rng(0).standard_normal((6, 1)) * 10
    assert bitwise_zero(gk._group_centred(r))
    for ddof in (0, 1):
        for eps in (1e-8, 0.0):
            assert bitwise_zero(gk._group_standardized(r, eps, ddof))


@pytest.mark.parametrize("value", [0.1, 1.0, 0.0, -3.7, 1e-300, 123456.789])
def test_group_kernels_equal_rewards_exactly_zero(value):
    r = np.full((2, 7), value)
    assert value != 0.1 or r.sum(axis=1)[0] / 7 != 0.1  # a plain mean would miss by an ulp
    assert bitwise_zero(gk._group_centred(r))
    assert bitwise_zero(gk._group_standardized(r, 1e-8, 0))
    assert bitwise_zero(gk._group_standardized(r, 0.0, 1))
    assert bitwise_zero(gk._group_loo(r))


def test_show_prints_the_kept_record_and_measures_nothing():
    out = run("--show")
    lines = out.splitlines()
    assert lines[0].startswith("recorded ") and lines[1].startswith("reproduces: times are measurements")
    assert lines[2].startswith("$ python examples/benchmark.py --quick")
    assert "main job k_sweep: library" in out and "Dense forward, token log-probs, float64" in out
    bad = example_runs.run([sys.executable, SCRIPT, "--show", "--quick"], cwd=ROOT)
    assert bad.returncode == 2 and "--show: prints the kept record and measures nothing, got --quick" in bad.stderr


def test_record_keeps_the_output():
    run = example_runs.run(MAIN, cwd=ROOT, check=True)
    kept = __import__("json").loads(run.text("b.json"))
    assert kept["stdout"] == run.stdout
    assert kept["command"] == "python examples/benchmark.py --quick --sections main"
    assert kept["sweep"] is None and set(kept["machine"]) >= {"date", "cpu", "cores", "commit"}


def test_the_floor_note_says_where_the_time_over_the_floor_goes(capsys):
    spec = importlib.util.spec_from_file_location("benchmark", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    note = lambda k, mx, ex: (  # noqa: E731  the note of a kernel at k, its passes at mx and ex, x the floor
        bench.floor_note({"floor": 1.0, "kernel 1t": k, "max pass": mx, "exps in cache": ex}, 65536, 1024),
        " ".join(capsys.readouterr().out.split()),
    )[1]
    assert "within the 2x goal" in note(1.9, 1.0, 0.8)
    assert "cannot come within 2x of the floor: one exponential per logit is already 2.10x" in note(3.0, 1.0, 2.1)
    # 1.14 + 1.84 - 2 = 0.98 of the 1.14 max pass must hide behind the exponentials: 86 %
    assert "needs them to overlap, 86% of the max pass hidden" in note(3.12, 1.14, 1.84)
    assert "this kernel runs the passes one after the other" in note(3.12, 1.14, 1.84)
    assert "this kernel's 2.41x hides 50% of it" in note(2.41, 1.14, 1.84)  # (2.98 - 2.41) / 1.14
    assert "the max pass alone, one read of the logits, is already 2.20x" in note(2.8, 2.2, 0.5)
    assert "the rest of the kernel's 2.50x is its own overhead" in note(2.5, 0.9, 1.0)
