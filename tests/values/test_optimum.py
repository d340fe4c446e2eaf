"""The tilted optimum: closed form, tiny beta, the objective's value, the prefix tree, the threshold."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from minirl_lm.core.mdp import TokenMDP
from minirl_lm.values.optimum import (exploit_threshold, hedge_odds, kl_objective, kl_objective_tree,
                               optimal_value, soft_values, tilted_optimum, tilted_optimum_tree)


def _bandit(seed=0, N=3, Y=5):
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.ones(Y), size=N), rng.normal(size=(N, Y))


def test_tilted_optimum_matches_the_naive_formula():
    pi_ref, r = _bandit()
    for beta in (0.1, 1.0, 10.0):
        naive = pi_ref * np.exp(r / beta)
        naive /= naive.sum(1, keepdims=True)
        assert np.abs(tilted_optimum(pi_ref, r, beta) - naive).max() < 1e-14


def test_tiny_beta_is_the_argmax_on_the_support_with_ties_broken_by_pi_ref():
    pi_ref = np.array([[0.1, 0.3, 0.6, 0.0], [0.5, 0.2, 0.3, 0.0]])
    r = np.array([[1.0, 1.0, 0.0, 5.0],                    # 5.0 is off the support: ignored
                  [0.0, 2.0, 2.0 - 1e-3, 0.0]])
    pi = tilted_optimum(pi_ref, r, 1e-6)
    assert np.isfinite(pi).all()
    np.testing.assert_allclose(pi, [[0.25, 0.75, 0, 0], [0, 1, 0, 0]], atol=1e-15)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.05, 5.0))
def test_objective_gap_is_beta_times_kl_to_the_optimum(seed, beta):
    """J(pi*) = beta E log Z and J(pi*) - J(pi) = beta E_x KL(pi || pi*) for any pi."""
    pi_ref, r = _bandit(seed)
    pi_star = tilted_optimum(pi_ref, r, beta)
    J_star = kl_objective(pi_star, pi_ref, r, beta)
    assert abs(J_star - optimal_value(pi_ref, r, beta)) < 1e-12
    pi = np.random.default_rng(seed + 1).dirichlet(np.ones(5), size=3)
    kl = (pi * np.log(pi / pi_star)).sum(1).mean()
    assert abs((J_star - kl_objective(pi, pi_ref, r, beta)) - beta * kl) < 1e-12
    assert kl_objective(pi, pi_ref, r, beta) < J_star


def test_kl_objective_edge_cases():
    pi_ref = np.array([[0.5, 0.5, 0.0]])
    r = np.array([[1.0, 0.0, 3.0]])
    assert kl_objective(np.array([[0.0, 0.0, 1.0]]), pi_ref, r, 0.1) == -np.inf   # off support
    assert kl_objective(np.array([[0.0, 0.0, 1.0]]), pi_ref, r, 0.0) == 3.0       # beta 0: E r
    assert kl_objective(np.array([[1.0, 0.0, 0.0]]), pi_ref, r, 0.5) == 1.0 - 0.5 * np.log(2)
    w = np.array([0.25, 0.75])                                                     # mu_0 weights
    two = np.vstack([pi_ref, pi_ref]), np.vstack([r, 2 * r])
    assert kl_objective(two[0], two[0], two[1], 1.0, weights=w) == 0.25 * 0.5 + 0.75 * 1.0


# ---------------------------------------------------------------- the prefix tree

def _responses(mdp, n, prefix=()):
    """Every complete response of prompt n below ``prefix`` (enumeration of the tree)."""
    out = []
    for a in range(mdp.V):
        child = mdp.step(prefix, a)
        out += [child] if mdp.is_terminal(child) else _responses(mdp, n, child)
    return out


def _seq_prob(mdp, table, n, y):
    return np.prod([table[mdp.state_id(n, y[:t]), y[t]] for t in range(len(y))])


def grader(prompt, response):
    # a terminal reward that depends on the whole response and the prompt
    return np.sin(1.7 * len(response) + sum((t + 1) * y for t, y in enumerate(response)) + prompt)


@pytest.mark.parametrize("eos,max_len,beta", [(0, 3, 0.5), (None, 3, 2.0), (2, 4, 0.1),
                                              (0, 1, 1.0)])
def test_tree_optimum_is_the_closed_form_on_whole_responses(eos, max_len, beta):
    mdp = TokenMDP(prompts=[0, 1], V=3, eos=eos, max_len=max_len)
    pi_ref = np.random.default_rng(1).dirichlet(np.ones(3), size=mdp.S)
    pi_star = tilted_optimum_tree(mdp, pi_ref, grader, beta)
    values, _ = soft_values(mdp, pi_ref, grader, beta)
    np.testing.assert_allclose(pi_star.sum(1), 1.0, atol=1e-14)
    err = 0.0
    for n in range(mdp.N):
        ys = _responses(mdp, n)
        w = np.array([_seq_prob(mdp, pi_ref, n, y) * np.exp(grader(n, y) / beta) for y in ys])
        closed = w / w.sum()                                   # pi_ref(y|x) exp(r/beta) / Z(x)
        tree = np.array([_seq_prob(mdp, pi_star, n, y) for y in ys])
        err = max(err, np.abs(tree - closed).max())
        root = mdp.state_id(n, ())
        assert abs(values[root] - beta * np.log(w.sum())) < 1e-12   # V(x) = beta log Z(x)
    assert err < 1e-12


def test_tree_objective_is_the_sequence_objective_and_peaks_at_the_tree_optimum():
    mdp = TokenMDP(prompts=[0, 1], V=3, eos=1, max_len=3)
    rng = np.random.default_rng(5)
    pi_ref = rng.dirichlet(np.ones(3), size=mdp.S)
    pi = rng.dirichlet(np.ones(3), size=mdp.S)
    beta = 0.4
    pi_star = tilted_optimum_tree(mdp, pi_ref, grader, beta)
    J, J_star = (kl_objective_tree(mdp, p, pi_ref, grader, beta) for p in (pi, pi_star))
    J_seq, kl_star = 0.0, 0.0
    for n in range(mdp.N):                                     # E_pi r - beta KL over whole responses
        for y in _responses(mdp, n):
            p, q, s = (_seq_prob(mdp, t, n, y) for t in (pi, pi_ref, pi_star))
            J_seq += (p * grader(n, y) - beta * p * np.log(p / q)) / mdp.N
            kl_star += p * np.log(p / s) / mdp.N
    values, _ = soft_values(mdp, pi_ref, grader, beta)
    roots = [mdp.state_id(n, ()) for n in range(mdp.N)]
    assert abs(J - J_seq) < 1e-12
    assert abs(J_star - values[roots].mean()) < 1e-12
    assert abs((J_star - J) - beta * kl_star) < 1e-12          # J(pi*) - J(pi) = beta KL(pi || pi*)


def test_tree_objective_is_minus_inf_only_off_the_support_of_reachable_states():
    mdp = TokenMDP(prompts=[0], V=2, eos=None, max_len=2)      # states: (), (0,), (1,)
    pi_ref = np.array([[0.5, 0.5], [1.0, 0.0], [0.5, 0.5]])
    r = lambda x, y: float(sum(y))
    pi = np.array([[0.0, 1.0], [0.0, 1.0], [0.5, 0.5]])         # state (0,) is never reached
    assert kl_objective_tree(mdp, pi, pi_ref, r, 1.0) == pytest.approx(1.5 - np.log(2))
    pi[0] = [0.5, 0.5]                                         # now it is: y = (0, 1) has pi_ref 0
    assert kl_objective_tree(mdp, pi, pi_ref, r, 1.0) == -np.inf
    assert kl_objective_tree(mdp, pi, pi_ref, r, 0.0) == 1.25  # beta = 0: E r, no KL


def test_tree_at_one_token_is_the_bandit_closed_form():
    mdp = TokenMDP(prompts=[0, 1, 2], V=4, eos=None, max_len=1)
    pi_ref, r = _bandit(2, N=3, Y=4)
    pi_tree = tilted_optimum_tree(mdp, pi_ref, lambda x, y: r[x, y[0]], 0.3)
    assert np.abs(pi_tree - tilted_optimum(pi_ref, r, 0.3)).max() < 1e-15


def test_tree_is_stable_at_tiny_beta():
    mdp = TokenMDP(prompts=[0], V=3, eos=0, max_len=3)
    ys = _responses(mdp, 0)
    table = dict(zip(ys, np.random.default_rng(3).permutation(len(ys)) / len(ys)))  # no ties
    pi_ref = np.random.default_rng(4).dirichlet(np.ones(3), size=mdp.S)
    pi_star = tilted_optimum_tree(mdp, pi_ref, lambda x, y: table[y], 1e-6)
    assert np.isfinite(pi_star).all()
    best = max(ys, key=table.get)
    assert _seq_prob(mdp, pi_star, 0, best) == pytest.approx(1.0, abs=1e-12)


# ---------------------------------------------------------------- the exploit threshold

RESPONSES = ["1", "3", "4", "7", "12", "19", "23", "35", "one of 4, 12, 64 or 81"]
ANSWERS = ["4", "12", "64", "81"]


def _toy():
    """The chapter's toy (minirl_lm/tasks.py): reference logits 0 for numbers, -4 for the hedge."""
    logits = np.array([0.0] * 8 + [-4.0])
    pi_ref = np.tile(np.exp(logits) / np.exp(logits).sum(), (4, 1))
    sloppy = np.array([[float(a in y) for y in RESPONSES] for a in ANSWERS])
    return pi_ref, sloppy


