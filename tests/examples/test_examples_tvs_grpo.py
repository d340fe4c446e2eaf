"""The token-vs-sequence and GRPO examples run as programs and print what their pages claim."""

import re
import sys
from pathlib import Path

import example_runs  # each example command once per session, forked warm (tests/conftest.py)
import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(script, *args):
    out = example_runs.run(
        [sys.executable, str(ROOT / "examples" / script), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


# started when the session starts (tests/conftest.py); the tests below then read their results
EXAMPLE_RUNS = [
    [sys.executable, str(ROOT / "examples" / script), *args]
    for script, *args in (
        ("token_vs_sequence.py", "--K", "4"),
        ("grpo.py", "--iters", "12", "--agg-seeds", "2", "--agg-iters", "6"),
        ("grpo.py", "--iters", "2"),
        ("grpo.py", "--iters", "3", "--agg-seeds", "0", "--plot", "{out}/grpo.svg"),
    )
]


def number_after(text, label):
    m = re.search(re.escape(label) + r"\s*=?\s*([-+0-9.e]+)", text)
    assert m, f"{label!r} not in output:\n{text}"
    return float(m.group(1))


@pytest.fixture(scope="module")
def tvs():
    return run("token_vs_sequence.py", "--K", "4")


def rows(text, names):
    """{name: (batch, expected)} from the divergence table."""
    out = {}
    for line in text.splitlines():
        for name in names:
            if line.strip().startswith(name):
                vals = re.findall(r"\d\.\d+e[-+]\d+", line)
                out[name] = (float(vals[0]), float(vals[1]))
    return out


@pytest.mark.slow
def test_token_view_equals_bandit_view_sample_for_sample(tvs):
    assert number_after(tvs, "max |token-view gradient - bandit gradient|") < 1e-12


@pytest.mark.slow
def test_each_per_token_ingredient_changes_the_batch_gradient(tvs):
    names = [
        "terminal R, gamma = 1, b(x)",
        "prefix baseline v^pi(s_t)",
        "critic exact, GAE",
        "critic fitted, GAE",
        "per-token KL",
        "gamma = 0.9",
    ]
    r = rows(tvs, names)
    assert set(r) == set(names)
    assert r[names[0]][0] < 1e-12 and r[names[0]][1] < 1e-12  # they agree
    for name in names[1:]:
        assert r[name][0] > 1e-6, name  # ... until a per-token part
    # exact expectations: baselines, an exact critic and reward-to-go KL keep the mean;
    # a fitted critic with lam < 1 and discounting change it
    for name in ("prefix baseline v^pi(s_t)", "critic exact, GAE", "per-token KL"):
        assert r[name][1] < 1e-12, name
    for name in ("critic fitted, GAE", "gamma = 0.9"):
        assert r[name][1] > 1e-6, name


@pytest.mark.slow
def test_clipping_token_vs_sequence(tvs):
    r = rows(tvs, ["theta = theta_old", "theta moved"])
    assert r["theta = theta_old"] == (0.0, 0.0)
    assert r["theta moved"][0] > 1e-6 and r["theta moved"][1] > 1e-6
    assert number_after(tvs, "the clipped gradient is REINFORCE's: max |difference|") == 0.0


@pytest.mark.slow
def test_token_vs_sequence_help():
    assert "usage" in run("token_vs_sequence.py", "--help")


@pytest.fixture(scope="module")
def grpo():
    return run("grpo.py", "--iters", "12", "--agg-seeds", "2", "--agg-iters", "6")


@pytest.mark.slow
def test_grpo_clipping_fires_only_after_the_first_epoch(grpo):
    out = grpo
    m = re.search(r"clip fraction by epoch, mean over iterations: ([0-9. ]+)", out)
    by_epoch = [float(v) for v in m.group(1).split()]
    assert len(by_epoch) == 4 and by_epoch[0] == 0.0 and max(by_epoch[1:]) > 0.0
    assert number_after(out, "its largest clip fraction over all iterations is") == 0.0
    assert int(re.search(r"clipping fired in (\d+) of", out).group(1)) > 0


@pytest.mark.slow
def test_grpo_learns_and_approaches_the_tilted_optimum(grpo):
    out = grpo
    table = [line.split() for line in out.splitlines() if re.match(r"\s+\d+\s+0\.\d+", line)]
    success = [float(r[1]) for r in table]
    assert success[-1] > success[0] + 0.2
    ref = re.search(r"reference\s+([0-9.]+)", out.split("distance to the tilted optimum")[1])
    fin = re.search(r"GRPO at iter 12\s+([0-9.]+)", out)
    assert float(fin.group(1)) < float(ref.group(1))  # TV to pi* shrinks


@pytest.mark.slow
@pytest.mark.docs_extra
def test_grpo_plot():
    svg = example_runs.run(EXAMPLE_RUNS[-1], cwd=ROOT, check=True).text("grpo.svg")
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg


@pytest.mark.slow
def test_grpo_prints_every_aggregation_mode(grpo):
    out = grpo
    for agg in ("seq_sum", "token_mean", "seq_mean_token_mean", "constant"):
        assert re.search(rf"^\s+{agg}\s+[0-9.]+ \+-", out, re.M), agg


@pytest.mark.slow
def test_grpo_default_run_shows_the_length_bias():
    """Default budget: the per-sequence token mean leaves longer wrong answers, a lower success
    on the long answer and a higher one on the short answer than token_mean."""
    out = run("grpo.py", "--iters", "2")
    vals = {}
    for agg in ("token_mean", "seq_mean_token_mean"):
        line = re.search(rf"^\s+{agg}\s+(.*)$", out, re.M).group(1)
        vals[agg] = [float(v) for v in re.findall(r"([0-9.]+) \+-", line)]
    tm, smtm = vals["token_mean"], vals["seq_mean_token_mean"]
    assert smtm[1] > tm[1]  # P(ok | a): short right answer favoured
    assert smtm[2] < tm[2]  # P(ok | bca): long right answer pulled up less
    assert smtm[3] > tm[3]  # E|y| of the wrong answers: longer
    assert smtm[4] > tm[4]  # P(wrong at the length cap): higher


@pytest.mark.slow
def test_grpo_help():
    assert "usage" in run("grpo.py", "--help")


@pytest.mark.slow
def test_grpo_prints_the_distance_to_both_targets(grpo):
    row = re.search(r"^\s+pi_fwd\s+([0-9.]+)\s+([0-9.]+)", grpo, re.M)
    assert row and float(row.group(2)) == 0.0 and float(row.group(1)) > 0.0  # two distinct targets
    assert re.search(r"closer to (pi_fwd|pi\*);", grpo)
    assert "the run is stopped before it settles" in grpo  # 12 iterations: the verdict says so
    fit = re.search(r"pi_fwd at beta_fwd  = ([0-9.]+): TV ([0-9.]+)", grpo)
    assert fit and 1e-3 <= float(fit.group(1)) <= 1.0


def load_example():
    import importlib.util

    spec = importlib.util.spec_from_file_location("grpo_example", ROOT / "examples" / "grpo.py")
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    return ex


def test_standardized_gain_is_the_factor_of_the_expected_update():
    # a bandit with binary rewards, every ordered group of K enumerated: the expected update of
    # the group-standardized advantage is chi times grad P(R = 1), chi from standardized_gain
    import itertools

    import numpy as np

    from minirl_lm.pg.advantages import standardized

    ex = load_example()
    pi, r = np.array([0.5, 0.3, 0.2]), np.array([0.0, 1.0, 0.0])
    grad_p = pi * (r - pi @ r)  # d P(R = 1) / d theta of a softmax
    for K in (2, 3, 5):
        update = np.zeros(3)
        for ys in itertools.product(range(3), repeat=K):
            ys = np.array(ys)
            A = standardized(r[ys][None, :])[0]  # (K,)
            update += np.prod(pi[ys]) * (A[:, None] * (np.eye(3)[ys] - pi)).mean(axis=0)
        assert np.abs(update - ex.standardized_gain(pi @ r, K) * grad_p).max() < 1e-12, K
    p = 0.9  # K -> infinity: chi -> 1 / sigma_R
    assert abs(ex.standardized_gain(p, 4000) * np.sqrt(p * (1 - p)) - 1) < 0.01
    p = 0.975  # near convergence at K = 8, most groups are all correct (A = 0): chi far below it
    assert ex.standardized_gain(p, 8) * np.sqrt(p * (1 - p)) < 0.5


def test_forward_kl_fixed_point_takes_one_beta_per_prompt():
    import numpy as np

    from minirl_lm.core.policy import TabularPolicy

    ex = load_example()
    mdp = ex.make_task()
    pi_ref = TabularPolicy(ex.reference_logits(mdp, 1.0)).probs()
    betas = np.array([0.01, 0.04, 0.2])
    both = ex.forward_kl_fixed_point_tree(mdp, pi_ref, betas)
    prompt = np.array([mdp.prefix_of(s)[0] for s in range(mdp.S)])  # (S,)
    for n, b in enumerate(betas):
        alone = ex.forward_kl_fixed_point_tree(mdp, pi_ref, b)
        assert np.array_equal(both[prompt == n], alone[prompt == n])


def test_forward_kl_fixed_point_is_stationary_for_k3_in_the_loss():
    # independent check by enumeration: at pi_fwd the exact expected update of REINFORCE on R plus
    # a k3 term (grad of KL(pi_ref || pi) at every state, weighted by its visit probability) is 0
    import numpy as np

    from minirl_lm.core.policy import TabularPolicy

    ex = load_example()
    mdp, beta = ex.make_task(), 0.04
    pi_ref = TabularPolicy(ex.reference_logits(mdp, 1.0)).probs()
    pi = ex.forward_kl_fixed_point_tree(mdp, pi_ref, beta)
    policy = TabularPolicy(np.log(pi))
    a = mdp.all_responses()
    p_y = np.exp(policy.logp(a.states, a.tokens, a.mask)[1])  # (Y,)
    R = mdp.score(ex.verifier, a)  # (Y,)
    grad_reward = policy.backward(a.states, a.tokens, a.mask, (p_y * R)[:, None] * a.mask)
    visits = np.zeros(mdp.S)
    np.add.at(visits, a.states[a.mask > 0], np.broadcast_to(p_y[:, None], a.mask.shape)[a.mask > 0])
    grad_kl = visits[:, None] * (pi - pi_ref)  # d KL(ref || pi) / d theta
    assert np.abs(grad_reward - beta * grad_kl).max() < 1e-10
    assert np.abs(pi - ex.tilted_optimum_tree(mdp, pi_ref, ex.verifier, beta)).max() > 1e-3
