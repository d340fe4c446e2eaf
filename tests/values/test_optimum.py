"""The tilted optimum: closed form, tiny beta, the objective's value, the prefix tree, the threshold;
every argument check (the beta bounds, the shapes of pi, pi_ref and weights, the TokenMDP and the
grader, the grader's reward) and every reachable overflow, named after its driver, silently; the
reward shift and the log-sum-exp shift of the tilt taken row by row, pi* a distribution at any
beta, the tree optimum in float64 whatever the dtype of pi_ref, and the uniform default weights."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minirl_lm.core.mdp import TokenMDP
from minirl_lm.values.optimum import (
    exploit_threshold,
    hedge_odds,
    kl_objective,
    kl_objective_tree,
    optimal_value,
    soft_values,
    tilt,
    tilted_optimum,
    tilted_optimum_tree,
)
from quiet import raises, silent


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
    r = np.array(
        [
            [1.0, 1.0, 0.0, 5.0],  # 5.0 is off the support: ignored
            [0.0, 2.0, 2.0 - 1e-3, 0.0],
        ]
    )
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
    assert kl_objective(np.array([[0.0, 0.0, 1.0]]), pi_ref, r, 0.1) == -np.inf  # off support
    assert kl_objective(np.array([[0.0, 0.0, 1.0]]), pi_ref, r, 0.0) == 3.0  # beta 0: E r
    assert kl_objective(np.array([[1.0, 0.0, 0.0]]), pi_ref, r, 0.5) == 1.0 - 0.5 * np.log(2)
    w = np.array([0.25, 0.75])  # mu_0 weights
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


@pytest.mark.parametrize("eos,max_len,beta", [(0, 3, 0.5), (None, 3, 2.0), (2, 4, 0.1), (0, 1, 1.0)])
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
        closed = w / w.sum()  # pi_ref(y|x) exp(r/beta) / Z(x)
        tree = np.array([_seq_prob(mdp, pi_star, n, y) for y in ys])
        err = max(err, np.abs(tree - closed).max())
        root = mdp.state_id(n, ())
        assert abs(values[root] - beta * np.log(w.sum())) < 1e-12  # V(x) = beta log Z(x)
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
    for n in range(mdp.N):  # E_pi r - beta KL over whole responses
        for y in _responses(mdp, n):
            p, q, s = (_seq_prob(mdp, t, n, y) for t in (pi, pi_ref, pi_star))
            J_seq += (p * grader(n, y) - beta * p * np.log(p / q)) / mdp.N
            kl_star += p * np.log(p / s) / mdp.N
    values, _ = soft_values(mdp, pi_ref, grader, beta)
    roots = [mdp.state_id(n, ()) for n in range(mdp.N)]
    assert abs(J - J_seq) < 1e-12
    assert abs(J_star - values[roots].mean()) < 1e-12
    assert abs((J_star - J) - beta * kl_star) < 1e-12  # J(pi*) - J(pi) = beta KL(pi || pi*)


def test_tree_objective_is_minus_inf_only_off_the_support_of_reachable_states():
    mdp = TokenMDP(prompts=[0], V=2, eos=None, max_len=2)  # states: (), (0,), (1,)
    pi_ref = np.array([[0.5, 0.5], [1.0, 0.0], [0.5, 0.5]])
    r = lambda x, y: float(sum(y))
    pi = np.array([[0.0, 1.0], [0.0, 1.0], [0.5, 0.5]])  # state (0,) is never reached
    assert kl_objective_tree(mdp, pi, pi_ref, r, 1.0) == pytest.approx(1.5 - np.log(2))
    pi[0] = [0.5, 0.5]  # now it is: y = (0, 1) has pi_ref 0
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
    gap = sloppy[2, 8] - sloppy[2, 0]  # 8*8: hedge 1, honest 0
    log_odds = np.log(pi_ref[2, 0] / pi_ref[2, 8])
    assert gap == 1.0 and abs(log_odds - 4.0) < 1e-14
    assert exploit_threshold(gap, log_odds) == pytest.approx(0.25, abs=1e-15)


@pytest.mark.parametrize(
    "beta,pays", [(0.25 * (1 - 1e-6), True), (0.25 * (1 + 1e-6), False), (0.1, True), (0.5, False)]
)
def test_tilted_hedge_odds_cross_one_at_the_threshold(beta, pays):
    pi_ref, sloppy = _toy()
    pi = tilted_optimum(pi_ref, sloppy, beta)
    for x in (2, 3):  # the hard prompts
        odds = pi[x, 8] / pi[x, 0]
        assert odds == pytest.approx(np.exp(-4 + 1 / beta), rel=1e-12)
        assert odds == pytest.approx(hedge_odds(1.0, 4.0, beta), rel=1e-12)
        assert (odds > 1) == pays


# ---------------------------------------------------------------- bad input

P = np.full((2, 3), 1 / 3)
Z = np.zeros((2, 3))
MDP = TokenMDP(prompts=[0], V=2, eos=None, max_len=2)


@pytest.mark.parametrize(
    "call,exc,match",
    [
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
        (
            lambda: kl_objective_tree(MDP, np.full((3, 2), 0.7), np.full((3, 2), 0.5), grader, 1.0),
            ValueError,
            "pi",
        ),
        (
            lambda: kl_objective_tree(MDP, np.full((3, 2), 0.5), np.full((3, 2), 0.5), grader, -1.0),
            ValueError,
            "beta",
        ),
        (lambda: exploit_threshold(0.0, 4.0), ValueError, "gap"),
        (lambda: exploit_threshold(1.0, -4.0), ValueError, "log_odds"),
        (lambda: hedge_odds(1.0, 4.0, 0.0), ValueError, "beta"),
        (lambda: hedge_odds(None, 4.0, 1.0), TypeError, "gap"),
    ],
)
def test_bad_input_is_rejected_with_the_argument_named(call, exc, match):
    msg = raises(exc, call)
    assert msg.startswith(match if ":" in match else f"{match}: ")


# ---------------------------------------------------------------- an overflow names its driver


@pytest.mark.parametrize(
    "call, fname, what",
    [
        (lambda: exploit_threshold(1.0, 5e-324), "exploit_threshold", "threshold"),  # 1 / 5e-324 = inf
        (lambda: exploit_threshold(1e308, 1e-10), "exploit_threshold", "threshold"),
        (lambda: hedge_odds(1e308, 4.0, 1.0), "hedge_odds", "odds"),  # exp(-4 + 1e308)
        (lambda: hedge_odds(1.0, -1e308, 1.0), "hedge_odds", "odds"),  # exp(1e308 + 1)
        (lambda: hedge_odds(1.0, 4.0, 1e-10), "hedge_odds", "odds"),  # exp(-4 + 1e10)
        # one prompt, J(pi*) = MAX, times the weight 1 + 5e-10: the reward drove it (beta = 1)
        (
            lambda: optimal_value([[1.0]], [[np.finfo(float).max]], 1.0, weights=[1 + 5e-10]),
            "optimal_value",
            "J",
        ),
    ],
)
def test_an_overflow_names_the_function(call, fname, what):
    assert raises(ValueError, call).startswith(
        f"{fname}: expected a finite {what}, got inf (beyond float64) from "
    )


# ---------------------------------------------------------------- folded from tests/test_kills_optimum.py

MAX = np.finfo(np.float64).max  # 1.7976931348623157e308
ZERO = lambda x, y: 0.0  # a grader


# ---------------------------------------------------------------- argument checks


@pytest.mark.parametrize(
    "call",
    [
        lambda b: tilted_optimum(P, Z, b),
        lambda b: optimal_value(P, Z, b),
        lambda b: soft_values(TokenMDP(prompts=[0], V=2, max_len=1), [[0.5, 0.5]], ZERO, b),
        lambda b: tilted_optimum_tree(TokenMDP(prompts=[0], V=2, max_len=1), [[0.5, 0.5]], ZERO, b),
        lambda b: hedge_odds(1.0, 4.0, b),
    ],
    ids=["tilted_optimum", "optimal_value", "soft_values", "tilted_optimum_tree", "hedge_odds"],
)
def test_beta_must_be_positive(call):
    for beta in (0.0, -1.0):
        msg = raises(ValueError, lambda b=beta: call(b))
        assert msg.startswith("beta: expected a number > 0")


def test_beta_message_sample():
    assert raises(ValueError, lambda: tilted_optimum(P, Z, 0.0)) == "beta: expected a number > 0, got 0.0"


def test_beta_zero_is_allowed_in_the_tree_objective_and_negative_beta_is_not():
    mdp = TokenMDP(prompts=[0], V=2, max_len=1)
    # beta = 0: J = E_pi r = 0.25 * 1 + 0.75 * 3 = 2.5
    assert kl_objective_tree(mdp, [[0.25, 0.75]], [[0.5, 0.5]], lambda x, y: 1.0 + 2 * y[0], 0.0) == 2.5
    msg = raises(ValueError, lambda: kl_objective_tree(mdp, [[0.5, 0.5]], [[0.5, 0.5]], ZERO, -1.0))
    assert msg.startswith("beta: expected a number >= 0")


def test_tables_must_be_two_dimensional():
    msg = raises(ValueError, lambda: tilted_optimum([0.5, 0.5], [0.0, 0.0], 1.0))
    assert msg == "pi_ref: expected shape (N, Y), got (2,)"
    msg = raises(ValueError, lambda: kl_objective([0.5, 0.5], [0.5, 0.5], [0.0, 0.0], 1.0))
    assert msg == "pi: expected shape (N, Y), got (2,)"


def test_pi_ref_must_have_the_shape_of_pi():
    for pi_ref in (np.full((2, 2), 0.5), np.full((1, 3), 1 / 3)):  # (1, 3) would broadcast
        msg = raises(ValueError, lambda p=pi_ref: kl_objective(P, p, Z, 1.0))
        assert msg == f"pi_ref: expected shape (2, 3), got {pi_ref.shape}"


def test_weights_are_one_probability_per_prompt():
    msg = raises(ValueError, lambda: kl_objective(P, P, Z, 1.0, weights=[1.0]))
    assert msg.startswith("weights: expected shape (2,)")
    msg = raises(ValueError, lambda: kl_objective(P, P, Z, 1.0, weights=[[0.5, 0.5]]))
    assert msg == "weights: expected shape (2,), got (1, 2)"


def test_tree_pi_must_have_the_shape_of_pi_ref():
    mdp = TokenMDP(prompts=[0], V=2, max_len=2)  # S = 3 states, V = 2
    msg = raises(ValueError, lambda: kl_objective_tree(mdp, np.full((2, 2), 0.5), np.full((3, 2), 0.5), ZERO, 1.0))
    assert msg.startswith("pi: expected shape (3, 2)")
    msg = raises(ValueError, lambda: kl_objective_tree(mdp, np.full((1, 2), 0.5), np.full((3, 2), 0.5), ZERO, 1.0))
    assert msg.startswith("pi: expected shape (3, 2)")


def test_the_tree_functions_need_an_enumerated_token_mdp():
    msg = raises(TypeError, lambda: soft_values("mdp", [[0.5, 0.5]], ZERO, 1.0))
    assert msg.startswith("mdp: expected a TokenMDP with ids='enumerate'")
    lazy = TokenMDP(prompts=[0], V=2, max_len=2, ids="lazy", capacity=3)
    msg = raises(TypeError, lambda: soft_values(lazy, np.full((3, 2), 0.5), ZERO, 1.0))
    assert msg.startswith("mdp: expected a TokenMDP with ids='enumerate'")


def test_the_grader_is_a_two_argument_callable():
    mdp = TokenMDP(prompts=[0], V=2, max_len=1)
    msg = raises(TypeError, lambda: soft_values(mdp, [[0.5, 0.5]], 3, 1.0))
    assert msg.startswith("grader: expected a callable grader(prompt, response)")
    msg = raises(TypeError, lambda: soft_values(mdp, [[0.5, 0.5]], lambda y: 0.0, 1.0))
    assert msg == (
        "grader: expected a callable grader(prompt, response) taking 2 positional "
        "arguments, got one with signature (y)"
    )


def test_a_bad_reward_names_the_grader_and_the_response():
    mdp = TokenMDP(prompts=[0], V=2, max_len=2)
    nan_at_01 = lambda x, y: np.nan if y == (0, 1) else 0.0
    msg = raises(ValueError, lambda: soft_values(mdp, np.full((3, 2), 0.5), nan_at_01, 1.0))
    assert msg.startswith("grader: expected a finite number (a finite reward) for response (0, 1)")
    text_at_10 = lambda x, y: "high" if y == (1, 0) else 0.0
    msg = raises(
        TypeError, lambda: kl_objective_tree(mdp, np.full((3, 2), 0.5), np.full((3, 2), 0.5), text_at_10, 1.0)
    )
    assert msg == ("grader: expected a real number (a finite reward) for response (1, 0), got str 'high'")


# ---------------------------------------------------------------- the tilt, row by row


def test_the_best_reward_is_subtracted_row_by_row():
    """Row 0's rewards 0 and 1 must not be shifted by row 1's 1e17 (0 - 1e17 and 1 - 1e17 round
    to the same float, which would erase the gap)."""
    pi = silent(lambda: tilted_optimum([[0.5, 0.5], [0.5, 0.5]], [[0.0, 1.0], [1e17, 1e17]], 1.0))
    e = math.e  # row 0: (0.5, 0.5 e) / (0.5 + 0.5 e) = (1, e) / (1 + e)
    np.testing.assert_allclose(pi, [[1 / (1 + e), e / (1 + e)], [0.5, 0.5]], rtol=1e-15)


def test_the_log_sum_exp_shift_is_taken_row_by_row():
    """Row 1: pi_ref = (2^-1060, 1), rewards (0, -745.5), beta = 1. Shifted by row 0's largest
    exponent (0) instead of its own (log 2^-1060 = -734.7), its terms underflow to subnormals
    and to 0; row by row they are 1 and r = exp(-745.5 + 1060 log 2) = 2.11e-5."""
    pi = silent(lambda: tilted_optimum([[1.0, 0.0], [2.0**-1060, 1.0]], [[0.0, 0.0], [0.0, -745.5]], 1.0))
    r = math.exp(-745.5 + 1060 * math.log(2))  # pi*(1) / pi*(0) = 1 e^-745.5 / (2^-1060 e^0)
    assert pi[0].tolist() == [1.0, 0.0]
    np.testing.assert_allclose(pi[1], [1 / (1 + r), r / (1 + r)], rtol=1e-12)


def test_an_overflowing_reward_gap_gives_the_best_response_silently():
    # q - m = (0, -1e308 - 1e308 = -inf): an overflow, pi* = (1, 0) exactly
    pi = silent(lambda: tilted_optimum([[0.5, 0.5]], [[1e308, -1e308]], 1.0))
    assert pi.tolist() == [[1.0, 0.0]]


@pytest.mark.parametrize("beta", [5e-324, 1e-300, 1.0, 1e300, MAX])
def test_tilted_optimum_is_a_distribution_at_any_beta(beta):
    """log pi* <= 0, finite at the best reward: pi* is a distribution even at the extremes.
    Row 0: rewards (MAX, -MAX, 0) on pi_ref (1/4, 1/4, 1/2): up to beta = 1e300 the gap MAX / beta
    >= 1.8e8 leaves (1, 0, 0); at beta = MAX the weights are (1/4, 0, e^-1 / 2) (the gap 2 MAX
    overflows to inf), pi* = (1, 0, 2/e) / (1 + 2/e). Row 1: a tie at MAX between pi_ref 1e-300
    and 1/2, split by pi_ref: (2e-300, 0, 1) up to rounding (exp(log 1e-300): rtol 1e-13)."""
    pi_ref = [[0.25, 0.25, 0.5, 0.0], [1e-300, 0.5, 0.5, 0.0]]
    reward = [[MAX, -MAX, 0.0, MAX], [MAX, -MAX, MAX, MAX]]  # column 3: off the support
    pi = silent(lambda: tilted_optimum(pi_ref, reward, beta))
    c = 2 / math.e
    row0 = [1 / (1 + c), 0.0, c / (1 + c), 0.0] if beta == MAX else [1.0, 0.0, 0.0, 0.0]
    np.testing.assert_allclose(pi, [row0, [1e-300 / (0.5 + 1e-300), 0.0, 1.0, 0.0]], rtol=1e-13)


def test_the_tree_optimum_computes_in_float64_for_a_float32_pi_ref():
    """A constant reward leaves pi_ref unchanged: pi* = float64(float32(0.3)), float64(float32(0.7))
    (they sum to 1 exactly); logs taken in float32 would be off by ~1e-8."""
    mdp = TokenMDP(prompts=[0], V=2, max_len=1)
    pi_ref = np.array([[0.3, 0.7]], dtype=np.float32)
    pi = silent(lambda: tilted_optimum_tree(mdp, pi_ref, ZERO, 1.0))
    assert pi.dtype == np.float64
    np.testing.assert_allclose(pi, [[float(np.float32(0.3)), float(np.float32(0.7))]], rtol=1e-15)


# ---------------------------------------------------------------- overflow: exact messages, no warning


def test_kl_objective_reward_overflow():
    # pi = 1 + 4e-10 (a row summing to 1 within 1e-9) times the largest float: E_pi r = inf
    msg = raises(ValueError, lambda: kl_objective([[1 + 4e-10]], [[1.0]], [[MAX]], 0.0))
    assert msg.startswith("kl_objective: expected a finite ")
    assert ", got inf (beyond float64) from " in msg
    # rows E_pi r = +inf and -inf, averaged: 0.5 inf - 0.5 inf = NaN (inf - inf in the matmul)
    msg = raises(
        ValueError, lambda: kl_objective([[1 + 4e-10], [1 + 4e-10]], [[1.0], [1.0]], [[MAX], [-MAX]], 0.0)
    )
    assert msg.startswith("kl_objective: expected a finite ")
    assert ", got NaN (beyond float64) from " in msg


def test_kl_objective_beta_overflow():
    # log(pi / pi_ref) = (log 1/9, log 9) = (-2.197, 2.197); times 1e308: (-inf, +inf) (overflow);
    # r - beta log ratio = (+inf, -inf); their pi-weighted sum is inf - inf = NaN
    msg = raises(ValueError, lambda: kl_objective([[0.1, 0.9]], [[0.9, 0.1]], [[0.0, 0.0]], 1e308))
    assert msg.startswith("kl_objective: expected a finite ")
    assert ", got NaN (beyond float64) from " in msg
    # log ratio (log 0.5/0.999, log 500) = (-0.69, 6.2): beta log ratio = (-6.9e307, +inf): J = -inf
    msg = raises(ValueError, lambda: kl_objective([[0.5, 0.5]], [[0.999, 0.001]], [[0.0, 0.0]], 1e308))
    assert msg.startswith("kl_objective: expected a finite ")
    assert ", got inf (beyond float64) from " in msg


def test_optimal_value_overflow():
    # one prompt, V = beta log Z = MAX + 1 * log 1 = MAX; weight 1 + 5e-10 times MAX = inf,
    # driven by the reward MAX (beta is 1)
    assert silent(lambda: optimal_value([[1.0]], [[MAX]], 1.0)) == MAX
    msg = raises(ValueError, lambda: optimal_value([[1.0]], [[MAX]], 1.0, weights=[1 + 5e-10]))
    assert msg.startswith("optimal_value: expected a finite ")
    assert ", got inf (beyond float64) from " in msg
    # prompt 1: pi_ref (1e-300, 1), rewards (1e308, -1e308): q - m = (0, -inf),
    # log Z = log 1e-300 = -690.8, beta log Z = -6.9e310 = -inf (overflow): V = -inf;
    # weights (1, 0): 1 * 0 + 0 * -inf = NaN
    msg = raises(
        ValueError,
        lambda: optimal_value(
            [[1.0, 0.0], [1e-300, 1.0]], [[0.0, 0.0], [1e308, -1e308]], 1e308, weights=[1.0, 0.0]
        ),
    )
    assert msg.startswith("optimal_value: expected a finite ")
    assert ", got NaN (beyond float64) from " in msg


def test_soft_values_overflow():
    """States (), (0,), (1,). At (0,) and (1,): pi_ref (1e-300, 1), rewards (1e308, -1e308), so
    v = 1e308 + 1e308 log 1e-300 = -inf (overflow). At the root both q are -inf: q - max q is
    -inf - -inf = NaN: the root's value is NaN, and the error says so."""
    mdp = TokenMDP(prompts=[0], V=2, max_len=2)
    pi_ref = np.array([[0.5, 0.5], [1e-300, 1.0], [1e-300, 1.0]])
    grader = lambda x, y: 1e308 if y[-1] == 0 else -1e308
    msg = raises(ValueError, lambda: soft_values(mdp, pi_ref, grader, 1e308))
    assert msg.startswith("soft_values: expected a finite values and q, got NaN (beyond float64) from ")
    msg = raises(ValueError, lambda: tilted_optimum_tree(mdp, pi_ref, grader, 1e308))
    assert msg.startswith("tilted_optimum_tree: expected a finite pi_star, got NaN (beyond float64) from ")