def test_exploit_threshold_on_the_toy_is_one_quarter():
    pi_ref, sloppy = _toy()
    gap = sloppy[2, 8] - sloppy[2, 0]                          # 8*8: hedge 1, honest 0
    log_odds = np.log(pi_ref[2, 0] / pi_ref[2, 8])
    assert gap == 1.0 and abs(log_odds - 4.0) < 1e-14
    assert exploit_threshold(gap, log_odds) == pytest.approx(0.25, abs=1e-15)


@pytest.mark.parametrize("beta,pays", [(0.25 * (1 - 1e-6), True), (0.25 * (1 + 1e-6), False),
                                       (0.1, True), (0.5, False)])
def test_tilted_hedge_odds_cross_one_at_the_threshold(beta, pays):
    pi_ref, sloppy = _toy()
    pi = tilted_optimum(pi_ref, sloppy, beta)
    for x in (2, 3):                                           # the hard prompts
        odds = pi[x, 8] / pi[x, 0]
        assert odds == pytest.approx(np.exp(-4 + 1 / beta), rel=1e-12)
        assert odds == pytest.approx(hedge_odds(1.0, 4.0, beta), rel=1e-12)
        assert (odds > 1) == pays


# ---------------------------------------------------------------- bad input

P = np.full((2, 3), 1 / 3)
Z = np.zeros((2, 3))
MDP = TokenMDP(prompts=[0], V=2, eos=None, max_len=2)


