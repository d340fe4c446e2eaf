"""The input checks of minirl_lm/core/checks.py: each function accepts what it documents and
rejects the rest with a TypeError or ValueError whose message starts with the argument's name."""

import numpy as np
import pytest

from minirl_lm.core import checks as C
from quiet import raises, silent


# ---- core checks
def test_float_array_converts_and_rejects():
    assert silent(lambda: C.float_array([1, 2], "x")).dtype == np.float64
    assert C.float_array([[-np.inf]], "x", allow_neginf=True)[0, 0] == -np.inf
    assert raises(TypeError, lambda: C.float_array("1", "x")).startswith("x: expected a real")
    assert raises(ValueError, lambda: C.float_array([np.nan], "x")) == \
        "x: expected no NaN, got 1 NaN entries"
    assert raises(ValueError, lambda: C.float_array([np.inf], "x", allow_neginf=True)) == \
        "x: expected finite values (no +inf), got 1 such entries"
    assert raises(ValueError, lambda: C.float_array([1.0], "x", shape=(None, 2))) == \
        "x: expected shape (any, 2), got (1,)"
    assert raises(ValueError, lambda: C.float_array([1.0], "x", ndim=2)).startswith(
        "x: expected 2 dimensions")


def test_int_array_bounds():
    assert C.int_array([0, 2], "ids", low=0, high=3).dtype == np.int64
    assert raises(TypeError, lambda: C.int_array([0.5], "ids")).startswith("ids: expected an integer")
    assert raises(ValueError, lambda: C.int_array([3], "ids", high=3)) == "ids: expected ids < 3, got max 3"
    assert raises(ValueError, lambda: C.int_array([-1], "ids", low=0)) == "ids: expected ids >= 0, got min -1"


def test_mask_array_binary_right_padded_non_empty():
    assert C.mask_array([[1, 1, 0]], "mask").tolist() == [[1.0, 1.0, 0.0]]
    assert "expected only 0 and 1" in raises(ValueError, lambda: C.mask_array([[0.5]], "mask"))
    assert raises(ValueError, lambda: C.mask_array([[0, 1]], "mask")) == \
        "mask: expected right padding (1s then 0s in each row), row 0 is [0, 1]"
    assert raises(ValueError, lambda: C.mask_array(np.zeros((0, 2)), "mask")).startswith(
        "mask: expected a non-empty array")


def test_same_shape_and_non_arrays():
    C.same_shape("a", np.zeros(2), "b", np.ones(2))
    assert raises(ValueError, lambda: C.same_shape("a", np.zeros(2), "b", np.zeros(3))) == \
        "b: expected the shape of a (2,), got (3,)"
    for bad, name in (((None, np.zeros(2)), "a"), ((np.zeros(2), None), "b"),
                      ((np.zeros(2), [1.0, 2.0]), "b")):
        msg = raises(TypeError, lambda bad=bad: C.same_shape("a", bad[0], "b", bad[1]))
        assert msg.startswith(f"{name}: expected an array, got"), msg


def test_rng_check():
    rng = np.random.default_rng(0)
    assert C.rng_check(rng, "rng") is rng
    assert raises(TypeError, lambda: C.rng_check(np.random.RandomState(0), "rng")).startswith(
        "rng: expected a numpy.random.Generator")


def test_int_scalar_and_float_scalar():
    assert C.int_scalar(np.int64(3), "K", low=1) == 3
    assert raises(TypeError, lambda: C.int_scalar(True, "K")) == "K: expected an integer, got bool True"
    assert raises(ValueError, lambda: C.int_scalar(0, "K", low=1)) == "K: expected an integer >= 1, got 0"
    assert raises(ValueError, lambda: C.int_scalar(5, "K", high=4)) == "K: expected an integer <= 4, got 5"
    assert C.float_scalar(1, "beta") == 1.0 and type(C.float_scalar(np.float32(2), "b")) is float
    assert raises(ValueError, lambda: C.float_scalar(0.0, "beta", low=0.0, low_open=True)) == \
        "beta: expected a number > 0.0, got 0.0"
    assert raises(ValueError, lambda: C.float_scalar(np.inf, "beta")) == \
        "beta: expected a finite number, got inf"


def test_an_integer_beyond_float64_is_a_value_error_not_an_overflow_error():
    for call in (lambda: C.float_scalar(10**400, "beta"),
                 lambda: C.real_result(10**400, "grader")):
        msg = raises(ValueError, call)
        assert msg.split(":")[0] in ("beta", "grader") and "beyond float64" in msg, msg


