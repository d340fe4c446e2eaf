"""examples/dpo.py runs as a program and its output shows the facts its page claims."""

import sys
from pathlib import Path

import example_runs  # each example command once per session, forked warm (tests/conftest.py)
import numpy as np
import pytest

pytestmark = pytest.mark.slow  # every test runs the example in a subprocess

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "dpo.py"


def run(*args):
    proc = example_runs.run(
        [sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# started when the session starts (tests/conftest.py); the tests below then read their results
EXAMPLE_RUNS = [
    [sys.executable, str(SCRIPT), *args]
    for args in (("--steps", "1000"), ("--pairs", "30000", "--steps", "1"))
    + tuple(("--seed", str(s), "--steps", "1") for s in range(3))
] + [[sys.executable, str(SCRIPT), "--seed", "2", "--steps", "1", "--plot", "{out}/contract.svg"]]


def table(out, header):
    """Rows of numbers after the line starting with ``header`` (skipping its column line)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header)) + 2
    rows = []
    for line in lines[start:]:
        try:
            rows.append([float(v) for v in line.split()])
        except ValueError:
            break
    return np.array(rows)


@pytest.fixture(scope="module")
def default_out():
    return run("--steps", "1000")


def test_help_exits_zero():
    assert "--plot" in run("--help")


def test_dpo_approaches_the_tilted_optimum(default_out):
    t = table(default_out, "1. DPO")
    kl_sample, kl_pop = t[:, 1], t[:, 3]
    assert t[0, 0] == 0 and kl_pop[0] > 0.1  # starts at pi_ref, far from pi*
    assert np.all(np.diff(kl_pop) < 0)  # population: monotone to pi*
    assert kl_pop[-1] < 1e-3 * kl_pop[0]
    assert kl_sample.min() < 0.3 * kl_sample[0]  # the sample fit gets close ...
    assert kl_sample[-1] > 1e2 * kl_pop[-1]  # ... but not there: estimation error


def test_the_steps_where_the_sample_column_is_below_are_listed(default_out):
    t = table(default_out, "1. DPO")
    want = [int(step) for step, kl_s, _, kl_p, _ in t if step > 0 and kl_s < kl_p]
    line = next(x for x in default_out.splitlines() if x.startswith("steps at which the sample KL"))
    got = line.split(": ")[1]
    assert got == (", ".join(map(str, want)) if want else "none")
    assert want  # with 300 pairs the sample fit is the closer one early on


def test_reward_model_errors_sit_on_rare_responses(default_out):
    lines = default_out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("2. Bradley-Terry")) + 2
    rms = {line.split()[0]: float(line.split()[1]) for line in lines[start : start + 3]}
    assert rms["rare"] > 2 * rms["common"]


@pytest.mark.docs_extra
def test_plot_writes_an_svg():
    r = example_runs.run(EXAMPLE_RUNS[-1], cwd=ROOT, check=True)
    assert r.text("contract.svg").lstrip().startswith("<?xml")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_true_reward_peaks_inside_while_proxy_rises(seed):
    out = default_out_cache(seed)
    t = table(out, "3. optimize")
    beta, kl, proxy, true, best = t.T
    assert np.all(np.diff(beta) < 0)
    assert np.all(np.diff(kl) >= -1e-12) and kl[-1] > 10 * kl[0]
    assert np.all(np.diff(proxy) >= -1e-12)  # proxy: monotone in the KL
    i = int(np.argmax(true))
    assert 0 < i < len(true) - 1  # the peak is strictly inside
    assert true[-1] < true[i] - 0.3  # and it falls after it
    assert np.all(true <= best + 1e-9)  # nothing beats the true optimum


def test_with_plentiful_data_the_proxy_is_not_exploited():
    t = table(run("--pairs", "30000", "--steps", "1"), "3. optimize")
    proxy, true = t[:, 2], t[:, 3]
    assert np.abs(proxy - true).max() < 0.05
    assert np.all(np.diff(true) >= -1e-3)  # no fall: the fall was the estimate's


_CACHE = {}


def default_out_cache(seed):
    if seed not in _CACHE:
        _CACHE[seed] = run("--seed", str(seed), "--steps", "1")
    return _CACHE[seed]


def test_the_last_line_says_whether_the_true_reward_peaks():
    # the contract page: a small sample peaks inside the sweep and falls, plentiful data does not
    assert "true reward peaks inside the sweep" in default_out_cache(0).splitlines()[-1]
    last = run("--pairs", "30000", "--steps", "1").splitlines()[-1]
    assert last.startswith("true reward has no peak inside the sweep")