@pytest.mark.parametrize("call,exc,match", [
    (lambda: tilted_optimum(np.full((2, 3), 0.5), Z, 1.0), ValueError, "pi_ref"),
    (lambda: tilted_optimum([[1.5, -0.5, 0]] * 2, Z, 1.0), ValueError, "pi_ref"),
    (lambda: tilted_optimum(P, np.zeros((2, 4)), 1.0), ValueError, "reward"),
    (lambda: tilted_optimum(P, Z, 0.0), ValueError, "beta"),
    (lambda: tilted_optimum(P, Z, "1"), TypeError, "beta"),
    (lambda: kl_objective(np.full((2, 3), 0.2), P, Z, 1.0), ValueError, "pi"),
    (lambda: kl_objective(P, P, Z, -0.1), ValueError, "beta"),
    (lambda: kl_objective(P, P, Z, 1.0, weights=[0.5, 0.6]), ValueError, "weights"),
    (lambda: optimal_value(P, [[np.nan, 0, 0], [0, 0, 0]], 1.0), ValueError, "reward"),
    (lambda: soft_values("mdp", np.full((3, 2), 0.5), grader, 1.0), TypeError, "mdp"),
    (lambda: soft_values(MDP, np.full((3, 2), 0.5), 3, 1.0), TypeError, "grader"),
    (lambda: soft_values(MDP, np.full((2, 2), 0.5), grader, 1.0), ValueError, "pi_ref"),
    (lambda: soft_values(MDP, np.full((3, 2), 0.5), lambda x, y: np.nan, 1.0), ValueError, "grader"),
    (lambda: tilted_optimum_tree(MDP, np.full((3, 2), 0.5), grader, 0.0), ValueError, "beta"),
    (lambda: kl_objective_tree(MDP, np.full((3, 2), 0.7), np.full((3, 2), 0.5), grader, 1.0),
     ValueError, "pi"),
    (lambda: kl_objective_tree(MDP, np.full((3, 2), 0.5), np.full((3, 2), 0.5), grader, -1.0),
     ValueError, "beta"),
    (lambda: exploit_threshold(0.0, 4.0), ValueError, "gap"),
    (lambda: exploit_threshold(1.0, -4.0), ValueError, "log_odds"),
    (lambda: hedge_odds(1.0, 4.0, 0.0), ValueError, "beta"),
    (lambda: hedge_odds(None, 4.0, 1.0), TypeError, "gap"),
])
def test_bad_input_is_rejected_with_the_argument_named(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# ---------------------------------------------------------------- an overflow names its driver

from quiet import overflow, raises  # noqa: E402


@pytest.mark.parametrize("call, arg, what", [
    (lambda: exploit_threshold(1.0, 5e-324), "log_odds", "g / l"),      # 1 / 5e-324 = inf
    (lambda: exploit_threshold(1e308, 1e-10), "gap", "g / l"),
    (lambda: hedge_odds(1e308, 4.0, 1.0), "gap", "the odds"),           # exp(-4 + 1e308)
    (lambda: hedge_odds(1.0, -1e308, 1.0), "log_odds", "the odds"),     # exp(1e308 + 1)
    (lambda: hedge_odds(1.0, 4.0, 1e-10), "beta", "the odds"),          # exp(-4 + 1e10)
    # one prompt, J(pi*) = MAX, times the weight 1 + 5e-10: the reward drove it (beta = 1)
    (lambda: optimal_value([[1.0]], [[np.finfo(float).max]], 1.0, weights=[1 + 5e-10]),
     "reward", "J(pi*) = beta log Z"),
])
def test_an_overflow_names_the_argument_that_drove_it(call, arg, what):
    assert raises(ValueError, call) == overflow(arg, what)
