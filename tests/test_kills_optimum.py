"""Exact answers of optimum: the full error message of every argument check (the beta bounds,
the shapes and dimensions of pi, pi_ref and weights, the TokenMDP and grader checks, the grader's
reward) and of every reachable overflow (an input that overflows at each call site, with the
argument it names and whether it ends in inf or NaN); the silence of each floating-point guard
(no RuntimeWarning under the very condition it suppresses: an overflow, inf - inf, 0 * inf,
log 0); hand-computed values showing that the reward shift and the log-sum-exp shift of the tilt
are taken row by row, that pi* is a distribution at any beta (5e-324 to the largest float), and
that the tree optimum computes in float64 whatever the dtype of pi_ref.
"""

import math

import numpy as np
import pytest

from minirl_lm.core.mdp import TokenMDP
from minirl_lm.values.optimum import (exploit_threshold, hedge_odds, kl_objective, kl_objective_tree,
                               optimal_value, soft_values, tilted_optimum, tilted_optimum_tree)

from quiet import overflow as _overflow, raises as _raises, silent as _silent

MAX = np.finfo(np.float64).max          # 1.7976931348623157e308
P = np.full((2, 3), 1 / 3)
Z = np.zeros((2, 3))
ZERO = lambda x, y: 0.0                 # a grader


# ---------------------------------------------------------------- argument checks

@pytest.mark.parametrize("call", [
    lambda b: tilted_optimum(P, Z, b),
    lambda b: optimal_value(P, Z, b),
    lambda b: soft_values(TokenMDP(prompts=[0], V=2, max_len=1), [[0.5, 0.5]], ZERO, b),
    lambda b: tilted_optimum_tree(TokenMDP(prompts=[0], V=2, max_len=1), [[0.5, 0.5]], ZERO, b),
    lambda b: hedge_odds(1.0, 4.0, b),
], ids=["tilted_optimum", "optimal_value", "soft_values", "tilted_optimum_tree", "hedge_odds"])
def test_beta_must_be_positive(call):
    assert _raises(ValueError, lambda: call(0.0)) == "beta: expected a number > 0.0, got 0.0"
    assert _raises(ValueError, lambda: call(-1.0)) == "beta: expected a number > 0.0, got -1.0"


def test_beta_zero_is_allowed_in_the_tree_objective_and_negative_beta_is_not():
    mdp = TokenMDP(prompts=[0], V=2, max_len=1)
    # beta = 0: J = E_pi r = 0.25 * 1 + 0.75 * 3 = 2.5
    assert kl_objective_tree(mdp, [[0.25, 0.75]], [[0.5, 0.5]], lambda x, y: 1.0 + 2 * y[0],
                             0.0) == 2.5
    msg = _raises(ValueError, lambda: kl_objective_tree(mdp, [[0.5, 0.5]], [[0.5, 0.5]], ZERO, -1.0))
    assert msg == "beta: expected a number >= 0.0, got -1.0"


def test_tables_must_be_two_dimensional():
    msg = _raises(ValueError, lambda: tilted_optimum([0.5, 0.5], [0.0, 0.0], 1.0))
    assert msg == "pi_ref: expected 2 dimensions, got shape (2,)"
    msg = _raises(ValueError, lambda: kl_objective([0.5, 0.5], [0.5, 0.5], [0.0, 0.0], 1.0))
    assert msg == "pi: expected 2 dimensions, got shape (2,)"


def test_pi_ref_must_have_the_shape_of_pi():
    for pi_ref in (np.full((2, 2), 0.5), np.full((1, 3), 1 / 3)):     # (1, 3) would broadcast
        msg = _raises(ValueError, lambda: kl_objective(P, pi_ref, Z, 1.0))
        assert msg == f"pi_ref: expected shape (2, 3), got {pi_ref.shape}"


