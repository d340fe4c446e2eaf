"""The input checks of minirl_lm/core/checks.py (the primitives every boundary is built on) and
minirl_lm/core/validate.py: each accepts what it documents and rejects the rest with a TypeError
or ValueError whose message starts with the argument's name (one exact sample per template)."""

import fractions
import warnings

import numpy as np
import pytest

from minirl_lm.core import checks as C
from quiet import raises, silent


def _message(exc_type, f, *args, **kwargs):
    """The message of the `exc_type` that `f(*args, **kwargs)` raises, silently."""
    return raises(exc_type, lambda: f(*args, **kwargs))


# ---- core checks
def test_float_array_converts_and_rejects():
    assert silent(lambda: C.float_array([1, 2], "x")).dtype == np.float64
    assert C.float_array([[-np.inf]], "x", allow_neginf=True)[0, 0] == -np.inf
    assert raises(TypeError, lambda: C.float_array("1", "x")).startswith("x: expected a real")
    assert raises(ValueError, lambda: C.float_array([np.nan], "x")) == "x: expected no NaN, got 1 NaN entries"
    assert (
        raises(ValueError, lambda: C.float_array([np.inf], "x", allow_neginf=True))
        == "x: expected finite values (no +inf), got 1 such entries"
    )
    assert (
        raises(ValueError, lambda: C.float_array([1.0], "x", shape=(None, 2)))
        == "x: expected shape (any, 2), got (1,)"
    )
    assert raises(ValueError, lambda: C.float_array([1.0], "x", ndim=2)).startswith("x: expected 2 dimensions")


def test_int_array_bounds():
    assert C.int_array([0, 2], "ids", low=0, high=3).dtype == np.int64
    assert raises(TypeError, lambda: C.int_array([0.5], "ids")).startswith("ids: expected an integer")
    assert raises(ValueError, lambda: C.int_array([3], "ids", high=3)) == "ids: expected ids < 3, got max 3"
    assert raises(ValueError, lambda: C.int_array([-1], "ids", low=0)) == "ids: expected ids >= 0, got min -1"


PREFIX = ("GAE", "gae_actions")  # what needs right padding, where a mask with holes goes
TAIL = "; a mask with holes (tool outputs) is accepted by the token-level objectives; here use gae_actions"


def test_mask_array_binary_non_empty_and_right_padded_for_a_prefix():
    assert C.mask_array([[1, 1, 0]], "mask").tolist() == [[1.0, 1.0, 0.0]]
    assert C.mask_array([[0, 1]], "mask").tolist() == [[0.0, 1.0]]  # a hole: any 0/1 pattern
    assert "expected only 0 and 1" in raises(ValueError, lambda: C.mask_array([[0.5]], "mask"))
    assert (
        raises(ValueError, lambda: C.mask_array([[0, 1]], "mask", prefix=PREFIX))
        == "mask: expected right padding (1s then 0s in each row) for GAE, row 0 is [0, 1]" + TAIL
    )
    assert raises(ValueError, lambda: C.mask_array(np.zeros((0, 2)), "mask")).startswith(
        "mask: expected a non-empty array"
    )


def test_same_shape_and_non_arrays():
    C.same_shape("a", np.zeros(2), "b", np.ones(2))
    assert (
        raises(ValueError, lambda: C.same_shape("a", np.zeros(2), "b", np.zeros(3)))
        == "b: expected the shape of a (2,), got (3,)"
    )
    for bad, name in (((None, np.zeros(2)), "a"), ((np.zeros(2), None), "b"), ((np.zeros(2), [1.0, 2.0]), "b")):
        msg = raises(TypeError, lambda bad=bad: C.same_shape("a", bad[0], "b", bad[1]))
        assert msg.startswith(f"{name}: expected an array, got"), msg


