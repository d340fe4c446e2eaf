"""The optimal token baseline (tokenbaseline.py): its variance is the lowest of every constant
baseline, by exact enumeration of a one-token response; and verl's estimator, line by line.

Enumeration: V outcomes of a softmax, Var(b) = sum_y pi(y) (R_y - b)^2 ||s_y||^2 - ||grad J||^2
computed from the outcomes themselves (the covariance of the V-vector estimator), exact to
rounding (1e-15 on O(1) numbers)."""

import numpy as np
import pytest

from minirl_lm.pg.tokenbaseline import otb_advantages
from quiet import names


def variance(pi, R, b):
    """Trace of the covariance of (R_y - b)(onehot(y) - pi) over y ~ pi, by enumeration."""
    V = len(pi)
    g = np.array([(R[y] - b) * (np.eye(V)[y] - pi) for y in range(V)])  # (V, V)
    mean = pi @ g
    return float(pi @ ((g - mean) ** 2).sum(axis=1))


def test_the_optimal_baseline_has_the_lowest_variance_of_the_unbiased_baselines():
    pi = np.array([0.5, 0.25, 0.125, 0.125])  # a group of 8 in exact proportion: the population
    R = np.array([1.0, 0.0, 3.0, -1.0])
    ys = np.array([0, 0, 0, 0, 1, 1, 2, 3])
    mask = np.ones((8, 1))
    A = otb_advantages(R[ys], mask, np.log(pi[ys])[:, None], np.full((8, 1), (pi**2).sum()), 8, 0.0, False)
    b_star = R[0] - A[0, 0]  # the group's baseline, = E[R ||s||^2] / E[||s||^2] here
    s2 = 1 - 2 * pi + (pi**2).sum()  # ||onehot(y) - pi||^2, eq. (otb_score)
    assert s2 == pytest.approx(((np.eye(4) - pi) ** 2).sum(axis=1), abs=1e-15)
    assert b_star == pytest.approx((pi * R * s2).sum() / (pi * s2).sum(), abs=1e-15)
    v_star = variance(pi, R, b_star)
    mean_R = pi @ R
    for b in [0.0, mean_R, *np.linspace(-2.0, 3.0, 51)]:
        assert v_star <= variance(pi, R, b) + 1e-15, b
    assert v_star < variance(pi, R, mean_R) - 1e-3  # strictly below the mean baseline here
    # Var(b) - Var(b*) = (b - b*)^2 E[||s||^2]: a parabola with its minimum at b*, exactly
    for b in (0.0, mean_R, 1.7):
        assert variance(pi, R, b) - v_star == pytest.approx((b - b_star) ** 2 * (pi @ s2), abs=1e-14)


def verl_otb(token_level_rewards, response_mask, index, old_log_probs, sum_pi_squared, eps=1e-8):
    """verl 0.9.1 verl/trainer/ppo/core_algos.py:872-988 (compute_optimal_token_baseline_
    advantage, no rollout IS weights, handle_zero_tail=True), re-derived in NumPy."""
    returns = np.flip(np.cumsum(np.flip(token_level_rewards * response_mask, -1), -1), -1)
    w_cumulative = np.cumsum((1 - 2 * np.exp(old_log_probs) + sum_pi_squared) * response_mask, -1)
    baselines = np.zeros_like(returns)
    for g in np.unique(index):
        idx = np.nonzero(index == g)[0]
        if len(idx) == 1:
            continue
        mg = response_mask[idx]
        num = (returns[idx] * w_cumulative[idx] * mg).sum(0)
        den = (w_cumulative[idx] * mg).sum(0) + eps
        baselines[idx] = num / den
        lengths = mg.sum(-1)
        srt = np.sort(lengths)
        top = np.nonzero(lengths == srt[-1])[0]
        if len(top) == 1 and srt[-1] > srt[-2]:
            baselines[idx[top[0]], int(srt[-2]) :] = 0.0
    return (returns - baselines) * response_mask


