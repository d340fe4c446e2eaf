"""examples/multi_turn.py runs as a program and prints what its page claims."""

import re
import sys
from pathlib import Path

import example_runs  # each example command once per session, forked warm (tests/conftest.py)
import pytest

pytestmark = pytest.mark.slow  # every test runs the example in a subprocess

ROOT = Path(__file__).resolve().parents[2]
NUM = r"([-+]?[0-9.]+(?:e[-+][0-9]+)?)"


def run(*args, check=True):
    out = example_runs.run(
        [sys.executable, str(ROOT / "examples" / "multi_turn.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check:
        assert out.returncode == 0, out.stderr
    return out


# started when the session starts (tests/conftest.py); the tests below then read their results
PLOT = [sys.executable, str(ROOT / "examples" / "multi_turn.py"), "--iters", "10", "--plot", "{out}/mt.svg"]
EXAMPLE_RUNS = [
    [sys.executable, str(ROOT / "examples" / "multi_turn.py"), *a] for a in (("--iters", "100"), ("--takeaway",))
] + [PLOT]


@pytest.fixture(scope="module")
def text():
    return run("--iters", "100").stdout


def grab(text, pattern):
    m = re.search(pattern, text, re.M)
    assert m, f"{pattern!r} not in output:\n{text}"
    return [float(g) for g in m.groups()]


def test_score_identity_line(text):
    (d,) = grab(
        text,
        r"^score identity \(action mask vs trajectory log-prob, 8 sampled "
        rf"episodes\): max \|difference\| {NUM}$",
    )
    assert d < 1e-12


def test_observation_token_bug_line(text):
    bias, cos = grab(
        text,
        rf"^observation tokens in the loss: bias {NUM} \(relative\), "
        rf"cosine {NUM}$",
    )
    assert bias > 1e-2 and cos < 1.0
    (share,) = grab(text, rf"^  share of that bias in rows of chance states: {NUM}$")
    assert share == 1.0


def test_returns_and_gae_lines(text):
    for name, biased in (
        ("returns carried across observation spans", False),
        (r"GAE \(lam = 0.9\) carried across observation spans", False),
        (r"returns reset at observation tokens \(verl bug\)", True),
        (r"GAE \(lam = 0.9\) reset at observation tokens \(verl bug\)", True),
    ):
        adv, grad = grab(
            text,
            rf"^{name}: advantage bias {NUM} \(max over \(s, y\)\), "
            rf"gradient bias {NUM} \(relative\)$",
        )
        assert (adv > 0.1 and grad > 0.1) if biased else (adv < 1e-12 and grad < 1e-12)


def test_variance_lines(text):
    var = {}
    for name in (
        "group mean",
        "leave-one-out",
        r"per-turn value baseline \(exact\)",
        r"GAE with the exact critic \(lam = 0.9\)",
    ):
        var[name], bias = grab(
            text,
            rf"^update variance, {name} \(K = 8\): {NUM}, bias {NUM} "
            r"\(relative\)$",
        )
        assert (abs(bias - 1 / 8) < 0.01) if name == "group mean" else bias < 1e-12
    v = list(var.values())
    assert v[3] < v[2] < v[1]  # GAE < per-turn < leave-one-out


def test_optimum_and_training_lines(text):
    j_star, call, j_ref = grab(
        text,
        rf"^soft optimum \(beta = 0.1\): J\(pi\*\) {NUM}, "
        rf"pi\*\(<call> \| x\) {NUM}, J\(pi_ref\) {NUM}$",
    )
    assert j_star > j_ref and 0 < call < 1
    for name in ("GRPO", "PPO with a critic"):
        gaps = grab(
            text,
            rf"^{name}, J\(pi\*\) - J\(pi\) at iterations 0, 10, 30, 100: "
            rf"{NUM}, {NUM}, {NUM}, {NUM}$",
        )
        assert abs(gaps[0] - (j_star - j_ref)) < 1e-3 and min(gaps) > 0 and gaps[-1] < gaps[0]


def test_process_reward_line(text):
    per, exp, v_tok, v_seq = grab(
        text,
        rf"^process rewards, token view vs sequence view: per-sample difference {NUM} "
        rf"\(relative\), expected gradients differ by {NUM} \(relative\); variance per "
        rf"episode {NUM} vs {NUM}$",
    )
    assert per > 1e-3 and exp < 1e-12


@pytest.mark.docs_extra
def test_plot_is_written():
    assert example_runs.run(PLOT, cwd=ROOT, check=True).text("mt.svg").count("<svg") == 1


def test_a_baseline_moves_the_observation_bias_and_cannot_remove_it(text):
    b0, v, bv, best, bbest = grab(
        text,
        rf"^  the same bias under three baselines \(relative\): b = 0: {NUM}, "
        rf"b = v\(x\) = {NUM}: {NUM}, the best scalar b = {NUM}: {NUM}$",
    )
    obs, _ = grab(text, rf"^observation tokens in the loss: bias {NUM} \(relative\), cosine {NUM}$")
    assert abs(bv - obs) <= 0.051 * obs  # b = v(x) is the bias of the line above (two digits)
    assert 0 < bbest <= min(b0, bv) and bbest > 1e-2 and b0 != bv


def test_takeaway_prints_three_computed_lines():
    out = run("--takeaway").stdout.splitlines()
    assert [line[:3] for line in out] == ["1. ", "2. ", "3. "]
    assert "trajectory estimator to" in out[0] and "best scalar baseline leaves" in out[1]