def test_rng_check():
    rng = np.random.default_rng(0)
    assert C.rng_check(rng, "rng") is rng
    assert raises(TypeError, lambda: C.rng_check(np.random.RandomState(0), "rng")).startswith(
        "rng: expected a numpy.random.Generator"
    )


def test_int_scalar_and_float_scalar():
    assert C.int_scalar(np.int64(3), "K", low=1) == 3
    assert raises(TypeError, lambda: C.int_scalar(True, "K")) == "K: expected an integer, got bool True"
    assert raises(ValueError, lambda: C.int_scalar(0, "K", low=1)) == "K: expected an integer >= 1, got 0"
    assert raises(ValueError, lambda: C.int_scalar(5, "K", high=4)) == "K: expected an integer <= 4, got 5"
    assert C.float_scalar(1, "beta") == 1.0 and type(C.float_scalar(np.float32(2), "b")) is float
    assert (
        raises(ValueError, lambda: C.float_scalar(0.0, "beta", low=0.0, low_open=True))
        == "beta: expected a number > 0.0, got 0.0"
    )
    assert raises(ValueError, lambda: C.float_scalar(np.inf, "beta")) == "beta: expected a finite number, got inf"


def test_an_integer_beyond_float64_is_a_value_error_not_an_overflow_error():
    for call in (lambda: C.float_scalar(10**400, "beta"), lambda: C.real_result(10**400, "grader")):
        msg = raises(ValueError, call)
        assert msg.split(":")[0] in ("beta", "grader") and "beyond float64" in msg, msg


def test_choice():
    assert C.choice("a", "agg", {"a", "b"}) == "a"
    assert C.choice(1, "n", {1, 2}) == 1
    assert raises(ValueError, lambda: C.choice(True, "n", {1})) == "n: expected one of [1], got True"
    assert raises(TypeError, lambda: C.choice(["a"], "agg", {"a"})).startswith(
        "agg: expected one of ['a'], got unhashable"
    )


def test_nonempty_and_prob_table():
    assert C.nonempty(np.ones(1), "x").size == 1
    assert raises(ValueError, lambda: C.nonempty(np.ones((2, 0)), "x")).startswith("x: expected a non-empty")
    assert C.prob_table([[0.5, 0.5]], "p").shape == (1, 2)
    assert (
        raises(ValueError, lambda: C.prob_table([[0.5, 0.6]], "p"))
        == "p: expected rows summing to 1 (within 1e-9), got a row summing to 1.1"
    )
    assert (
        raises(ValueError, lambda: C.prob_table([[-0.5, 1.5]], "p"))
        == "p: expected probabilities >= 0, got min -0.5"
    )


def test_finite_result_passes_finite_values_and_names_the_driver():
    v = (1.0, [np.ones(2), np.int64(3)], np.array([True]))
    assert C.finite_result(v, "beta", "J") is v
    assert (
        raises(ValueError, lambda: C.finite_result(np.array([1.0, np.inf]), "beta", "J"))
        == "beta: expected a value for which J is finite in float64, got one that makes it inf (overflow)"
    )
    assert raises(ValueError, lambda: C.finite_result((1.0, np.nan), "beta", "J")).endswith(
        "makes it NaN (overflow)"
    )


@pytest.mark.parametrize("value", ["abc", b"1", None, 1j, np.array(["x"]), [1.0, "x"], object()])
def test_finite_result_on_something_not_numeric_is_a_type_error(value):
    msg = raises(TypeError, lambda: C.finite_result(value, "value", "the loss"))
    assert msg.startswith("value: expected"), msg
    assert raises(TypeError, lambda: C.finite_result(1.0, 3, "x")).startswith("finite_result:")


def test_real_result():
    assert C.real_result(np.float32(0.5), "grader") == 0.5
    for bad, exc in (
        (None, TypeError),
        ("1", TypeError),
        (True, TypeError),
        (np.array([1.0]), TypeError),
        (np.nan, ValueError),
        (-np.inf, ValueError),
    ):
        assert raises(exc, lambda bad=bad: C.real_result(bad, "grader", " (a reward)")).startswith(
            "grader: expected a"
        )


