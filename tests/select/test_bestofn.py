"""select/bestofn.py: the law of best-of-N against every ordered N-tuple of draws (ties split
uniformly), its reward, win rate and KL to 1e-14, the KL bound, the frontier against the tilted
optimum. These functions take tables and have no gradient."""

import itertools
import math

import numpy as np
import pytest

from minirl_lm.select.bestofn import (
    best_of_n,
    best_of_n_kl,
    best_of_n_reward,
    kl_bound,
    kl_ceiling,
    matched_optimum,
    win_rate,
)
from minirl_lm.tasks import reference_theta, reward_table
from minirl_lm.values.optimum import tilted_optimum
from quiet import raises, silent

# rows with ties, a zero-probability response, a single level, distinct rewards
PI = np.array(
    [
        [0.1, 0.2, 0.3, 0.4, 0.0],
        [0.25, 0.25, 0.25, 0.25, 0.0],
        [0.5, 0.1, 0.1, 0.2, 0.1],
        [0.05, 0.15, 0.3, 0.2, 0.3],
    ]
)
R = np.array(
    [
        [1.0, 0.0, 1.0, 0.5, 2.0],  # two responses tied at the top; the best one has pi = 0
        [3.0, 3.0, 3.0, 3.0, 3.0],  # one level: best-of-N is pi
        [0.0, 1.0, 1.0, 1.0, -1.0],  # three tied at the top
        [0.1, 0.2, 0.3, 0.4, 0.5],  # distinct
    ]
)


def toy():
    th = reference_theta()
    pi = np.exp(th) / np.exp(th).sum(axis=1, keepdims=True)
    return pi, reward_table("gold"), reward_table("sloppy")


def brute(pi, r, N):
    """Every ordered N-tuple: its probability, the tie-split law of the kept response, and the
    win rate against one more draw (ties half)."""
    P, Y = pi.shape
    law_terms = [[[] for _ in range(Y)] for _ in range(P)]
    win_terms = [[] for _ in range(P)]
    for x in range(P):
        for tup in itertools.product(range(Y), repeat=N):
            prob = np.prod(pi[x, list(tup)])
            if prob == 0:
                continue
            top = max(r[x, y] for y in tup)
            tied = [y for y in tup if r[x, y] == top]
            for y in tied:  # each tied draw kept with probability 1/len(tied)
                law_terms[x][y].append(prob / len(tied))
            beat = (pi[x] * ((r[x] < top) + 0.5 * (r[x] == top))).sum()
            win_terms[x].append(prob * beat)
    law = np.array([[math.fsum(t) for t in row] for row in law_terms])  # sums correctly rounded
    return law, np.array([math.fsum(t) for t in win_terms])


@pytest.mark.parametrize("N", [1, 2, 3, 4])
def test_law_reward_win_rate_and_kl_equal_every_ordered_tuple(N):
    law, win = brute(PI, R, N)
    q = best_of_n(PI, R, N)
    assert np.abs(q - law).max() < 1e-14
    assert np.allclose(q.sum(axis=1), 1.0, rtol=0, atol=1e-14)
    assert abs(best_of_n_reward(PI, R, N) - (law * R).sum(axis=1).mean()) < 1e-14
    assert abs(win_rate(PI, R, N) - win.mean()) < 1e-14
    on = law > 0
    kl_rows = np.zeros_like(law)
    kl_rows[on] = law[on] * np.log(law[on] / PI[on])
    assert abs(best_of_n_kl(PI, R, N) - kl_rows.sum(axis=1).mean()) < 1e-14
    w = np.array([0.1, 0.2, 0.3, 0.4])  # weights mu_0
    assert abs(best_of_n_kl(PI, R, N, w) - w @ kl_rows.sum(axis=1)) < 1e-14
    assert abs(win_rate(PI, R, N, w) - w @ win) < 1e-14


@pytest.mark.parametrize("N", [2, 3, 4])
def test_the_toy_law_equals_every_ordered_tuple(N):
    pi, gold, sloppy = toy()
    for r in (gold, sloppy, gold + sloppy):
        assert np.abs(best_of_n(pi, r, N) - brute(pi, r, N)[0]).max() < 1e-14


def test_edge_cases_are_exact():
    assert np.array_equal(best_of_n(PI, R, 1), PI)  # N = 1 is pi, bit for bit
    assert best_of_n_kl(PI, R, 1) == 0.0
    q = best_of_n(PI, R, 1000)
    assert np.allclose(q[1], PI[1], rtol=0, atol=1e-15)  # one level: pi whatever N
    assert q[0, 4] == 0.0  # off the support
    assert np.allclose(q[0], [0.25, 0, 0.75, 0, 0], rtol=0, atol=1e-15)  # the top level, split by pi
    assert win_rate(PI[1:2], R[1:2], 7) == 0.5  # all tied: half
    assert kl_bound(1) == 0.0 and abs(kl_bound(2) - (np.log(2) - 0.5)) < 1e-16


