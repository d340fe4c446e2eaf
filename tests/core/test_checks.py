"""The input checks at the public boundary (minirl_lm/core/checks.py): exact error messages (one
sample per template), the dtype and no-copy behaviour of the array checks, the NaN/inf distinction
of finite_result, and the bundles of the pg part."""

import fractions
import warnings

import numpy as np
import pytest

from minirl_lm.core import checks

from quiet import raises


def _message(exc_type, f, *args, **kwargs):
    """The message of the `exc_type` that `f(*args, **kwargs)` raises, silently."""
    return raises(exc_type, lambda: f(*args, **kwargs))

# ---- folded from tests/test_kills_advantages_checks.py ---------------------------------------

def test_float_array_rejects_strings_and_none_by_describing_them():
    assert _message(TypeError, checks.float_array, "abc", "x") == \
        "x: expected a real-valued array, got str 'abc'"
    assert _message(TypeError, checks.float_array, None, "x") == \
        "x: expected a real-valued array, got NoneType None"
    assert _message(TypeError, checks.float_array, np.array([1j]), "x") == \
        "x: expected a real-valued array, got array of shape (1,) and dtype complex128"


def test_float_array_keeps_a_float64_array_without_copy():
    a = np.array([1.0, 2.0])
    assert checks.float_array(a, "a") is a
    b = checks.float_array([1, 2], "b")
    assert b.dtype == np.float64 and np.array_equal(b, [1.0, 2.0])
    assert checks.float_array(np.array([True, False]), "c").dtype == np.float64


def test_float_array_finite_flag_and_inf_messages():
    out = checks.float_array([np.nan, np.inf], "x", finite=False)
    assert np.isnan(out[0]) and out[1] == np.inf
    assert _message(ValueError, checks.float_array, [1.0, np.inf, -np.inf], "x") == \
        "x: expected finite values (no +-inf), got 2 such entries"
    assert _message(ValueError, checks.float_array, [1.0, np.inf, -np.inf], "x",
                    allow_neginf=True) == "x: expected finite values (no +inf), got 1 such entries"
    assert _message(ValueError, checks.float_array, [np.nan, 1.0, np.nan], "x") == \
        "x: expected no NaN, got 2 NaN entries"


def test_ragged_input_is_a_type_error_naming_the_argument():
    ragged = [[1, 2], [3]]
    with pytest.raises(ValueError) as numpy_error:
        np.asarray(ragged)
    want = f"ids: expected an array, got list [[1, 2], [3]] ({numpy_error.value})"
    assert _message(TypeError, checks.int_array, ragged, "ids") == want
    assert _message(TypeError, checks.float_array, ragged, "ids") == want


def test_int_array_messages_and_no_copy():
    assert _message(TypeError, checks.int_array, np.array([1.0, 2.0]), "ids") == \
        "ids: expected an integer array of ids, got array of shape (2,) and dtype float64"
    a = np.array([0, 3], dtype=np.int64)
    assert checks.int_array(a, "ids") is a
    u = checks.int_array(np.array([1, 2], dtype=np.uint8), "ids")
    assert u.dtype == np.int64 and np.array_equal(u, [1, 2])


def test_check_shape_message_names_any_for_free_axes():
    assert _message(ValueError, checks.float_array, [1.0, 2.0, 3.0], "x", shape=(None, 2)) == \
        "x: expected shape (any, 2), got (3,)"
    assert _message(ValueError, checks.float_array, [[1.0, 2.0]], "x", shape=(3, None)) == \
        "x: expected shape (3, any), got (1, 2)"