def test_weights_are_one_probability_per_prompt():
    msg = _raises(ValueError, lambda: kl_objective(P, P, Z, 1.0, weights=[1.0]))
    assert msg == "weights: expected shape (2,), got (1,)"
    msg = _raises(ValueError, lambda: kl_objective(P, P, Z, 1.0, weights=[[0.5, 0.5]]))
    assert msg == "weights: expected 1 dimension, got shape (1, 2)"


def test_tree_pi_must_have_the_shape_of_pi_ref():
    mdp = TokenMDP(prompts=[0], V=2, max_len=2)                     # S = 3 states, V = 2
    msg = _raises(ValueError, lambda: kl_objective_tree(mdp, np.full((2, 2), 0.5),
                                                        np.full((3, 2), 0.5), ZERO, 1.0))
    assert msg == "pi: expected shape (3, 2), got (2, 2)"
    msg = _raises(ValueError, lambda: kl_objective_tree(mdp, np.full((1, 2), 0.5),
                                                        np.full((3, 2), 0.5), ZERO, 1.0))
    assert msg == "pi: expected shape (3, 2), got (1, 2)"


def test_the_tree_functions_need_an_enumerated_token_mdp():
    msg = _raises(TypeError, lambda: soft_values("mdp", [[0.5, 0.5]], ZERO, 1.0))
    assert msg == "mdp: expected a TokenMDP with ids='enumerate', got str with ids=None"
    lazy = TokenMDP(prompts=[0], V=2, max_len=2, ids="lazy", capacity=3)
    msg = _raises(TypeError, lambda: soft_values(lazy, np.full((3, 2), 0.5), ZERO, 1.0))
    assert msg == "mdp: expected a TokenMDP with ids='enumerate', got TokenMDP with ids='lazy'"


def test_the_grader_is_a_two_argument_callable():
    mdp = TokenMDP(prompts=[0], V=2, max_len=1)
    msg = _raises(TypeError, lambda: soft_values(mdp, [[0.5, 0.5]], 3, 1.0))
    assert msg == "grader: expected a callable grader(prompt, response), got int 3"
    msg = _raises(TypeError, lambda: soft_values(mdp, [[0.5, 0.5]], lambda y: 0.0, 1.0))
    assert msg == ("grader: expected a callable grader(prompt, response) taking 2 positional "
                   "arguments, got one with signature (y)")


def test_a_bad_reward_names_the_grader_and_the_response():
    mdp = TokenMDP(prompts=[0], V=2, max_len=2)
    nan_at_01 = lambda x, y: np.nan if y == (0, 1) else 0.0
    msg = _raises(ValueError, lambda: soft_values(mdp, np.full((3, 2), 0.5), nan_at_01, 1.0))
    assert msg == "grader: expected a finite number (a finite reward) for response (0, 1), got nan"
    text_at_10 = lambda x, y: "high" if y == (1, 0) else 0.0
    msg = _raises(TypeError, lambda: kl_objective_tree(mdp, np.full((3, 2), 0.5),
                                                       np.full((3, 2), 0.5), text_at_10, 1.0))
    assert msg == ("grader: expected a real number (a finite reward) for response (1, 0), "
                   "got str 'high'")


# ---------------------------------------------------------------- the tilt, row by row

def test_the_best_reward_is_subtracted_row_by_row():
    """Row 0's rewards 0 and 1 must not be shifted by row 1's 1e17 (0 - 1e17 and 1 - 1e17 round
    to the same float, which would erase the gap)."""
    pi = _silent(lambda: tilted_optimum([[0.5, 0.5], [0.5, 0.5]], [[0.0, 1.0], [1e17, 1e17]], 1.0))
    e = math.e                            # row 0: (0.5, 0.5 e) / (0.5 + 0.5 e) = (1, e) / (1 + e)
    np.testing.assert_allclose(pi, [[1 / (1 + e), e / (1 + e)], [0.5, 0.5]], rtol=1e-15)