def test_kl_objective_tree_overflow_to_minus_inf_is_an_error_not_an_infinite_kl():
    # one state: log ratio (log 0.5/0.999, log 500) = (-0.69, 6.2), beta = 1e308:
    # v = 0.5 (6.9e307) + 0.5 (-inf) = -inf, with pi_ref > 0 wherever pi > 0 (a finite KL)
    mdp = TokenMDP(prompts=[0], V=2, max_len=1)
    msg = raises(ValueError, lambda: kl_objective_tree(mdp, [[0.5, 0.5]], [[0.999, 0.001]], ZERO, 1e308))
    assert msg.startswith("kl_objective_tree: expected a finite ")
    assert ", got inf (beyond float64) from " in msg


def test_kl_objective_tree_overflow_to_nan():
    # log ratio (log 1/9, log 9), beta = 1e308: pi (q - beta log ratio) = (+inf, -inf), sum NaN
    mdp = TokenMDP(prompts=[0], V=2, max_len=1)
    msg = raises(ValueError, lambda: kl_objective_tree(mdp, [[0.1, 0.9]], [[0.9, 0.1]], ZERO, 1e308))
    assert msg.startswith("kl_objective_tree: expected a finite ")
    assert ", got NaN (beyond float64) from " in msg
    # the same with an action pi takes where pi_ref = 0 (an infinite log ratio): still an error
    msg = raises(
        ValueError,
        lambda: kl_objective_tree(
            TokenMDP(prompts=[0], V=3, max_len=1), [[0.1, 0.8, 0.1]], [[0.9, 0.1, 0.0]], ZERO, 1e308
        ),
    )
    assert msg.startswith("kl_objective_tree: expected a finite ")
    assert ", got NaN (beyond float64) from " in msg