def test_mask_array_accepts_right_padded_binary_masks():
    m = checks.mask_array([[1, 1, 0], [1, 0, 0], [0, 0, 0]], "m")
    assert m.dtype == np.float64
    assert np.array_equal(m, np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    assert np.array_equal(checks.mask_array([[1.0, 1.0]], "m"), np.array([[1.0, 1.0]]))
    assert np.array_equal(checks.mask_array([[0.0], [1.0]], "m"), np.array([[0.0], [1.0]]))
    assert np.array_equal(checks.mask_array([[1.0, 0.0]], "m", shape=(1, None)),
                          np.array([[1.0, 0.0]]))


def test_mask_array_messages():
    assert _message(ValueError, checks.mask_array, [1.0, 0.0, 0.0], "m") == \
        "m: expected 2 dimensions, got shape (3,)"
    assert _message(ValueError, checks.mask_array, np.zeros((1, 1, 1)), "m") == \
        "m: expected 2 dimensions, got shape (1, 1, 1)"
    assert _message(ValueError, checks.mask_array, np.ones((3, 2)), "m", shape=(2, None)) == \
        "m: expected shape (2, any), got (3, 2)"
    assert _message(ValueError, checks.mask_array, np.zeros((0, 3)), "m") == \
        "m: expected a non-empty array (every axis of length >= 1), got shape (0, 3)"
    # the first non-binary entry is reported
    assert _message(ValueError, checks.mask_array, [[1.0, 0.5, 2.0]], "m") == \
        "m: expected only 0 and 1, got value 0.5"
    assert _message(ValueError, checks.mask_array, [[1.0, 2.0]], "m") == \
        "m: expected only 0 and 1, got value 2.0"
    assert _message(ValueError, checks.mask_array, [[np.inf, 1.0]], "m") == \
        "m: expected finite values (no +-inf), got 1 such entries"
    # row 0 has a flat step (diff 0) but no rise; row 1 is the first with a 1 after a 0
    assert _message(ValueError, checks.mask_array, [[1, 0, 0], [0, 1, 1], [0, 1, 0]], "m") == \
        "m: expected right padding (1s then 0s in each row), row 1 is [0, 1, 1]"
    assert _message(ValueError, checks.mask_array, [[0.0, 1.0]], "m") == \
        "m: expected right padding (1s then 0s in each row), row 0 is [0, 1]"


def test_rng_check():
    rng = np.random.default_rng(0)
    assert checks.rng_check(rng, "rng") is rng
    assert _message(TypeError, checks.rng_check, 42, "rng") == \
        "rng: expected a numpy.random.Generator (np.random.default_rng(seed)), got int 42"


def test_describe_cuts_at_120_characters():
    s = "x" * 200
    # "str '" is 5 characters, then 115 of the x's
    assert _message(TypeError, checks.float_scalar, s, "eps") == \
        "eps: expected a real number, got str '" + "x" * 115


def test_scalar_messages():
    assert _message(TypeError, checks.int_scalar, 1.5, "k") == \
        "k: expected an integer, got float 1.5"
    assert _message(ValueError, checks.float_scalar, 0.0, "x", low=0.0, low_open=True) == \
        "x: expected a number > 0.0, got 0.0"
    assert _message(ValueError, checks.float_scalar, -1.0, "x", low=0.0) == \
        "x: expected a number >= 0.0, got -1.0"


def test_choice_lists_options_sorted_as_strings():
    # sorted by str: "10" < "2"
    assert _message(TypeError, checks.choice, [1], "k", (2, 10)) == \
        "k: expected one of [10, 2], got unhashable list [1]"
    assert _message(ValueError, checks.choice, 3, "k", (2, 10)) == \
        "k: expected one of [10, 2], got 3"
    assert checks.choice(10, "k", (2, 10)) == 10


def test_prob_table_messages():
    assert _message(ValueError, checks.prob_table, [0.5, 0.5], "p", ndim=2) == \
        "p: expected 2 dimensions, got shape (2,)"
    # within 1e-9, not within 1e-8
    assert _message(ValueError, checks.prob_table, [[0.5, 0.5 + 5e-9]], "p") == \
        f"p: expected rows summing to 1 (within 1e-9), got a row summing to {0.5 + (0.5 + 5e-9)!r}"
    # the worst row is reported: sums [1.2, 0.5] (worst 0.5, the smallest) and [0.9, 1.5]
    # (worst 1.5, the largest); 0.6 + 0.6 = 1.2 and 0.1 + 0.4 = 0.5 in float64
    assert _message(ValueError, checks.prob_table, [[0.6, 0.6], [0.1, 0.4]], "p") == \
        "p: expected rows summing to 1 (within 1e-9), got a row summing to 0.5"
    assert _message(ValueError, checks.prob_table, [[0.5, 0.4], [0.75, 0.75]], "p") == \
        "p: expected rows summing to 1 (within 1e-9), got a row summing to 1.5"


def test_finite_result():
    v = (1.0, [np.array([2.0, 3.0]), 4])
    assert checks.finite_result(v, "x", "f(x)") is v
    q = fractions.Fraction(1, 3)
    assert checks.finite_result(q, "x", "f(x)") is q
    assert _message(ValueError, checks.finite_result, (1.0, np.array([np.inf, 0.0])), "x",
                    "exp(x)") == \
        "x: expected a value for which exp(x) is finite in float64, got one that makes it inf " \
        "(overflow)"
    assert _message(ValueError, checks.finite_result, [np.array([np.inf, np.nan])], "y",
                    "y - y") == \
        "y: expected a value for which y - y is finite in float64, got one that makes it NaN " \
        "(overflow)"
    assert _message(TypeError, checks.finite_result, 1.0, 1, "f") == \
        "finite_result: expected name and what as strings, got 1, 'f'"
    assert _message(TypeError, checks.finite_result, 1.0, "x", None) == \
        "finite_result: expected name and what as strings, got 'x', None"


def test_real_result_and_callable_check_messages():
    assert _message(TypeError, checks.real_result, "a", "grader") == \
        "grader: expected a real number, got str 'a'"
    assert _message(ValueError, checks.real_result, np.nan, "grader") == \
        "grader: expected a finite number, got nan"
    assert _message(TypeError, checks.callable_check, 3, "f", 1) == \
        "f: expected a callable f(...), got int 3"


def test_checks_are_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checks.mask_array([[1.0, 0.0]], "m")
        checks.finite_result(np.array([1.0]), "x", "f")


# ---- folded from tests/test_mutation_kills.py ------------------------------------------------

def test_a_one_after_a_zero_anywhere_in_a_row_is_left_padding():
    from minirl_lm.core.checks import mask_array
    for m, row in (([[1.0, 0.0, 1.0]], 0), ([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]], 1),
                   ([[0.0, 1.0]], 0)):
        with pytest.raises(ValueError) as e:
            mask_array(m, "mask")
        assert str(e.value) == ("mask: expected right padding (1s then 0s in each row), "
                                f"row {row} is {[int(v) for v in m[row]]}")
    assert mask_array([[1.0], [0.0]], "mask").shape == (2, 1)          # T = 1: nothing can rise