def test_otb_against_verl():
    rng = np.random.default_rng(0)
    N, K, T, V = 3, 4, 6, 5
    lengths = rng.integers(1, T + 1, N * K)
    lengths[:K] = [2, 5, 3, 2]  # a unique longest: its tail gets no baseline
    mask = (np.arange(T)[None] < lengths[:, None]).astype(float)
    probs = rng.dirichlet(np.ones(V), size=(N * K, T))
    tokens = rng.integers(0, V, (N * K, T))
    logp = np.log(np.take_along_axis(probs, tokens[..., None], -1)[..., 0]) * mask
    s2 = (probs**2).sum(-1)
    R = rng.integers(0, 2, N * K).astype(float)
    token_rewards = np.zeros((N * K, T))
    token_rewards[np.arange(N * K), lengths - 1] = R
    want = verl_otb(token_rewards, mask, np.repeat(np.arange(N), K), logp, s2)
    got = otb_advantages(R, mask, logp, s2, K)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-14)
    assert (got[1, 3:5] == R[1]).all()  # the tail past the second-longest: A = R
    assert otb_advantages(R, mask, logp, s2, 1).tolist() == (R[:, None] * mask).tolist()  # K = 1
    a = otb_advantages(R, mask, logp, s2, K)
    assert a.tolist() == otb_advantages(R, mask, logp, s2, K, 1e-8, True).tolist()
    names("K", "divisor", lambda: otb_advantages(R, mask, logp, s2, 5))
    names("logp_old", "<= 0", lambda: otb_advantages(R, mask, logp + 1.0, s2, K))
    names("sum_pi_sq", "[pi(y|s)^2, 1]", lambda: otb_advantages(R, mask, logp, s2 + 1.0, K))