def test_kl_objective_tree_overflow_across_prompts():
    mdp = TokenMDP(prompts=[0, 1], V=2, max_len=1)  # two root states, one per prompt
    # root 0: log ratio (log 1/7, log 3) = (-1.95, 1.10): beta log ratio (-inf, 1.1e308): v = +inf
    # root 1: log ratio (log 7, log 1/3): beta log ratio (+inf, -1.1e308): v = -inf
    # mean: 0.5 inf + 0.5 (-inf) = NaN
    msg = raises(
        ValueError, lambda: kl_objective_tree(mdp, [[0.1, 0.9], [0.7, 0.3]], [[0.7, 0.3], [0.1, 0.9]], ZERO, 1e308)
    )
    assert msg.startswith("kl_objective_tree: expected a finite ")
    assert ", got NaN (beyond float64) from " in msg
    # beta = 0, one prompt with value MAX, weight 1 + 5e-10: the weighted sum overflows
    one = TokenMDP(prompts=[0], V=1, max_len=1)
    assert silent(lambda: kl_objective_tree(one, [[1.0]], [[1.0]], lambda x, y: MAX, 0.0)) == MAX
    msg = raises(
        ValueError, lambda: kl_objective_tree(one, [[1.0]], [[1.0]], lambda x, y: MAX, 0.0, weights=[1 + 5e-10])
    )
    assert msg.startswith("kl_objective_tree: expected a finite ")
    assert ", got inf (beyond float64) from " in msg