def test_choice():
    assert C.choice("a", "agg", {"a", "b"}) == "a"
    assert C.choice(1, "n", {1, 2}) == 1
    assert raises(ValueError, lambda: C.choice(True, "n", {1})) == "n: expected one of [1], got True"
    assert raises(TypeError, lambda: C.choice(["a"], "agg", {"a"})).startswith(
        "agg: expected one of ['a'], got unhashable")


def test_nonempty_and_prob_table():
    assert C.nonempty(np.ones(1), "x").size == 1
    assert raises(ValueError, lambda: C.nonempty(np.ones((2, 0)), "x")).startswith("x: expected a non-empty")
    assert C.prob_table([[0.5, 0.5]], "p").shape == (1, 2)
    assert raises(ValueError, lambda: C.prob_table([[0.5, 0.6]], "p")) == \
        "p: expected rows summing to 1 (within 1e-9), got a row summing to 1.1"
    assert raises(ValueError, lambda: C.prob_table([[-0.5, 1.5]], "p")) == \
        "p: expected probabilities >= 0, got min -0.5"


def test_finite_result_passes_finite_values_and_names_the_driver():
    v = (1.0, [np.ones(2), np.int64(3)], np.array([True]))
    assert C.finite_result(v, "beta", "J") is v
    assert raises(ValueError, lambda: C.finite_result(np.array([1.0, np.inf]), "beta", "J")) == \
        "beta: expected a value for which J is finite in float64, got one that makes it inf (overflow)"
    assert raises(ValueError, lambda: C.finite_result((1.0, np.nan), "beta", "J")).endswith(
        "makes it NaN (overflow)")


@pytest.mark.parametrize("value", ["abc", b"1", None, 1j, np.array(["x"]), [1.0, "x"], object()])
def test_finite_result_on_something_not_numeric_is_a_type_error(value):
    msg = raises(TypeError, lambda: C.finite_result(value, "value", "the loss"))
    assert msg.startswith("value: expected"), msg
    assert raises(TypeError, lambda: C.finite_result(1.0, 3, "x")).startswith("finite_result:")


def test_real_result():
    assert C.real_result(np.float32(0.5), "grader") == 0.5
    for bad, exc in ((None, TypeError), ("1", TypeError), (True, TypeError),
                     (np.array([1.0]), TypeError), (np.nan, ValueError), (-np.inf, ValueError)):
        assert raises(exc, lambda bad=bad: C.real_result(bad, "grader", " (a reward)")).startswith(
            "grader: expected a")


def test_callable_check():
    f = lambda a, b: 0                                               # noqa: E731
    assert C.callable_check(f, "grader", 2) is f and C.callable_check(max, "f", 2) is max
    assert raises(TypeError, lambda: C.callable_check(f, "grader", 3, "g(a, b, c)")).startswith(
        "grader: expected a callable g(a, b, c) taking 3 positional arguments")
    assert raises(TypeError, lambda: C.callable_check(float, "grader", 1)).startswith(
        "grader: expected a callable")


def test_cells_bounds_an_allocation_before_it_happens():
    assert C.cells(C.MAX_CELLS, "T", "x") == 2**31
    assert raises(ValueError, lambda: C.cells(2**63, "T", "a (B, T) output")) == \
        f"T: expected a (B, T) output of at most 2**31 entries, got {2**63}"


def test_table_policy():
    class P:
        theta = np.zeros((2, 3))

        def sample(self, s, rng):
            return s

    assert isinstance(C.table_policy(P(), 2, 3, finite_rows=True), P)
    assert raises(ValueError, lambda: C.table_policy(P(), 3, 3)).startswith(
        "policy: expected a policy with a table of shape (S, V) = (3, 3), got P with shape (2, 3)")
    bad = P()
    bad.theta = np.full((2, 3), -np.inf)
    assert raises(ValueError, lambda: C.table_policy(bad, 2, 3, finite_rows=True)).startswith(
        "policy: expected a table theta with a finite entry in every row")


