"""Every example's command line: a bad argument is a usage error (exit 2, no traceback), and
--plot into a folder that does not exist fails before the run (so within a second)."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MISSING = str(ROOT / "no_such_folder" / "x.svg")

# per example: its options and their kinds (int >= 1, int >= 0 (seed), float > 0, ...)
OPTIONS = {
    "benchmark.py": {"--rounds": "int1", "--min-time": "pos", "--seed": "seed",
                     "--shapes": "shape", "--plot": "plot", "--sections": "choice"},
    "confusions.py": {"": "name"},
    "dpo.py": {"--pairs": "int1", "--seed": "seed", "--beta": "pos", "--lr": "pos",
               "--steps": "int1", "--prior-std": "pos", "--plot": "plot"},
    "group_bias.py": {"--K-max": "int1", "--rewards": "floats", "--theta": "floats",
                      "--mc-groups": "int2", "--seed": "seed", "--plot": "plot"},
    "grpo.py": {"--seed": "seed", "--iters": "int1", "--K": "int1", "--mu": "int1",
                "--lr": "pos", "--eps": "unit_open", "--eps-high": "pos", "--beta": "pos",
                "--prior": "real", "--agg": "choice", "--every": "int1", "--agg-seeds": "seed",
                "--agg-iters": "int1", "--plot": "plot"},
    "k_sweep.py": {"--K": "int1", "--responses": "int1", "--seed": "seed", "--lr": "nonneg",
                   "--baseline": "choice", "--plot": "plot"},
    "kl_estimators.py": {"--beta": "pos", "--lr": "pos", "--iters": "int1", "--samples": "int2",
                         "--seed": "seed", "--sweep": "floats", "--plot": "plot"},
    "logprob.py": {"--seed": "seed"},
    "loophole.py": {"--betas": "nonneg", "--K": "int1", "--steps": "int1", "--seed": "seed",
                    "--seeds": "seed", "--plot": "plot"},
    "token_vs_sequence.py": {"--seed": "seed", "--K": "int1", "--scale": "nonneg",
                             "--lam": "unit", "--beta": "nonneg", "--gamma": "unit",
                             "--eps": "unit_open", "--move": "nonneg"},
}

BAD = {
    "int1": ["0", "-1", "1.5", "x", "nan"], "int2": ["1", "-1", "x"], "seed": ["-1", "x", "1.5"],
    "pos": ["0", "-1", "nan", "inf", "-inf", "x"], "nonneg": ["-1", "nan", "inf", "x"],
    "unit": ["-0.1", "1.5", "nan", "x"], "unit_open": ["0", "1.5", "nan", "inf"],
    "real": ["nan", "inf", "x"], "floats": ["1,nan", "1,inf", "1,,2", "x"],
    "shape": ["0x0", "0x8", "8x0", "-4x8", "4x", "x"], "plot": [MISSING, str(ROOT), "x.txt"],
    "choice": ["nope"], "name": ["nope"],
}

CASES = [(script, opt, bad) for script, opts in OPTIONS.items() for opt, kind in opts.items()
         for bad in BAD[kind]]

# All cases of one script run in one subprocess (numba's import is paid once): each case runs the
# script as __main__ with its argv and records the exit code and stderr.
DRIVER = """
import contextlib, io, json, runpy, sys, traceback
script, cases = sys.argv[1], json.loads(sys.argv[2])
results = []
for args in cases:
    sys.argv = [script] + args
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as e:
            code = e.code
        except BaseException:
            code = "exception"
            traceback.print_exc(file=err)
    results.append([code, err.getvalue()])
print(json.dumps(results))
"""

_RESULTS = {}


def _argv(opt, bad):
    return [bad] if not opt else [f"{opt}={bad}"]          # --opt=value: "-1" stays a value


def _results(script):
    if script not in _RESULTS:
        mine = [(o, b) for s, o, b in CASES if s == script]
        proc = subprocess.run([sys.executable, "-c", DRIVER, str(ROOT / "examples" / script),
                               json.dumps([_argv(o, b) for o, b in mine])],
                              capture_output=True, text=True, cwd=ROOT, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        _RESULTS[script] = dict(zip(mine, json.loads(proc.stdout)))
    return _RESULTS[script]


@pytest.mark.parametrize("script, opt, bad", CASES, ids=[f"{s}{o}={b}" for s, o, b in CASES])
def test_bad_argument_is_a_usage_error(script, opt, bad):
    code, err = _results(script)[(opt, bad)]
    assert code == 2, (code, err[-500:])
    assert "Traceback" not in err and "usage:" in err


@pytest.mark.parametrize("script", sorted(OPTIONS))
def test_bad_argument_exit_code_in_a_real_process(script):
    """One bad argument per script as a real command line: exit status 2, no traceback, fast."""
    opt, kind = next(iter(OPTIONS[script].items()))
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / script),
                           *_argv(opt, BAD[kind][0])],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-500:])
    assert "Traceback" not in proc.stderr and "usage:" in proc.stderr
    assert time.perf_counter() - t0 < 60                # rejected before the run


def test_plot_into_a_missing_folder_fails_before_the_run():
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "k_sweep.py"), "--plot",
                           MISSING], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2 and "existing folder" in proc.stderr
    assert "Traceback" not in proc.stderr and time.perf_counter() - t0 < 60


def test_group_bias_k_max_1_with_a_plot(tmp_path):
    pytest.importorskip("matplotlib")
    svg = tmp_path / "x.svg"
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "group_bias.py"), "--K-max",
                           "1", "--mc-groups", "100", "--plot", str(svg)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert svg.exists() and "n/a (leave-one-out needs K >= 2)" in proc.stdout