def test_kl_objective_tree_is_silent_where_pi_or_pi_ref_is_zero():
    mdp = TokenMDP(prompts=[0], V=3, max_len=1)
    r = lambda x, y: float(y[0])  # rewards 0, 1, 2
    # pi = pi_ref = (0.5, 0.5, 0): no KL, J = 0.5 * 0 + 0.5 * 1 = 0.5; the (0, 0) entry is 0 log 0
    table = [[0.5, 0.5, 0.0]]
    assert silent(lambda: kl_objective_tree(mdp, table, table, r, 1.0)) == 0.5
    # pi takes action 2 where pi_ref = 0: the KL is +inf, J = -inf, without a warning
    assert silent(lambda: kl_objective_tree(mdp, [[0.5, 0.0, 0.5]], table, r, 1.0)) == -np.inf


def test_exploit_threshold_overflow():
    assert silent(lambda: exploit_threshold(1.0, 4.0)) == 0.25  # 1 / 4
    msg = raises(ValueError, lambda: exploit_threshold(1e308, 1e-10))  # 1e318: inf
    assert msg.startswith("exploit_threshold: expected a finite ")
    assert ", got inf (beyond float64) from " in msg


def test_hedge_odds_overflow():
    assert silent(lambda: hedge_odds(4.0, 4.0, 1.0)) == 1.0  # exp(-4 + 4 / 1) = exp(0)
    msg = raises(ValueError, lambda: hedge_odds(1.0, 4.0, 1e-10))  # exp(-4 + 1e10): overflow
    assert msg.startswith("hedge_odds: expected a finite ")
    assert ", got inf (beyond float64) from " in msg
    msg = raises(ValueError, lambda: hedge_odds(1e308, 0.0, 1e-10))  # exp(1e318 = inf) = inf
    # gap * beta = 1e298 > 1: gap is the farther from 1
    assert msg.startswith("hedge_odds: expected a finite ")
    assert ", got inf (beyond float64) from " in msg