def test_callable_check():
    f = lambda a, b: 0  # noqa: E731
    assert C.callable_check(f, "grader", 2) is f and C.callable_check(max, "f", 2) is max
    assert raises(TypeError, lambda: C.callable_check(f, "grader", 3, "g(a, b, c)")).startswith(
        "grader: expected a callable g(a, b, c) taking 3 positional arguments"
    )
    assert raises(TypeError, lambda: C.callable_check(float, "grader", 1)).startswith(
        "grader: expected a callable"
    )


def test_cells_bounds_an_allocation_before_it_happens():
    assert C.cells(C.MAX_CELLS, "T", "x") == 2**31
    assert (
        raises(ValueError, lambda: C.cells(2**63, "T", "a (B, T) output"))
        == f"T: expected a (B, T) output of at most 2**31 entries, got {2**63}"
    )


# ---- core checks: the bundles of core, multiturn and scale (one call per public function)
def test_float_array_rejects_strings_and_none_by_describing_them():
    assert _message(TypeError, C.float_array, "abc", "x") == "x: expected a real-valued array, got str 'abc'"
    assert _message(TypeError, C.float_array, None, "x") == "x: expected a real-valued array, got NoneType None"
    assert (
        _message(TypeError, C.float_array, np.array([1j]), "x")
        == "x: expected a real-valued array, got array of shape (1,) and dtype complex128"
    )


def test_float_array_keeps_a_float64_array_without_copy():
    a = np.array([1.0, 2.0])
    assert C.float_array(a, "a") is a
    b = C.float_array([1, 2], "b")
    assert b.dtype == np.float64 and np.array_equal(b, [1.0, 2.0])
    assert C.float_array(np.array([True, False]), "c").dtype == np.float64


def test_float_array_finite_flag_and_inf_messages():
    out = C.float_array([np.nan, np.inf], "x", finite=False)
    assert np.isnan(out[0]) and out[1] == np.inf
    assert (
        _message(ValueError, C.float_array, [1.0, np.inf, -np.inf], "x")
        == "x: expected finite values (no +-inf), got 2 such entries"
    )
    assert (
        _message(ValueError, C.float_array, [1.0, np.inf, -np.inf], "x", allow_neginf=True)
        == "x: expected finite values (no +inf), got 1 such entries"
    )
    assert (
        _message(ValueError, C.float_array, [np.nan, 1.0, np.nan], "x") == "x: expected no NaN, got 2 NaN entries"
    )


def test_ragged_input_is_a_type_error_naming_the_argument():
    ragged = [[1, 2], [3]]
    with pytest.raises(ValueError) as numpy_error:
        np.asarray(ragged)
    want = f"ids: expected an array, got list [[1, 2], [3]] ({numpy_error.value})"
    assert _message(TypeError, C.int_array, ragged, "ids") == want
    assert _message(TypeError, C.float_array, ragged, "ids") == want


def test_int_array_messages_and_no_copy():
    assert (
        _message(TypeError, C.int_array, np.array([1.0, 2.0]), "ids")
        == "ids: expected an integer array of ids, got array of shape (2,) and dtype float64"
    )
    a = np.array([0, 3], dtype=np.int64)
    assert C.int_array(a, "ids") is a
    u = C.int_array(np.array([1, 2], dtype=np.uint8), "ids")
    assert u.dtype == np.int64 and np.array_equal(u, [1, 2])


def test_check_shape_message_names_any_for_free_axes():
    assert (
        _message(ValueError, C.float_array, [1.0, 2.0, 3.0], "x", shape=(None, 2))
        == "x: expected shape (any, 2), got (3,)"
    )
    assert (
        _message(ValueError, C.float_array, [[1.0, 2.0]], "x", shape=(3, None))
        == "x: expected shape (3, any), got (1, 2)"
    )


