"""Every example's command line: a bad argument is a usage error (exit 2, `error: ... --X ...`, no
traceback), raised while the command line is parsed, before the run prints anything. That holds
for each option's bad values (out of range, not a number, NaN/inf), for the cross-option checks,
for --plot into a folder that does not exist, and for --plot when matplotlib does not import."""

import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import example_runs  # each example command once per session, forked warm (tests/conftest.py)
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
MISSING = str(ROOT / "no_such_folder" / "x.svg")
FAST = 10.0  # seconds: a usage error is a parse, not a run (the slowest parse imports matplotlib)

NOT_INT = ["1.5", "x", "nan", "9" * 5000]
NOT_REAL = ["nan", "inf", "-inf", "x"]


def ints(low, high=None):
    """Bad values of an integer option in [low, high]."""
    return [str(low - 1)] + ([] if high is None else [str(high + 1)]) + NOT_INT


def reals(*outside):
    """Bad values of a number option: the given values outside its range, and non-numbers."""
    return list(outside) + NOT_REAL


SEED = ints(0)
PLOT = [MISSING, str(ROOT), "x.txt"]
CHOICE = ["nope"]

# per example: each option and its bad values (a list value: the option's nargs words)
OPTIONS = {
    "conformance.py": {},  # its flags are store_true only
    "oracle.py": {},  # no options
    "bench_exact.py": {"--record": [MISSING]},
    "bench_network.py": {"--record": [MISSING]},
    "exact.py": {"--seed": SEED},
    "network.py": {
        "--seeds": ints(1, 10),
        "--wrong": reals("-0.1", "1.5"),
        "--rl-steps": ints(1, 10000),
        "--estimators": CHOICE,
        "--record": [MISSING, str(ROOT)],
        "--plot": PLOT,
    },
    "atlas.py": {"--K": ints(2, 8), "--task": CHOICE, "--seed": SEED, "--plot": PLOT},
    "best_of_n.py": {
        "--K": ints(2, 12),
        "--steps": ints(8, 5000),
        "--seeds": ints(1, 200),
        "--seed": SEED,
        "--plot": PLOT,
    },
    "distill.py": {
        "--grader": CHOICE,
        "--beta": reals("0.01", "11"),
        "--gkd-betas": ["1.5", "-0.1", "0.5,x"],
        "--keep": reals("0", "1.5"),
        "--plot": PLOT,
    },
    "entropy.py": {
        "--steps": ints(1, 2000),
        "--toy-steps": ints(1, 2000),
        "--sampled-steps": ints(1, 2000),
        "--K": ints(2, 4),
        "--seeds": ints(2, 100),
        "--seed": SEED,
        "--plot": PLOT,
    },
    "bench_big_vocab.py": {
        "--V": ints(1, 2**24),
        "--d": ints(1, 2**16),
        "--N": ints(1, 2**24),
        "--chunks": [["0", "8"], ["8", "x"], ["8"]],
        "--dtype": ["float16"],
        "--seed": SEED,
        "--plot": PLOT,
        "--child": CHOICE,
        "--chunk": ints(0, 2**24),
    },
    "benchmark.py": {
        "--rounds": ints(1),
        "--min-time": reals("0", "-1"),
        "--seed": SEED,
        "--shapes": ["0x0", "0x8", "8x0", "-4x8", "4x", "x"],
        "--plot": PLOT,
        "--sections": CHOICE,
        "--record": [MISSING, str(ROOT)],
    },
    "bug_effects.py": {"--only": ["no_such_bug"], "--seed": SEED, "--plot": PLOT},
    "confusions.py": {"": ["nope"]},
    "dpo.py": {
        "--pairs": ints(1, 10**6),
        "--seed": SEED,
        "--beta": reals("0.001", "101"),
        "--lr": reals("0", "101"),
        "--steps": ints(1, 10**6),
        "--prior-std": reals("0", "1001"),
        "--plot": PLOT,
    },
    "group_bias.py": {
        "--K-max": ints(1, 64),
        "--rewards": ["1,nan", "1,inf", "1,,2", "x", "2e6,0"],
        "--theta": ["1,nan", "x", "51,0", ",".join(["0"] * 65)],
        "--mc-groups": ints(2, 10**6),
        "--seed": SEED,
        "--plot": PLOT,
    },
    "grpo.py": {
        "--seed": SEED,
        "--iters": ints(1, 10**5),
        "--K": ints(1, 1024),
        "--mu": ints(1, 100),
        "--lr": reals("0", "11", "1e308"),
        "--eps": reals("0", "1.5"),
        "--eps-high": reals("0", "11"),
        "--beta": reals("0.001", "11"),
        "--prior": reals("-11", "11"),
        "--agg": CHOICE,
        "--every": ints(1, 10**5),
        "--agg-seeds": ints(0, 1000),
        "--agg-iters": ints(1, 10**5),
        "--plot": PLOT,
    },
    "k_sweep.py": {
        "--K": ints(1, 4096),
        "--responses": ints(1, 10**6),
        "--seed": SEED,
        "--lr": reals("-1", "101"),
        "--baseline": CHOICE,
        "--plot": PLOT,
    },
    "kl_estimators.py": {
        "--beta": reals("0.001", "101"),
        "--lr": reals("0", "1001"),
        "--iters": ints(1, 10**6),
        "--samples": ints(2, 10**7),
        "--seed": SEED,
        "--sweep": ["1,nan", "1,inf", "1,,2", "x", "0,1", "1,101"],
        "--plot": PLOT,
    },
    "logprob.py": {"--seed": SEED},
    "loophole.py": {
        "--betas": reals("-1", "101"),
        "--K": ints(1, 4096),
        "--steps": ints(1, 10**5),
        "--seed": SEED,
        "--seeds": ints(0, 1000),
        "--plot": PLOT,
    },
    "multi_turn.py": {
        "--q": reals("-0.1", "1.5"),
        "--K": ints(2, 16),
        "--cost": reals("-1", "11"),
        "--beta": reals("0", "1e-4", "1001"),
        "--lam": reals("-0.1", "1.5"),
        "--iters": ints(1, 10**5),
        "--seed": SEED,
        "--plot": PLOT,
    },
    "off_policy.py": {
        "--seed": SEED,
        "--levels": ["0,nan", "0,,1", "x", "0,-1"],
        "--c": reals("1", "2e6"),
        "--delta": reals("0", "2e6"),
        "--geo": reals("1", "2e6"),
        "--K": ints(2, 10**4),
        "--minibatches": ints(1, 2 * 10**4),
        "--lr": reals("0", "101"),
        "--sweep-kl": reals("0", "0.6"),
        "--sweep-samples": ints(100, 10**5),
        "--max-len": ints(1, 10),
        "--curve-max": ints(1, 10),
        "--section": CHOICE,
        "--plot": PLOT,
    },
    "reward_models.py": {
        "--beta": reals("0", "0.001", "101"),
        "--q": reals("-0.1", "1.5"),
        "--cost": reals("-1", "2"),
        "--seed": SEED,
        "--plot": PLOT,
    },
    "preferences.py": {
        "--beta": reals("0", "0.04", "101"),
        "--gamma": reals("-1", "101"),
        "--lam": reals("-1", "101"),
        "--z0": reals("-1", "101"),
        "--label-smoothing": reals("-0.1", "0.7"),
        "--max-iter": ints(1, 10**5),
        "--steps": ints(1, 10**5),
        "--pairs": ints(1, 10**4),
        "--offline-pairs": ints(1, 10**5),
        "--lr": reals("0", "101"),
        "--exo-eps": reals("0", "0.6"),
        "--tau": reals("0", "11"),
        "--alpha": reals("0", "1"),
        "--tr-alpha": reals("0", "1.1"),
        "--tr-steps": ints(1, 10**4),
        "--tr-syncs": ints(1, 1000),
        "--diverge-iter": ints(2, 10**5),
        "--seed": SEED,
        "--plot": PLOT,
    },
    "token_vs_sequence.py": {
        "--seed": SEED,
        "--K": ints(1, 4096),
        "--scale": reals("-1", "101"),
        "--lam": reals("-0.1", "1"),
        "--beta": reals("-1", "101"),
        "--gamma": reals("-0.1", "1"),
        "--eps": reals("0", "1.5"),
        "--move": reals("-1", "101"),
    },
}