def test_otb_odd_groups_against_verl_and_an_untrained_column():
    """K = 3 and 5 (the second-longest is srt[-2], not srt[2]); w_eps = 0 with a column no
    response reaches (0 / 0 there is a baseline of 0, not NaN)."""
    rng = np.random.default_rng(3)
    for K, lengths in ((3, [1, 4, 2, 3, 3, 1]), (5, [2, 1, 4, 3, 1, 2, 2, 2, 3, 1])):
        B, T, V = len(lengths), 6, 4
        mask = (np.arange(T)[None] < np.array(lengths)[:, None]).astype(float)  # column 5: nobody
        probs = rng.dirichlet(np.ones(V), size=(B, T))
        tokens = rng.integers(0, V, (B, T))
        logp = np.log(np.take_along_axis(probs, tokens[..., None], -1)[..., 0]) * mask
        s2 = (probs**2).sum(-1)
        R = rng.normal(size=B)
        token_rewards = np.zeros((B, T))
        token_rewards[np.arange(B), np.array(lengths) - 1] = R
        with np.errstate(invalid="ignore"):  # verl's 0 / 0 at the untrained column: NaN * 0
            want = verl_otb(token_rewards, mask, np.repeat(np.arange(B // K), K), logp, s2, eps=0.0)
        got = otb_advantages(R, mask, logp, s2, K, 0.0)
        np.testing.assert_allclose(got, np.nan_to_num(want), rtol=0, atol=1e-14)
        assert (got[:, 5] == 0).all()


@pytest.mark.parametrize("zero_tail", [1, 0, "True", None, [True], np.array(True)])
def test_otb_zero_tail_is_a_flag(zero_tail):
    mask = np.ones((2, 1))
    names(
        "zero_tail",
        "True or False",
        lambda: otb_advantages([1.0, 0.0], mask, np.zeros((2, 1)), mask, 2, 1e-8, zero_tail),
        TypeError,
    )
    assert otb_advantages([1.0, 0.0], mask, np.zeros((2, 1)), mask, 2, 1e-8, np.bool_(True)).shape == (2, 1)


def test_otb_refuses_a_mask_with_holes():
    mask = np.array([[1.0, 0.0, 1.0], [1.0, 1.0, 0.0]])  # row 0 has a hole
    z = np.zeros((2, 3))
    names("mask", "right padding", lambda: otb_advantages([1.0, 0.0], mask, z, np.ones((2, 3)), 2))


def test_otb_domain_edges_and_messages():
    """The relations at their edges: logp_old = 0 and sum_pi_sq at p^2 or 1 (to 1e-12) are
    accepted, beyond them refused; garbage at padding is never read."""
    mask = np.array([[1.0, 0.0], [1.0, 1.0]])
    lp = np.log(np.array([[0.5, 1.0], [1.0, 0.25]]))  # logp_old = 0 on the trained (1, 0)
    lp[0, 1] = 5.0  # > 0 at padding: not read
    p2 = np.exp(np.minimum(lp, 0.0)) ** 2
    call = lambda s2, lp=lp, K=2: otb_advantages([1.0, 0.0], mask, lp, s2, K)  # noqa: E731
    for s2 in (p2, np.ones((2, 2)), p2 * (1 - 0.5e-12), np.full((2, 2), 1 + 0.5e-12)):
        assert np.isfinite(call(s2)).all()
    bad = "sum_pi_sq: expected sum_v pi(v|s)^2 in [pi(y|s)^2, 1] on the trained tokens"
    for s2 in (p2 * (1 - 2e-12), np.full((2, 2), 1 + 2e-12)):
        with pytest.raises(ValueError) as e:
            call(s2)
        assert str(e.value) == bad
    s2 = np.where(mask > 0, p2, 7.0)  # garbage at padding
    assert np.isfinite(call(s2)).all()
    with pytest.raises(ValueError) as e:
        call(np.ones((2, 2)), np.where(mask > 0, 1e-3, 0.0))
    assert str(e.value) == "logp_old: expected log-probs <= 0 on the trained tokens, got max 0.001"
    with pytest.raises(ValueError) as e:  # B = 2 rows, T = 3 columns: K = 3 divides T, not B
        otb_advantages([1.0, 0.0], np.ones((2, 3)), np.zeros((2, 3)), np.ones((2, 3)), 3)
    assert str(e.value) == "K: expected a divisor of the batch size B = 2 (groups of K rows), got 3"
    with pytest.raises(ValueError) as e:
        otb_advantages([1.0, 0.0], [[0.0, 1.0], [1.0, 1.0]], np.zeros((2, 2)), np.ones((2, 2)), 2)
    assert str(e.value) == (
        "mask: expected right padding (1s then 0s in each row) for the optimal token baseline (a position "
        "is a column: a baseline per column of the group), row 0 is [0, 1]; a mask with holes (tool "
        "outputs) is accepted by the token-level objectives; here use minirl_lm.multiturn.env.action_view "
        "to compact the rows (scatter puts results back)"
    )


def test_otb_sum_pi_sq_bounds_are_inclusive_to_the_bit():
    mask = np.ones((2, 1))
    lp = np.log(np.array([[0.5], [0.8]]))
    p = np.exp(np.minimum(lp, 0.0))
    for s2 in (p * p * (1 - 1e-12), np.full((2, 1), 1.0 + 1e-12)):  # exactly at each bound: accepted
        assert np.isfinite(otb_advantages([1.0, 0.0], mask, lp, s2, 2)).all()


def test_otb_a_small_weight_still_gives_a_baseline():
    # pi(y) = 0.9 and sum pi^2 = 0.81: W = 1 - 2 p + sum pi^2 = 0.01 per token, a group weight below 1
    lp, s2, mask = np.log(np.full((2, 1), 0.9)), np.full((2, 1), 0.81), np.ones((2, 1))
    np.testing.assert_allclose(otb_advantages([1.0, 0.0], mask, lp, s2, 2), [[0.5], [-0.5]], rtol=1e-5)


def test_otb_log_prob_message_shows_the_largest_trained_entry():
    mask = np.array([[1.0, 0.0], [1.0, 1.0]])
    lp = np.where(mask > 0, 1e-3, 5.0)  # padding's 5.0 is larger, and not read
    with pytest.raises(ValueError) as e:
        otb_advantages([1.0, 0.0], mask, lp, np.ones((2, 2)), 2)
    assert str(e.value) == "logp_old: expected log-probs <= 0 on the trained tokens, got max 0.001"