def test_weights_default_to_the_uniform_prompt_distribution():
    pi_ref, r = _bandit(6, N=2, Y=3)
    pi = np.random.default_rng(7).dirichlet(np.ones(3), size=2)
    for f, args in ((kl_objective, (pi, pi_ref, r, 0.5)), (optimal_value, (pi_ref, r, 0.5))):
        assert f(*args) == f(*args, weights=[0.5, 0.5])
        assert f(*args) != f(*args, weights=[0.9, 0.1])
    mdp = TokenMDP(prompts=[0, 1], V=2, max_len=1)
    tree = np.random.default_rng(8).dirichlet(np.ones(2), size=mdp.S)
    g = lambda x, y: float(x + y[0])
    J = kl_objective_tree(mdp, tree, np.full((mdp.S, 2), 0.5), g, 0.3)
    assert J == kl_objective_tree(mdp, tree, np.full((mdp.S, 2), 0.5), g, 0.3, weights=[0.5, 0.5])
    assert J != kl_objective_tree(mdp, tree, np.full((mdp.S, 2), 0.5), g, 0.3, weights=[0.9, 0.1])


@pytest.mark.parametrize(
    "call, fname, what",
    [
        # gap * log_odds = 1 exactly and g / l = 2^1200 = inf: a tie goes to gap
        (lambda: exploit_threshold(2.0**600, 2.0**-600), "exploit_threshold", "threshold"),
        # |log_odds| = |gap / beta| = 1e308: a tie goes to log_odds
        (lambda: hedge_odds(1e308, -1e308, 1.0), "hedge_odds", "odds"),
        # gap * beta = 1 exactly and t = gap / beta = 2^1200 = inf: a tie goes to gap
        (lambda: hedge_odds(2.0**600, 4.0, 2.0**-600), "hedge_odds", "odds"),
    ],
)
def test_an_overflow_at_a_tie_of_the_old_drivers_names_the_function(call, fname, what):
    assert raises(ValueError, call).startswith(
        f"{fname}: expected a finite {what}, got inf (beyond float64) from "
    )