def test_the_log_sum_exp_shift_is_taken_row_by_row():
    """Row 1: pi_ref = (2^-1060, 1), rewards (0, -745.5), beta = 1. Shifted by row 0's largest
    exponent (0) instead of its own (log 2^-1060 = -734.7), its terms underflow to subnormals
    and to 0; row by row they are 1 and r = exp(-745.5 + 1060 log 2) = 2.11e-5."""
    pi = _silent(lambda: tilted_optimum([[1.0, 0.0], [2.0 ** -1060, 1.0]],
                                        [[0.0, 0.0], [0.0, -745.5]], 1.0))
    r = math.exp(-745.5 + 1060 * math.log(2))    # pi*(1) / pi*(0) = 1 e^-745.5 / (2^-1060 e^0)
    assert pi[0].tolist() == [1.0, 0.0]
    np.testing.assert_allclose(pi[1], [1 / (1 + r), r / (1 + r)], rtol=1e-12)


def test_an_overflowing_reward_gap_gives_the_best_response_silently():
    # q - m = (0, -1e308 - 1e308 = -inf): an overflow, pi* = (1, 0) exactly
    pi = _silent(lambda: tilted_optimum([[0.5, 0.5]], [[1e308, -1e308]], 1.0))
    assert pi.tolist() == [[1.0, 0.0]]


@pytest.mark.parametrize("beta", [5e-324, 1e-300, 1.0, 1e300, MAX])
def test_tilted_optimum_is_a_distribution_at_any_beta(beta):
    """log pi* <= 0, finite at the best reward: pi* is a distribution even at the extremes.
    Row 0: rewards (MAX, -MAX, 0) on pi_ref (1/4, 1/4, 1/2): up to beta = 1e300 the gap MAX / beta
    >= 1.8e8 leaves (1, 0, 0); at beta = MAX the weights are (1/4, 0, e^-1 / 2) (the gap 2 MAX
    overflows to inf), pi* = (1, 0, 2/e) / (1 + 2/e). Row 1: a tie at MAX between pi_ref 1e-300
    and 1/2, split by pi_ref: (2e-300, 0, 1) up to rounding (exp(log 1e-300): rtol 1e-13)."""
    pi_ref = [[0.25, 0.25, 0.5, 0.0], [1e-300, 0.5, 0.5, 0.0]]
    reward = [[MAX, -MAX, 0.0, MAX], [MAX, -MAX, MAX, MAX]]    # column 3: off the support
    pi = _silent(lambda: tilted_optimum(pi_ref, reward, beta))
    c = 2 / math.e
    row0 = [1 / (1 + c), 0.0, c / (1 + c), 0.0] if beta == MAX else [1.0, 0.0, 0.0, 0.0]
    np.testing.assert_allclose(pi, [row0, [1e-300 / (0.5 + 1e-300), 0.0, 1.0, 0.0]], rtol=1e-13)


def test_the_tree_optimum_computes_in_float64_for_a_float32_pi_ref():
    """A constant reward leaves pi_ref unchanged: pi* = float64(float32(0.3)), float64(float32(0.7))
    (they sum to 1 exactly); logs taken in float32 would be off by ~1e-8."""
    mdp = TokenMDP(prompts=[0], V=2, max_len=1)
    pi_ref = np.array([[0.3, 0.7]], dtype=np.float32)
    pi = _silent(lambda: tilted_optimum_tree(mdp, pi_ref, ZERO, 1.0))
    assert pi.dtype == np.float64
    np.testing.assert_allclose(pi, [[float(np.float32(0.3)), float(np.float32(0.7))]], rtol=1e-15)


# ---------------------------------------------------------------- overflow: exact messages, no warning

def test_kl_objective_reward_overflow():
    # pi = 1 + 4e-10 (a row summing to 1 within 1e-9) times the largest float: E_pi r = inf
    msg = _raises(ValueError, lambda: kl_objective([[1 + 4e-10]], [[1.0]], [[MAX]], 0.0))
    assert msg == _overflow("reward", "E_pi r", "inf")
    # rows E_pi r = +inf and -inf, averaged: 0.5 inf - 0.5 inf = NaN (inf - inf in the matmul)
    msg = _raises(ValueError, lambda: kl_objective([[1 + 4e-10], [1 + 4e-10]], [[1.0], [1.0]],
                                                   [[MAX], [-MAX]], 0.0))
    assert msg == _overflow("reward", "E_pi r", "NaN")