def test_mask_array_accepts_right_padded_binary_masks():
    m = C.mask_array([[1, 1, 0], [1, 0, 0], [0, 0, 0]], "m")
    assert m.dtype == np.float64
    assert np.array_equal(m, np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    assert np.array_equal(C.mask_array([[1.0, 1.0]], "m"), np.array([[1.0, 1.0]]))
    assert np.array_equal(C.mask_array([[0.0], [1.0]], "m"), np.array([[0.0], [1.0]]))
    assert np.array_equal(C.mask_array([[1.0, 0.0]], "m", shape=(1, None)), np.array([[1.0, 0.0]]))


def test_mask_array_messages():
    assert _message(ValueError, C.mask_array, [1.0, 0.0, 0.0], "m") == "m: expected 2 dimensions, got shape (3,)"
    assert (
        _message(ValueError, C.mask_array, np.zeros((1, 1, 1)), "m")
        == "m: expected 2 dimensions, got shape (1, 1, 1)"
    )
    assert (
        _message(ValueError, C.mask_array, np.ones((3, 2)), "m", shape=(2, None))
        == "m: expected shape (2, any), got (3, 2)"
    )
    assert (
        _message(ValueError, C.mask_array, np.zeros((0, 3)), "m")
        == "m: expected a non-empty array (every axis of length >= 1), got shape (0, 3)"
    )
    # the first non-binary entry is reported
    assert _message(ValueError, C.mask_array, [[1.0, 0.5, 2.0]], "m") == "m: expected only 0 and 1, got value 0.5"
    assert _message(ValueError, C.mask_array, [[1.0, 2.0]], "m") == "m: expected only 0 and 1, got value 2.0"
    assert (
        _message(ValueError, C.mask_array, [[np.inf, 1.0]], "m")
        == "m: expected finite values (no +-inf), got 1 such entries"
    )
    # row 0 has a flat step (diff 0) but no rise; row 1 is the first with a 1 after a 0
    assert (
        _message(ValueError, C.mask_array, [[1, 0, 0], [0, 1, 1], [0, 1, 0]], "m", prefix=PREFIX)
        == "m: expected right padding (1s then 0s in each row) for GAE, row 1 is [0, 1, 1]" + TAIL
    )
    assert (
        _message(ValueError, C.mask_array, [[0.0, 1.0]], "m", prefix=PREFIX)
        == "m: expected right padding (1s then 0s in each row) for GAE, row 0 is [0, 1]" + TAIL
    )
    # without prefix the same masks are holes, accepted as they are
    m = [[1, 0, 0], [0, 1, 1], [0, 1, 0]]
    assert np.array_equal(C.mask_array(m, "m"), np.array(m, dtype=np.float64))


def test_rng_check_2():
    rng = np.random.default_rng(0)
    assert C.rng_check(rng, "rng") is rng
    assert (
        _message(TypeError, C.rng_check, 42, "rng")
        == "rng: expected a numpy.random.Generator (np.random.default_rng(seed)), got int 42"
    )


def test_describe_cuts_at_120_characters():
    s = "x" * 200
    # "str '" is 5 characters, then 115 of the x's
    assert _message(TypeError, C.float_scalar, s, "eps") == "eps: expected a real number, got str '" + "x" * 115


def test_scalar_messages():
    assert _message(TypeError, C.int_scalar, 1.5, "k") == "k: expected an integer, got float 1.5"
    assert (
        _message(ValueError, C.float_scalar, 0.0, "x", low=0.0, low_open=True)
        == "x: expected a number > 0.0, got 0.0"
    )
    assert _message(ValueError, C.float_scalar, -1.0, "x", low=0.0) == "x: expected a number >= 0.0, got -1.0"


def test_choice_lists_options_sorted_as_strings():
    # sorted by str: "10" < "2"
    assert (
        _message(TypeError, C.choice, [1], "k", (2, 10)) == "k: expected one of [10, 2], got unhashable list [1]"
    )
    assert _message(ValueError, C.choice, 3, "k", (2, 10)) == "k: expected one of [10, 2], got 3"
    assert C.choice(10, "k", (2, 10)) == 10


def test_prob_table_messages():
    assert (
        _message(ValueError, C.prob_table, [0.5, 0.5], "p", ndim=2) == "p: expected 2 dimensions, got shape (2,)"
    )
    # within 1e-9, not within 1e-8
    assert (
        _message(ValueError, C.prob_table, [[0.5, 0.5 + 5e-9]], "p")
        == f"p: expected rows summing to 1 (within 1e-9), got a row summing to {0.5 + (0.5 + 5e-9)!r}"
    )
    # the worst row is reported: sums [1.2, 0.5] (worst 0.5, the smallest) and [0.9, 1.5]
    # (worst 1.5, the largest); 0.6 + 0.6 = 1.2 and 0.1 + 0.4 = 0.5 in float64
    assert (
        _message(ValueError, C.prob_table, [[0.6, 0.6], [0.1, 0.4]], "p")
        == "p: expected rows summing to 1 (within 1e-9), got a row summing to 0.5"
    )
    assert (
        _message(ValueError, C.prob_table, [[0.5, 0.4], [0.75, 0.75]], "p")
        == "p: expected rows summing to 1 (within 1e-9), got a row summing to 1.5"
    )


def test_finite_result():
    v = (1.0, [np.array([2.0, 3.0]), 4])
    assert C.finite_result(v, "x", "f(x)") is v
    q = fractions.Fraction(1, 3)
    assert C.finite_result(q, "x", "f(x)") is q
    assert (
        _message(ValueError, C.finite_result, (1.0, np.array([np.inf, 0.0])), "x", "exp(x)")
        == "x: expected a value for which exp(x) is finite in float64, got one that makes it inf "
        "(overflow)"
    )
    assert (
        _message(ValueError, C.finite_result, [np.array([np.inf, np.nan])], "y", "y - y")
        == "y: expected a value for which y - y is finite in float64, got one that makes it NaN "
        "(overflow)"
    )
    assert (
        _message(TypeError, C.finite_result, 1.0, 1, "f")
        == "finite_result: expected name and what as strings, got 1, 'f'"
    )
    assert (
        _message(TypeError, C.finite_result, 1.0, "x", None)
        == "finite_result: expected name and what as strings, got 'x', None"
    )


def test_real_result_and_callable_check_messages():
    assert _message(TypeError, C.real_result, "a", "grader") == "grader: expected a real number, got str 'a'"
    assert _message(ValueError, C.real_result, np.nan, "grader") == "grader: expected a finite number, got nan"
    assert _message(TypeError, C.callable_check, 3, "f", 1) == "f: expected a callable f(...), got int 3"


def test_checks_are_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        C.mask_array([[1.0, 0.0]], "m")
        C.finite_result(np.array([1.0]), "x", "f")


def test_a_one_after_a_zero_anywhere_in_a_row_is_refused_for_a_prefix_only():
    from minirl_lm.core.checks import mask_array

    for m, row in (([[1.0, 0.0, 1.0]], 0), ([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]], 1), ([[0.0, 1.0]], 0)):
        with pytest.raises(ValueError) as e:
            mask_array(m, "mask", prefix=PREFIX)
        assert str(e.value) == (
            f"mask: expected right padding (1s then 0s in each row) for GAE, row {row} is "
            f"{[int(v) for v in m[row]]}" + TAIL
        )
        assert np.array_equal(mask_array(m, "mask"), np.array(m))  # holes: accepted
    assert mask_array([[1.0], [0.0]], "mask", prefix=PREFIX).shape == (2, 1)  # T = 1: nothing can rise