def test_tilt_is_the_closed_form_row_by_row():
    # pi* ∝ pi_ref e^q = (0.5, 0.5 * 3, 0) -> (0.25, 0.75, 0); V = beta log Z = log 2
    log_pi, v = tilt([[0.5, 0.5, 0.0]], [[0.0, math.log(3.0), 5.0]], 1.0)
    np.testing.assert_allclose(np.exp(log_pi), [[0.25, 0.75, 0.0]], rtol=1e-15)
    assert log_pi[0, 2] == -np.inf and v[0] == pytest.approx(math.log(2.0), rel=1e-15)  # -inf: off support
    assert raises(ValueError, lambda: tilt([[0.5, 0.5]], [[np.inf, 0.0]], 1.0)).startswith("q: ")
    assert raises(ValueError, lambda: tilt([[0.5, 0.5]], [[0.0, 0.0, 0.0]], 1.0)).startswith("q: expected shape")


def test_the_objectives_beyond_float64_name_their_results_and_inputs():
    msg = raises(ValueError, lambda: kl_objective([[1.0]], [[1.0]], [[MAX]], 1.0, weights=[1 + 5e-10]))
    assert msg == (
        "kl_objective: expected a finite J and E_pi R, got inf (beyond float64) from pi in [1, 1], "
        "pi_ref in [1, 1], reward in [1.79769e+308, 1.79769e+308], beta = 1"
    )
    mdp, half = TokenMDP(prompts=[0], V=2, max_len=1), [[0.5, 0.5]]
    msg = raises(
        ValueError, lambda: kl_objective_tree(mdp, half, half, lambda x, y: MAX, 1.0, weights=[1 + 5e-10])
    )
    assert msg == (
        "kl_objective_tree: expected a finite J, got inf (beyond float64) from pi in [0.5, 0.5], "
        "pi_ref in [0.5, 0.5], beta = 1"
    )