# ---- core checks: the bundles of core, multiturn and scale (one call per public function)
def test_token_mdp_bundles_return_their_arguments_checked():
    from minirl_lm.core.mdp import Rollout, TokenMDP
    from minirl_lm.core.policy import TabularPolicy
    assert C.token_mdp_args(("a",), 3, 0, 2, "lazy", 4, 10) == (["a"], 3, 0, 2, "lazy", 4, 10)
    assert raises(TypeError, lambda: C.token_mdp_args(("a",), 3, 0, 2, "lazy", None, 10)) == \
        "capacity: expected an integer, got NoneType None"
    mdp = TokenMDP(["a", "b"], V=3, eos=0, max_len=3)
    assert C.token_prefix(mdp, [2, 0]) == (C._NOT_GIVEN, (2, 0), C._NOT_GIVEN)
    assert C.token_prefix(mdp, (2,), False, n=1, y=0) == (1, (2,), 0)
    assert raises(ValueError, lambda: C.token_prefix(mdp, (2, 0), False)).startswith(
        "prefix: expected a non-terminal prefix")
    pol = TabularPolicy(np.zeros((mdp.S, 3)))
    K, idx = C.token_rollout_args(mdp, pol, 2, np.random.default_rng(0), None)
    assert K == 2 and idx.tolist() == [0, 1]
    ro = mdp.rollout(pol, 1, np.random.default_rng(0))
    assert C.token_score_args(mdp, lambda p, y: 0.0, ro, Rollout).tolist() == [0, 1]
    assert raises(TypeError, lambda: C.token_score_args(mdp, lambda p, y: 0.0, None, Rollout)) \
        == "rollout: expected a Rollout, got NoneType"


def test_multiturn_bundles_return_their_arguments_checked():
    from minirl_lm.multiturn.calculator import calculator
    from minirl_lm.multiturn.env import MultiTurnMDP
    from minirl_lm.core.policy import TabularPolicy
    out = C.multiturn_args(5, 0, [1], [[2, 3], (2, 4)], [[1, 0], [0, 1]], [0.5, 0.5],
                           lambda w, t, d: 0.0, 2, 2)
    assert out[:4] == (5, 0, (1,), [(2, 3), (2, 4)]) and out[6:] == (2, 2)
    env = calculator(0.8, max_turns=2)
    ep = env.all_episodes()
    assert C.episodes(env, ep) is ep and C.action_view_args(env, ep) is ep
    pol = TabularPolicy(np.zeros((env.S, env.V)))
    assert C.multiturn_rollout_args(env, pol, 3, np.random.default_rng(0)) == 3
    x, pos, mask, T = C.scatter_args([[1.0]], [[0]], [[1.0]], 4)
    assert (x.dtype, pos.dtype, mask.dtype, T) == (np.float64, np.int64, np.float64, 4)
    p = np.full((env.S, env.V), 0.2)
    assert C.mt_table(env, p, "probs") is not None and C.mt_soft_args(env, p, 1)[1] == 1.0
    assert C.mt_kl_args(env, p, p, 0)[2] == 0.0
    assert raises(ValueError, lambda: C.mt_soft_args(env, p, 0)) == \
        "beta: expected a number > 0.0, got 0.0"
    one = np.ones((1, 2))
    assert C.action_returns_args(one, one, one, 1, True)[2:] == (1.0, True)
    assert C.action_gae_args(one, one, one, one, 1, 0, False)[3:] == (1.0, 0.0, False)
    assert C.turn_values_args([0.0], [[0, 0]], one, one)[1].dtype == np.int64
    assert C.calculator_args(1, 0) == (1.0, 0.0)
    assert C.calculator_reference_args(env, MultiTurnMDP, -1, 2) == (-1.0, 2.0)


def test_chunked_bundles_return_their_arguments_checked():
    h, W = np.ones((3, 2)), np.ones((4, 2))
    hh, WW, tokens, real, chunk = C.chunked_args(h, W, [0, 1, 3], [1, 0, 1], 8)
    assert hh is h and real.tolist() == [0, 2] and tokens.dtype == np.int64 and chunk == 8
    assert raises(TypeError, lambda: C.chunked_args(h, W, [0, 1, 3], None, 8, loss_fn=None)) \
        .startswith("loss_fn: expected a callable")
    rows = np.arange(2)
    loss, g = C.loss_fn_result((np.float32(1.5), [1, 2]), rows)
    assert loss == 1.5 and g.dtype == np.float64 and g.flags.c_contiguous
    assert raises(TypeError, lambda: C.loss_fn_result([1.0, rows], rows)) == \
        "loss_fn: expected it to return (loss, dloss_dlogp), got list"