def test_kl_objective_beta_overflow():
    # log(pi / pi_ref) = (log 1/9, log 9) = (-2.197, 2.197); times 1e308: (-inf, +inf) (overflow);
    # r - beta log ratio = (+inf, -inf); their pi-weighted sum is inf - inf = NaN
    msg = _raises(ValueError, lambda: kl_objective([[0.1, 0.9]], [[0.9, 0.1]], [[0.0, 0.0]], 1e308))
    assert msg == _overflow("beta", "J(pi)", "NaN")
    # log ratio (log 0.5/0.999, log 500) = (-0.69, 6.2): beta log ratio = (-6.9e307, +inf): J = -inf
    msg = _raises(ValueError, lambda: kl_objective([[0.5, 0.5]], [[0.999, 0.001]], [[0.0, 0.0]],
                                                   1e308))
    assert msg == _overflow("beta", "J(pi)", "inf")


def test_optimal_value_overflow():
    # one prompt, V = beta log Z = MAX + 1 * log 1 = MAX; weight 1 + 5e-10 times MAX = inf,
    # driven by the reward MAX (beta is 1)
    assert _silent(lambda: optimal_value([[1.0]], [[MAX]], 1.0)) == MAX
    msg = _raises(ValueError, lambda: optimal_value([[1.0]], [[MAX]], 1.0, weights=[1 + 5e-10]))
    assert msg == _overflow("reward", "J(pi*) = beta log Z", "inf")
    # prompt 1: pi_ref (1e-300, 1), rewards (1e308, -1e308): q - m = (0, -inf),
    # log Z = log 1e-300 = -690.8, beta log Z = -6.9e310 = -inf (overflow): V = -inf;
    # weights (1, 0): 1 * 0 + 0 * -inf = NaN
    msg = _raises(ValueError, lambda: optimal_value([[1.0, 0.0], [1e-300, 1.0]],
                                                    [[0.0, 0.0], [1e308, -1e308]], 1e308,
                                                    weights=[1.0, 0.0]))
    assert msg == _overflow("beta", "J(pi*) = beta log Z", "NaN")


def test_soft_values_overflow():
    """States (), (0,), (1,). At (0,) and (1,): pi_ref (1e-300, 1), rewards (1e308, -1e308), so
    v = 1e308 + 1e308 log 1e-300 = -inf (overflow). At the root both q are -inf: q - max q is
    -inf - -inf = NaN. The returned q (checked first) holds -inf: the error says inf."""
    mdp = TokenMDP(prompts=[0], V=2, max_len=2)
    pi_ref = np.array([[0.5, 0.5], [1e-300, 1.0], [1e-300, 1.0]])
    grader = lambda x, y: 1e308 if y[-1] == 0 else -1e308
    msg = _raises(ValueError, lambda: soft_values(mdp, pi_ref, grader, 1e308))
    assert msg == _overflow("beta", "the soft values", "inf")
    msg = _raises(ValueError, lambda: tilted_optimum_tree(mdp, pi_ref, grader, 1e308))
    assert msg == _overflow("beta", "the soft values", "inf")


def test_kl_objective_tree_overflow_to_minus_inf_is_an_error_not_an_infinite_kl():
    # one state: log ratio (log 0.5/0.999, log 500) = (-0.69, 6.2), beta = 1e308:
    # v = 0.5 (6.9e307) + 0.5 (-inf) = -inf, with pi_ref > 0 wherever pi > 0 (a finite KL)
    mdp = TokenMDP(prompts=[0], V=2, max_len=1)
    msg = _raises(ValueError, lambda: kl_objective_tree(mdp, [[0.5, 0.5]], [[0.999, 0.001]],
                                                        ZERO, 1e308))
    assert msg == _overflow("beta", "J(pi)", "inf")