def test_the_kl_bound_holds_and_is_reached_without_ties():
    rng = np.random.default_rng(0)
    for _ in range(50):
        Y = int(rng.integers(2, 8))
        pi = rng.dirichlet(np.ones(Y), size=3)
        r = rng.integers(0, 3, size=(3, Y)).astype(float)  # many ties
        for N in (1, 2, 3, 5, 10, 100, 10**4):
            assert best_of_n_kl(pi, r, N) <= kl_bound(N) + 1e-15
    # a continuum of distinct rewards (many equal masses): the KL approaches the bound
    Y = 20000
    pi, r = np.full((1, Y), 1.0 / Y), np.arange(Y, dtype=float)[None]
    for N in (2, 8, 32):
        assert 0 < kl_bound(N) - best_of_n_kl(pi, r, N) < 1e-3
        assert abs(win_rate(pi, r, N) - N / (N + 1)) < 1e-3  # no ties: N / (N + 1)


def test_a_thin_level_has_no_cancellation():
    pi = np.array([[1 - 1e-12, 1e-12]])
    r = np.array([[0.0, 1.0]])
    q = silent(lambda: best_of_n(pi, r, 3))
    naive = 1 - (1 - 1e-12) ** 3  # F^N - F-^N with F = 1: cancellation
    exact = 3e-12 - 3e-24  # + 1e-36
    assert abs(q[0, 1] - exact) / exact < 1e-10 and abs(naive - exact) / exact > 1e-6


def test_matched_optimum_spends_the_kl_and_earns_at_least_best_of_n():
    rng = np.random.default_rng(1)
    for _ in range(20):
        pi = rng.dirichlet(np.ones(6), size=3)
        r = rng.normal(size=(3, 6)).round(1)
        for N in (2, 4, 16):
            kl = best_of_n_kl(pi, r, N)
            beta, star = matched_optimum(pi, r, kl)
            on = star > 0
            d = np.zeros_like(star)
            d[on] = star[on] * np.log(star[on] / pi[on])
            assert abs(d.sum(axis=1).mean() - kl) < 1e-12 * max(1.0, kl)
            assert np.allclose(star, tilted_optimum(pi, r, beta), rtol=0, atol=1e-12)
            assert (star * r).sum(axis=1).mean() >= best_of_n_reward(pi, r, N) - 1e-12  # the frontier


def test_two_levels_put_best_of_n_on_the_frontier():
    # with a two-level reward both families reweight the two levels: the same law at equal KL
    pi, gold, _ = toy()
    for N in (2, 8, 32):
        _, star = matched_optimum(pi, gold, best_of_n_kl(pi, gold, N))
        assert np.abs(star - best_of_n(pi, gold, N)).max() < 1e-12


def test_the_ceiling_is_the_limit_of_both():
    pi, gold, sloppy = toy()
    for r in (gold, sloppy):
        c = kl_ceiling(pi, r)
        assert best_of_n_kl(pi, r, 100) < c and abs(c - best_of_n_kl(pi, r, 10**6)) < 1e-12
    top = np.array([[1.0, 0.0]])
    assert abs(kl_ceiling(np.array([[0.25, 0.75]]), top) - np.log(4)) < 1e-15
    assert matched_optimum(PI, R, 0.0)[0] == np.inf and np.array_equal(matched_optimum(PI, R, 0.0)[1], PI)


def test_errors_name_the_argument():
    c = kl_ceiling(PI, R)
    assert raises(ValueError, lambda: matched_optimum(PI, R, c + 0.1)).startswith(
        "kl: expected a KL below the ceiling"
    )
    assert raises(ValueError, lambda: best_of_n(PI, R, 0)) == "N: expected an integer >= 1 and <= 1000000, got 0"
    assert raises(TypeError, lambda: best_of_n(PI, R, 2.0)).startswith("N: expected an integer")
    assert raises(ValueError, lambda: matched_optimum(PI, R, -1.0)) == "kl: expected a number >= 0, got -1.0"
    assert raises(ValueError, lambda: win_rate(PI, R, 2, weights=np.full(len(PI), 0.3))).startswith(
        "weights: expected rows summing"
    )
    assert raises(ValueError, lambda: best_of_n(PI, R[:, :3], 2)).startswith("reward: ")
    assert raises(ValueError, lambda: best_of_n(PI * 2, R, 2)).startswith("pi: expected rows summing to 1")
    assert (
        raises(ValueError, lambda: kl_bound(10**7)) == "N: expected an integer >= 1 and <= 1000000, got 10000000"
    )


def test_the_prompt_weights_enter_the_reward_the_ceiling_and_the_matched_optimum():
    pi = np.array([[0.5, 0.25, 0.25], [0.2, 0.3, 0.5]])
    reward = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0]])
    w = np.array([0.25, 0.75])
    for f in (lambda p, r, **k: best_of_n_reward(p, r, 4, **k), kl_ceiling):
        one, two = f(pi[:1], reward[:1]), f(pi[1:], reward[1:])
        assert f(pi, reward, weights=w) == pytest.approx(0.25 * one + 0.75 * two, rel=1e-14)
        assert f(pi, reward, weights=w) != pytest.approx(f(pi, reward), rel=1e-6)  # not the mean
    kl = 0.5 * kl_ceiling(pi, reward, weights=w)
    star = matched_optimum(pi, reward, kl, weights=w)[0]
    unweighted = matched_optimum(pi, reward, kl)[0]
    assert star != pytest.approx(unweighted, rel=1e-6)
