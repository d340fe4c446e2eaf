"""The chapter's two tables, reproduced by the real scripts (subprocess, default arguments)."""

import re
import sys
from pathlib import Path

import example_runs  # each example command once per session, forked warm (tests/conftest.py)
import numpy as np
import pytest

from minirl_lm.core.policy import TabularPolicy
from minirl_lm.tasks import HEDGE, evaluate, reference_theta, reward_table, train

ROOT = Path(__file__).resolve().parents[2]

SEED_K_SWEEP = """\
K =  1: success of a sampled response 0.062
K =  2: success of a sampled response 0.500
K =  4: success of a sampled response 0.500
K =  8: success of a sampled response 0.500
K = 32: success of a sampled response 0.500
"""

SEED_LOOPHOLE = {  # beta: (sloppy, gold, hedge), the seed chapter's table
    0.0: (1.00, 0.50, 0.50),
    0.1: (0.99, 0.50, 0.49),
    0.2: (0.60, 0.48, 0.12),
    0.3: (0.42, 0.39, 0.04),
    0.5: (0.25, 0.24, 0.01),
}


def run(*args):
    out = example_runs.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout


# started when the session starts (tests/conftest.py); the tests below then read their results
EXAMPLE_RUNS = [
    [sys.executable, *a]
    for a in (
        ("examples/k_sweep.py",),
        ("examples/_plain_k_sweep.py",),
        ("examples/loophole.py",),
        ("examples/loophole.py", "--betas", "0.1", "0.3", "--steps", "20"),
    )
]


@pytest.mark.slow
def test_k_sweep_prints_the_seed_table_digit_for_digit():
    out = run("examples/k_sweep.py")
    assert out.split("\n\n")[1] + "\n" == SEED_K_SWEEP  # after the three lines naming the toy
    assert "theta is bitwise equal to the reference: True" in out


@pytest.mark.slow
def test_plain_numpy_k_sweep_prints_the_same_lines():
    """examples/_plain_k_sweep.py (the benchmark's plain NumPy column) is the same experiment: its
    output is k_sweep's K-sweep lines, character for character."""
    assert run("examples/_plain_k_sweep.py") == run("examples/k_sweep.py").split("\n\n")[1] + "\n" == SEED_K_SWEEP


@pytest.mark.slow
def test_loophole_prints_the_seed_table_digit_for_digit():
    out = run("examples/loophole.py")
    rows = re.findall(r"beta = (\d\.\d): sloppy (\d\.\d\d), gold (\d\.\d\d), hedge (\d\.\d\d)", out)
    got = {float(b): tuple(float(v) for v in vals) for b, *vals in rows}
    assert got == SEED_LOOPHOLE
    assert "gap / log-odds = 0.2500" in out


@pytest.mark.slow
def test_loophole_prints_the_hard_prompt_mass_and_the_jitter_from_pi_star():
    out = run("examples/loophole.py", "--betas", "0.1", "0.3", "--steps", "20")
    hard = dict(re.findall(r"^\s+(\d\.\d)\s+\d\.\d\d\s+(\d\.\d\d)$", out, re.M))  # beta: optimum
    assert set(hard) == {"0.1", "0.3"} and float(hard["0.1"]) > 0.5 > float(hard["0.3"])
    std = float(re.search(r"largest std (\S+)\)", out).group(1))
    assert std < 1e-15  # at pi* the shaped rewards agree to rounding
    tv = [float(x) for x in re.findall(r"(\S+) after \d+ steps?", out)]
    assert tv[0] < 1e-6 and tv[-1] > 1e-2  # rounding noise, blown up by standardization