def test_a_tree_mdp_is_named_by_what_it_lacks_or_its_ids():
    half = [[0.5, 0.5]]
    msg = raises(TypeError, lambda: kl_objective_tree(object(), half, half, ZERO, 1.0))
    assert msg == (
        "mdp: expected a TokenMDP with ids='enumerate', got object without S, V, N, ids, prompts, prefix_of, "
        "state_id, step, is_terminal"
    )
    lazy = TokenMDP(["a"], V=2, eos=0, max_len=3, ids="lazy", capacity=16)
    msg = raises(TypeError, lambda: kl_objective_tree(lazy, half, half, ZERO, 1.0))
    assert msg == "mdp: expected a TokenMDP with ids='enumerate', got TokenMDP with ids='lazy'"


def test_a_bad_grade_is_named_with_its_repr_cut_at_160_characters_and_weights_take_one_per_prompt():
    mdp, half = TokenMDP(prompts=[0], V=2, max_len=1), [[0.5, 0.5]]
    msg = raises(ValueError, lambda: kl_objective_tree(mdp, half, half, lambda x, y: 10**400, 1.0))
    head = "grader: expected a finite number (a finite reward) "
    assert msg == head + ("for response (0,), got int " + str(10**400))[:160]  # an int beyond float64
    msg = raises(TypeError, lambda: kl_objective_tree(mdp, half, half, lambda x, y: "a" * 300, 1.0))
    assert (
        msg
        == "grader: expected a real number (a finite reward) " + ("for response (0,), got str '" + "a" * 300)[:160]
    )
    msg = raises(ValueError, lambda: kl_objective_tree(mdp, half, half, ZERO, 1.0, weights=[0.5, 0.5]))
    assert msg == "weights: expected shape (1,), got (2,)"  # N: the tree's prompts