# ---- bundles: pg ------------------------------------------------------------------------------

def test_token_batch_checks_in_order_and_returns_the_trusted_arrays():
    m = [[1.0, 0.0]]
    logp, old, mask, adv, max_len = checks.token_batch({"logp": [[0, 1]], "logp_old": [[2, 3]]},
                                                       m, [1], "constant", 2, ("constant",))
    assert logp.dtype == old.dtype == mask.dtype == adv.dtype == np.float64
    assert adv.shape == (1,) and max_len == 2
    assert checks.token_batch({"logp": [[0.0]]}, [[1.0]])[-2:] == (None, None)   # nothing else asked
    # the first array is the shape of reference; an adv of neither shape names adv
    assert _message(ValueError, checks.token_batch, {"logp": [[0.0]], "w": [[0.0, 0.0]]}, [[1.0]]) \
        == "w: expected the shape of logp (1, 1), got (1, 2)"
    assert _message(ValueError, checks.token_batch, {"logp": [[0.0]]}, [[1.0]], [1.0, 2.0]) == \
        "adv: expected shape (1,) or (1, 1), got (2,)"
    assert _message(ValueError, checks.token_batch, {"logp": [[0.0]]}, [[1.0]], [[1.0]],
                    per_token=False) == "adv: expected shape (1,), got (1, 1)"
    assert _message(ValueError, checks.token_batch, {"logp": [[0.0, 0.0]]}, [[1.0, 1.0]], [1.0],
                    "constant", 1, ("constant",)) == \
        "max_len: expected >= the longest response (2 tokens), got 1"
    # None is an input like any other (rejected), not "not given"
    assert _message(TypeError, checks.token_batch, {"logp": [[0.0]]}, [[1.0]], None) == \
        "adv: expected a real-valued array, got NoneType None"


def test_finite_among_names_the_input_of_largest_magnitude_only_on_failure():
    a, b = np.array([1e308]), np.array([-1.0])
    assert checks.finite_among((1.0, a), "x", {"a": a, "b": b}) == (1.0, a)
    assert _message(ValueError, checks.finite_among, np.array([np.inf]), "x", {"b": b, "a": a}) \
        == "a: expected a value for which x is finite in float64, got one that makes it inf (overflow)"
    assert _message(ValueError, checks.finite_among, np.array([np.nan]), "x",
                    {"b": b, "a": -b}).startswith("b: ")        # a tie: the first name


def test_group_rewards_bound_is_inclusive():
    assert checks.group_rewards([[1e150, -1e150]], 1e150).shape == (1, 2)
    assert _message(ValueError, checks.group_rewards, [[2e150]], 1e150) == (
        "rewards: expected |r| <= 1e+150 (the standardized baseline squares the spread, which "
        "overflows float64 beyond ~1e154), got max |r| = 2e+150")