def test_kl_objective_tree_overflow_to_nan():
    # log ratio (log 1/9, log 9), beta = 1e308: pi (q - beta log ratio) = (+inf, -inf), sum NaN
    mdp = TokenMDP(prompts=[0], V=2, max_len=1)
    msg = _raises(ValueError, lambda: kl_objective_tree(mdp, [[0.1, 0.9]], [[0.9, 0.1]], ZERO, 1e308))
    assert msg == _overflow("beta", "J(pi)", "NaN")
    # the same with an action pi takes where pi_ref = 0 (an infinite log ratio): still an error
    msg = _raises(ValueError, lambda: kl_objective_tree(
        TokenMDP(prompts=[0], V=3, max_len=1), [[0.1, 0.8, 0.1]], [[0.9, 0.1, 0.0]], ZERO, 1e308))
    assert msg == _overflow("beta", "J(pi)", "NaN")


def test_kl_objective_tree_overflow_across_prompts():
    mdp = TokenMDP(prompts=[0, 1], V=2, max_len=1)             # two root states, one per prompt
    # root 0: log ratio (log 1/7, log 3) = (-1.95, 1.10): beta log ratio (-inf, 1.1e308): v = +inf
    # root 1: log ratio (log 7, log 1/3): beta log ratio (+inf, -1.1e308): v = -inf
    # mean: 0.5 inf + 0.5 (-inf) = NaN
    msg = _raises(ValueError, lambda: kl_objective_tree(mdp, [[0.1, 0.9], [0.7, 0.3]],
                                                        [[0.7, 0.3], [0.1, 0.9]], ZERO, 1e308))
    assert msg == _overflow("beta", "J(pi)", "NaN")
    # beta = 0, one prompt with value MAX, weight 1 + 5e-10: the weighted sum overflows
    one = TokenMDP(prompts=[0], V=1, max_len=1)
    assert _silent(lambda: kl_objective_tree(one, [[1.0]], [[1.0]], lambda x, y: MAX, 0.0)) == MAX
    msg = _raises(ValueError, lambda: kl_objective_tree(one, [[1.0]], [[1.0]], lambda x, y: MAX,
                                                        0.0, weights=[1 + 5e-10]))
    assert msg == _overflow("beta", "J(pi)", "inf")


def test_kl_objective_tree_is_silent_where_pi_or_pi_ref_is_zero():
    mdp = TokenMDP(prompts=[0], V=3, max_len=1)
    r = lambda x, y: float(y[0])                                   # rewards 0, 1, 2
    # pi = pi_ref = (0.5, 0.5, 0): no KL, J = 0.5 * 0 + 0.5 * 1 = 0.5; the (0, 0) entry is 0 log 0
    table = [[0.5, 0.5, 0.0]]
    assert _silent(lambda: kl_objective_tree(mdp, table, table, r, 1.0)) == 0.5
    # pi takes action 2 where pi_ref = 0: the KL is +inf, J = -inf, without a warning
    assert _silent(lambda: kl_objective_tree(mdp, [[0.5, 0.0, 0.5]], table, r, 1.0)) == -np.inf


def test_exploit_threshold_overflow():
    assert _silent(lambda: exploit_threshold(1.0, 4.0)) == 0.25     # 1 / 4
    msg = _raises(ValueError, lambda: exploit_threshold(1e308, 1e-10))  # 1e318: inf
    assert msg == _overflow("gap", "g / l", "inf")


def test_hedge_odds_overflow():
    assert _silent(lambda: hedge_odds(4.0, 4.0, 1.0)) == 1.0        # exp(-4 + 4 / 1) = exp(0)
    msg = _raises(ValueError, lambda: hedge_odds(1.0, 4.0, 1e-10))  # exp(-4 + 1e10): overflow
    assert msg == _overflow("beta", "the odds", "inf")
    msg = _raises(ValueError, lambda: hedge_odds(1e308, 0.0, 1e-10))  # exp(1e318 = inf) = inf
    assert msg == _overflow("gap", "the odds", "inf")                 # gap * beta = 1e298 > 1