# bad combinations of good values, checked after parsing but before the run: (argv, the name)
COMBINATIONS = {
    "bench_big_vocab.py": [(["--V", "524288", "--N", "32768"], "--N, --V, --d")],
    "group_bias.py": [
        (["--theta", "1,2", "--rewards", "1"], "--rewards"),
        (["--theta", "1", "--rewards", "1"], "--theta"),
        (["--rewards", "1,1,1,1,1"], "--rewards"),
        (["--K-max", "40"], "--K-max"),
        (["--K-max", "30", "--mc-groups", "1000000"], "--mc-groups"),
    ],
    "kl_estimators.py": [(["--beta", "100", "--lr", "2"], "--lr"), (["--beta", "1", "--lr", "101"], "--lr")],
    "grpo.py": [
        (["--iters", "2000", "--K", "1024", "--mu", "100"], "--iters, --K, --mu"),
        (["--agg-seeds", "30", "--agg-iters", "100"], "--agg-seeds, --agg-iters"),
        (["--lr", "10", "--beta", "1"], "--lr"),
    ],  # diverges: lr x beta
    "k_sweep.py": [
        (["--K", "8", "--responses", "4"], "--responses"),
        (["--K", *["1"] * 65], "--K"),
        (["--responses", "1000000", "--K", *[str(2**k) for k in range(11)]], "--responses, --K"),
    ],
    "loophole.py": [
        (["--betas", *["0"] * 65], "--betas"),
        (["--steps", "20000", "--K", "4096"], "--steps, --K, --betas, --seeds"),
    ],
    "preferences.py": [(["--steps", "1000", "--pairs", "600"], "--steps, --pairs")],
    "off_policy.py": [
        (["--levels", "0,0.1,0.05"], "--levels"),
        (["--levels", "0.1,0.2"], "--levels"),
        (["--levels", "0"], "--levels"),
        (["--levels", "0,9"], "--levels"),
        (["--minibatches", "5"], "--minibatches"),
        (["--sweep-kl", "0.5"], "--sweep-kl"),  # beyond the uniform sampler's per-token KL
        (["--max-len", "5", "--section", "takeaway"], "--section"),  # the page's sentences: T = 3
    ],
}

SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))
PLOTTING = sorted(s for s in OPTIONS if "--plot" in OPTIONS[s])
CASES = [
    (s, [v] if not o else [o, *v] if isinstance(v, list) else [f"{o}={v}"], o or "NAME")
    for s, opts in OPTIONS.items()
    for o, vs in opts.items()
    for v in vs
] + [(s, argv, name) for s, combos in COMBINATIONS.items() for argv, name in combos]

# All cases of one script run in one subprocess (numba's import is paid once): the script runs
# once with --help (the imports), then as __main__ once per case, recording the exit code, stderr,
# stdout and the time the case took.
DRIVER = """
import contextlib, io, json, runpy, sys, time, traceback
script, cases = sys.argv[1], json.loads(sys.argv[2])
results = []
for args in [["--help"]] + cases:
    sys.argv = [script] + args
    err, out = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as e:
            code = e.code
        except BaseException:
            code = "exception"
            traceback.print_exc(file=err)
    results.append([code, err.getvalue(), out.getvalue(), time.perf_counter() - t0])
print(json.dumps(results[1:]))
"""


def _drive_argv(script, cases):
    return [sys.executable, "-c", DRIVER, str(EXAMPLES / script), json.dumps(cases)]


def drive(script, cases, env=None):
    """[(code, stderr, stdout, seconds)] of each argv in cases, run in one subprocess (once per
    session: example_runs keeps the result; the session starts it early, see EXAMPLE_RUNS)."""
    proc = example_runs.run(_drive_argv(script, cases), cwd=ROOT, timeout=900, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def _cases(script):
    return [argv for s, argv, _ in CASES if s == script]


_RESULTS = {}


def _results(script):
    if script not in _RESULTS:  # the run is kept by example_runs; its parsed output here
        _RESULTS[script] = dict(zip(map(tuple, _cases(script)), drive(script, _cases(script))))
    return _RESULTS[script]


# An environment in which `import matplotlib` fails: a shim package first on PYTHONPATH (made
# once per session, at collection, so that its runs can start then).
_SHIM = Path(tempfile.mkdtemp(prefix="no-matplotlib-"))
atexit.register(shutil.rmtree, _SHIM, ignore_errors=True)
(_SHIM / "matplotlib").mkdir()
(_SHIM / "matplotlib" / "__init__.py").write_text('raise ImportError("matplotlib is hidden by the test shim")\n')
NO_MATPLOTLIB = {"PYTHONPATH": os.pathsep.join([str(_SHIM), str(ROOT), os.environ.get("PYTHONPATH", "")])}
# a command line run as a user runs it: a new interpreter, not a child forked from a warm one
REAL = {"MINIRL_EXAMPLES_SUBPROCESS": "1"}


def _real_argv(script):
    """One bad argument of a script as a command line."""
    opt, bad = next(iter(OPTIONS[script].items()), ("--no-such-option", [None]))
    argv = [bad[0]] if not opt else [f"{opt}={bad[0]}" if bad[0] is not None else opt]
    return [sys.executable, str(EXAMPLES / script), *argv]


def _missing_argv(script):
    return [sys.executable, str(EXAMPLES / script), "--plot", MISSING]


def _svg(script):
    return str(_SHIM / f"{script}.svg")  # never written: the run stops at parsing


# started when the session starts, on the example threads (tests/conftest.py): the tests below
# read their results
EXAMPLE_RUNS = (
    [_drive_argv(s, _cases(s)) for s in OPTIONS if _cases(s)]
    + [(_drive_argv(s, [["--plot", _svg(s)]]), NO_MATPLOTLIB) for s in PLOTTING]
    + [(_real_argv(s), REAL) for s in SCRIPTS]
    + [(_missing_argv(s), REAL) for s in PLOTTING]
)


def usage_error(code, err, out, seconds, name):
    assert code == 2, (code, err[-800:])
    assert "Traceback" not in err and "usage:" in err and "error:" in err, err[-800:]
    assert name in err.splitlines()[-1], err[-800:]  # the message names the argument
    assert out == "", out[-500:]  # before the run printed anything
    assert seconds < FAST, seconds


def _id(script, argv):
    text = " ".join(argv)
    return f"{script} {text if len(text) < 60 else text[:60] + '...'}"


@pytest.mark.slow
@pytest.mark.parametrize("script, argv, name", CASES, ids=[_id(s, a) for s, a, _ in CASES])
def test_bad_argument_is_a_usage_error(script, argv, name):
    usage_error(*_results(script)[tuple(argv)], name)


def test_every_example_and_every_option_has_bad_cases():
    """A new example or option fails here until its bad values are listed above."""
    assert sorted(OPTIONS) == SCRIPTS
    for script in SCRIPTS:
        text = (EXAMPLES / script).read_text()
        declared = set(re.findall(r'add_argument\(\s*"(--[\w-]+)"', text))
        flags = set(re.findall(r'add_argument\(\s*"(--[\w-]+)",\s*action="store_true"', text))
        assert declared - flags <= set(OPTIONS[script]), (script, declared)
        assert set(OPTIONS[script]) - {""} <= declared, script


@pytest.fixture(scope="module")
def no_matplotlib():
    return dict(os.environ, **NO_MATPLOTLIB)


@pytest.mark.slow
@pytest.mark.parametrize("script", PLOTTING)
def test_plot_without_matplotlib_is_a_usage_error_before_the_run(script, no_matplotlib):
    ((code, err, out, seconds),) = drive(script, [["--plot", _svg(script)]], env=no_matplotlib)
    usage_error(code, err, out, seconds, "--plot")
    assert "matplotlib" in err and 'pip install -e ".[docs]"' in err and "pip install matplotlib" in err
    assert not Path(_svg(script)).exists()


@pytest.mark.slow
def test_readme_plot_example_without_matplotlib_fails_fast(no_matplotlib, tmp_path):
    """The README's own plot command in a venv with only `pip install -e .`: exit 2 at once."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / "k_sweep.py"), "--baseline", "loo", "--plot", "k_sweep.svg"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=no_matplotlib,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr[-800:]
    assert "Traceback" not in proc.stderr and "pip install matplotlib" in proc.stderr
    assert time.perf_counter() - t0 < 60 and not (tmp_path / "k_sweep.svg").exists()


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS)
def test_bad_argument_exit_code_in_a_real_process(script):
    """One bad argument per script as a real command line: exit status 2, no traceback, fast."""
    proc = example_runs.run(_real_argv(script), cwd=ROOT, timeout=120, env=dict(os.environ, **REAL))
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-500:])
    assert "Traceback" not in proc.stderr and "usage:" in proc.stderr and proc.stdout == ""
    assert proc.seconds < 60  # rejected before the run


@pytest.mark.slow
@pytest.mark.parametrize("script", PLOTTING)
def test_plot_into_a_missing_folder_fails_before_the_run_in_a_real_process(script):
    proc = example_runs.run(_missing_argv(script), cwd=ROOT, timeout=120, env=dict(os.environ, **REAL))
    assert proc.returncode == 2 and "existing folder" in proc.stderr, proc.stderr[-500:]
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert proc.seconds < 60


@pytest.mark.slow
@pytest.mark.docs_extra
def test_group_bias_k_max_1_with_a_plot(tmp_path):
    svg = tmp_path / "x.svg"
    proc = example_runs.run(
        [
            sys.executable,
            str(EXAMPLES / "group_bias.py"),
            "--K-max",
            "1",
            "--mc-groups",
            "100",
            "--plot",
            str(svg),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert svg.exists() and "n/a (leave-one-out needs K >= 2)" in proc.stdout