def test_loophole_jitter_starts_on_the_optimum():
    import importlib.util

    spec = importlib.util.spec_from_file_location("loophole", ROOT / "examples" / "loophole.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    spread, trace = mod.jitter(0.3, 8, 1, seed=0)
    assert spread < 1e-15 and trace[0][1] < 1e-6


def test_k1_leaves_theta_bitwise_at_the_reference_for_every_baseline_that_defines_it():
    for baseline in ("standardized", "mean"):
        policy, ref, _ = train(1, 200, seed=3, baseline=baseline)
        assert policy.theta.tobytes() == ref.theta.tobytes()


def test_reference_success_is_half_over_eight_plus_e_minus_4():
    ev = evaluate(TabularPolicy(reference_theta()))
    assert abs(ev["success"] - 0.5 / (8 + np.exp(-4))) < 1e-15
    np.testing.assert_allclose(ev["per_prompt"], [1 / (8 + np.exp(-4))] * 2 + [0, 0], rtol=1e-15)


def test_sloppy_is_gold_plus_hedge_for_any_policy():
    rng = np.random.default_rng(0)
    for _ in range(5):
        ev = evaluate(TabularPolicy(rng.normal(size=(4, 9)) * 3))
        assert abs(ev["sloppy"] - (ev["success"] + ev["hedge"])) < 1e-15
    assert (reward_table("sloppy")[:, HEDGE] == 1).all() and (reward_table("gold")[:, HEDGE] == 0).all()


@pytest.mark.slow  # in process, but ten trainings (about 12 s)
def test_k_sweep_digits_hold_for_other_seeds():
    # the K-sweep digits do not depend on the seed: every K of the table, two other seeds
    for seed in (0, 7):
        for K, want in ((1, "0.062"), (2, "0.500"), (4, "0.500"), (8, "0.500"), (32, "0.500")):
            policy, _, _ = train(K, 6400, seed)
            assert f"{evaluate(policy)['success']:.3f}" == want, (seed, K)


@pytest.mark.slow
@pytest.mark.docs_extra
def test_examples_run_with_other_baselines_and_plot(tmp_path):
    out = run(
        "examples/k_sweep.py",
        "--baseline",
        "loo",
        "--K",
        "1",
        "2",
        "--responses",
        "64",
        "--plot",
        str(tmp_path / "k.svg"),
    )
    assert "leave-one-out is undefined" in out and (tmp_path / "k.svg").stat().st_size > 1000
    out = run(
        "examples/loophole.py",
        "--betas",
        "0.2",
        "--steps",
        "20",
        "--seeds",
        "2",
        "--plot",
        str(tmp_path / "l.svg"),
    )
    assert "spread over seeds" in out and (tmp_path / "l.svg").stat().st_size > 1000


def test_train_rejects_bad_arguments_with_named_errors():
    cases = [
        (dict(K=0, n_responses=10, seed=0), ValueError, "K"),
        (dict(K=2.0, n_responses=10, seed=0), TypeError, "K"),
        (dict(K=4, n_responses=2, seed=0), ValueError, "n_responses"),
        (dict(K=2, n_responses=10, seed=0, beta=-0.1), ValueError, "beta"),
        (dict(K=2, n_responses=10, seed=0, lr=float("nan")), ValueError, "lr"),
        (dict(K=2, n_responses=10, seed=0, baseline="critic"), ValueError, "baseline"),
        (dict(K=1, n_responses=10, seed=0, baseline="loo"), ValueError, "baseline"),
        (dict(K=2, n_responses=10, seed=0, grader="regex"), ValueError, "grader"),
        (dict(K=2, n_responses=10, seed=0, grader=5), TypeError, "grader"),
        (dict(K=2, n_responses=10, seed=0, lr=-2.0), ValueError, "lr"),
        (dict(K=2, n_responses=10, seed="a"), TypeError, "seed"),
        (dict(K=2, n_responses=10, seed=0, record_at=5), TypeError, "record_at"),
        (dict(K=2, n_responses=10, seed=0, record_at=["1"]), TypeError, "record_at"),
    ]
    for kw, exc, name in cases:
        with pytest.raises(exc, match=rf"^{name}:"):
            train(**kw)
    with pytest.raises(ValueError, match="^policy:"):
        evaluate(TabularPolicy(np.zeros((1, 9))))
