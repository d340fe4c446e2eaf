"""Exact answers of the group baselines (`minirl_lm.pg.advantages`) and of the shared input checks
(`minirl_lm.core.checks`): hand-computed standardized, centred and leave-one-out values with the
stabilizer `eps` and the std's `ddof` passed through `advantages` and mattering (defaults pinned
against a value that changes the answer); the equal-rewards rule applied per group of a batch;
the rescaled std of groups whose squared spread underflows, its strict threshold, and the
bit-identical results of ordinary groups beside such a group (also under
`np.errstate(all="raise")`); and, for the checks, the exact error messages (argument names,
expectations, the reported offending value or row, the sorted options, the 120-character cut of
a described value), the dtype and no-copy behaviour of the array checks, and the NaN/inf
distinction of `finite_result`.
"""

import fractions
import warnings

import numpy as np
import pytest

from minirl_lm.core import checks
from minirl_lm.pg.advantages import (advantages, batch_std, broadcast, centred, leave_one_out,
                                  reinforce_pp, reinforce_pp_baseline, standardized)


def _message(exc_type, f, *args, **kwargs):
    with pytest.raises(exc_type) as e:
        f(*args, **kwargs)
    return str(e.value)


# ---- advantages.py ------------------------------------------------------------------------------

def test_equal_group_is_exactly_zero_beside_a_spread_group():
    # np.mean([0.1, 0.1, 0.1]) = (0.1 + 0.1 + 0.1) / 3 = 0.30000000000000004 / 3
    # = 0.10000000000000002 != 0.1: only the per-group equal-rewards rule gives exactly 0. The
    # second group (max 2 above, min 0 below the first group's 0.1) has mean 1.
    r = np.array([[0.1, 0.1, 0.1], [0.0, 1.0, 2.0]])
    assert r.mean(axis=1)[0] != 0.1
    want = np.array([[0.0, 0.0, 0.0], [-1.0, 0.0, 1.0]])
    assert np.array_equal(centred(r), want)
    # loo: (K / (K - 1)) (R - mean) = 1.5 * [-1, 0, 1]
    assert np.array_equal(leave_one_out(r), np.array([[0.0, 0.0, 0.0], [-1.5, 0.0, 1.5]]))
    # standardized, eps = 0: the second group has std sqrt(2/3), A = [-1, 0, 1] / sqrt(2/3)
    a = standardized(r, eps=0.0)
    assert np.array_equal(a[0], np.zeros(3))
    np.testing.assert_allclose(a[1], [-np.sqrt(1.5), 0.0, np.sqrt(1.5)], rtol=1e-15)


def test_standardized_eps_is_added_to_the_std():
    # rewards [0, 2]: mean 1, c = [-1, 1], population std 1; eps = 1: A = c / (1 + 1) = [-0.5, 0.5]
    assert np.array_equal(standardized([[0.0, 2.0]], eps=1.0), np.array([[-0.5, 0.5]]))
    # eps = 3: c / 4
    assert np.array_equal(standardized([[0.0, 2.0]], eps=3.0), np.array([[-0.25, 0.25]]))


def test_standardized_bessel_std_at_two_responses():
    # K = 2, ddof = 1: dof = 1, std = sqrt(((-1)^2 + 1^2) / 1) = sqrt(2); A = [-1, 1] / sqrt(2)
    a = standardized([[0.0, 2.0]], eps=0.0, ddof=1)
    assert np.array_equal(a, np.array([[-1.0, 1.0]]) / np.sqrt(2.0))
    # ddof = 0: std = sqrt(2 / 2) = 1, A = [-1, 1]
    assert np.array_equal(standardized([[0.0, 2.0]], eps=0.0, ddof=0), np.array([[-1.0, 1.0]]))


def test_standardized_rescales_a_tiny_spread_with_eps_zero():
    # c = [-1e-160, 0, 1e-160] squares to (sub)normal dust; on the rescaled deviations
    # [-1, 0, 1] the std is 1e-160 * sqrt(2/3), so A = [-1, 0, 1] / sqrt(2/3) = +-sqrt(1.5)
    a = standardized([[-1e-160, 0.0, 1e-160]], eps=0.0)
    np.testing.assert_allclose(a, [[-np.sqrt(1.5), 0.0, np.sqrt(1.5)]], rtol=1e-15)


def test_standardized_mixed_batch_tiny_group_and_ordinary_group():
    # row 0 is ordinary (sum of squares 0.0467 < 1 but far above 1e-290): computed directly,
    # bit-identical to that group on its own, std = sqrt(sum c^2 / 3); row 1 is tiny and uses its
    # own scale max|c| = 1e-160 (not the batch's), giving +-sqrt(1.5) as alone.
    r = np.array([[0.0, 0.1, 0.3], [-1e-160, 0.0, 1e-160]])
    a = standardized(r, eps=0.0)
    c0 = r[0] - r[0].mean()
    assert np.array_equal(a[0], c0 / np.sqrt((c0 * c0).sum() / 3))
    assert np.array_equal(a[0], standardized(r[:1], eps=0.0)[0])
    # the rescaled std of this group differs in the last bit from the direct one: only the
    # direct path gives the value pinned above
    s = np.abs(c0).max()
    assert np.sqrt((c0 * c0).sum() / 3) != s * np.sqrt(((c0 / s) ** 2).sum() / 3)
    np.testing.assert_allclose(a[1], [-np.sqrt(1.5), 0.0, np.sqrt(1.5)], rtol=1e-15)
    assert np.array_equal(a[1], standardized(r[1:], eps=0.0)[0])


def test_standardized_threshold_is_strict():
    # row 1: [-y, y, -z, z] with mean 0 and sum of squares exactly the double 1e-290 (the
    # threshold): it is computed directly, std = sqrt(1e-290 / 4) = 5.0000000000000005e-146,
    # whereas the rescaled std would be 5e-146. Row 0 is a tiny group, so the rescaling runs.
    y, z = 4.6848084366072725e-146, 5.296467682549694e-146
    r = np.array([[-1e-160, 1e-160, 0.0, 0.0], [-y, y, -z, z]])
    assert ((r[1] * r[1]).sum()) == 1e-290
    assert np.sqrt(1e-290 / 4) == 5.0000000000000005e-146
    a = standardized(r, eps=0.0)
    assert np.array_equal(a[1], r[1] / 5.0000000000000005e-146)
    assert not np.array_equal(a[1], r[1] / 5e-146)
    # row 0: c = [-1e-160, 1e-160, 0, 0], std = 1e-160 * sqrt(2 / 4): A = c / (1e-160 sqrt(0.5))
    np.testing.assert_allclose(a[0], [-np.sqrt(2.0), np.sqrt(2.0), 0.0, 0.0], rtol=1e-15)


def test_standardized_raises_no_floating_point_condition_on_a_mixed_batch():
    # row 0 (tiny): c = +-2^-530, c^2 = 2^-1060 exact, sum/4 = 2^-1061 exact, rescaled std
    # 2^-530 sqrt(0.5): A = [-sqrt 2, sqrt 2, 0, 0]. Row 1 (ordinary): mean 0 exactly
    # (-1 + 1 + 2e-154 - 2e-154), c^2 of 2e-154 is 4e-308 (normal), std sqrt(2 / 4):
    # A = r * sqrt 2. No operation underflows, so even np.errstate(all="raise") is silent.
    t = 2.0 ** -530
    r = np.array([[-t, t, 0.0, 0.0], [-1.0, 1.0, 2e-154, -2e-154]])
    with np.errstate(all="raise"):
        a = standardized(r, eps=0.0)
    np.testing.assert_allclose(a[0], [-np.sqrt(2.0), np.sqrt(2.0), 0.0, 0.0], rtol=1e-15)
    np.testing.assert_allclose(a[1], r[1] * np.sqrt(2.0), rtol=1e-15)


def test_advantages_defaults_and_pass_through():
    r = [[0.0, 2.0, 4.0]]
    # mean 2, c = [-2, 0, 2], sum c^2 = 8; ddof 0: std = sqrt(8/3); ddof 1: std = sqrt(8/2) = 2
    default = advantages(r)
    assert np.array_equal(default, advantages(r, baseline="standardized", eps=1e-8, ddof=0))
    np.testing.assert_allclose(default, [[-2 / (np.sqrt(8 / 3) + 1e-8), 0.0,
                                          2 / (np.sqrt(8 / 3) + 1e-8)]], rtol=1e-15)
    # ddof = 1 passed through: c / (2 + 1e-8)
    np.testing.assert_allclose(advantages(r, ddof=1), [[-2 / (2 + 1e-8), 0.0, 2 / (2 + 1e-8)]],
                               rtol=1e-15)
    # eps = 2 passed through, ddof 1: c / (2 + 2) = [-0.5, 0, 0.5]
    assert np.array_equal(advantages(r, eps=2.0, ddof=1), np.array([[-0.5, 0.0, 0.5]]))
    # eps default matters: rewards [0, 2], std 1: [-1, 1] / (1 + 1e-8), not / (1 + 1)
    np.testing.assert_allclose(advantages([[0.0, 2.0]]), [[-1 / (1 + 1e-8), 1 / (1 + 1e-8)]],
                               rtol=1e-15)


def test_advantages_baseline_none_is_the_rewards():
    r = np.array([[1.0, 2.0, 4.0]])
    a = advantages(r, baseline="none")
    assert np.array_equal(a, r) and a is not r
    # mean of [1, 2, 6] is 3: [-2, -1, 3]
    assert np.array_equal(advantages([[1.0, 2.0, 6.0]], baseline="mean"),
                          np.array([[-2.0, -1.0, 3.0]]))


def test_broadcast_error_messages():
    mask = np.ones((2, 3))
    assert _message(ValueError, broadcast, np.zeros((1, 1, 1)), mask) == \
        "adv: expected shape (B,) or (N, K), got (1, 1, 1)"
    assert _message(ValueError, broadcast, np.zeros(3), mask) == \
        "adv: expected 2 advantages (one per row of mask), got shape (3,)"
    assert _message(ValueError, broadcast, np.zeros((1, 3)), mask) == \
        "adv: expected 2 advantages (one per row of mask), got shape (1, 3)"
    out = broadcast([[1.0, -2.0]], np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]))
    assert np.array_equal(out, np.array([[1.0, 1.0, 0.0], [-2.0, -0.0, -0.0]]))


def test_mask_is_named_mask_in_errors_of_the_token_advantages():
    bad = np.array([[0.0, 1.0]])
    want = "mask: expected right padding (1s then 0s in each row), row 0 is [0, 1]"
    assert _message(ValueError, broadcast, [1.0], bad) == want
    assert _message(ValueError, reinforce_pp, np.zeros((1, 2)), bad) == want
    assert _message(ValueError, reinforce_pp_baseline, [[1.0]], bad) == want


def test_batch_std_and_token_whitening_values():
    # batch_std: c = [[-1, 1]], all rewards [0, 2]: std 1 (ddof 0): c / (1 + 1) with eps = 1
    assert np.array_equal(batch_std([[0.0, 2.0]], eps=1.0), np.array([[-0.5, 0.5]]))
    # reinforce_pp_baseline, K = 2, one token each: centred [-1, 1], mean 0, Bessel var 2,
    # eps 2: [-1, 1] / sqrt(2 + 2) = [-0.5, 0.5]
    out = reinforce_pp_baseline([[0.0, 2.0]], np.ones((2, 1)), eps=2.0)
    assert np.array_equal(out, np.array([[-0.5], [0.5]]))


# ---- checks.py: arrays ------------------------------------------------------------------------

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


# ---- checks.py: mask_array ----------------------------------------------------------------------

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


# ---- checks.py: scalars, options, callables, results -------------------------------------------

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
        standardized([[-1e-160, 0.0, 1e-160], [0.0, 0.1, 0.3]], eps=0.0)


def test_batch_std_does_not_depend_on_memory_order():
    # the batch std is taken over the rewards flattened prompt-major (row by row), whatever the
    # memory layout of the input: a Fortran-ordered array gives the same bits as a C-ordered one
    # (summed column by column, these rewards give a std that differs in the last bit).
    r = np.array([[0.1, 0.2, 0.6], [0.4, 0.8, 0.6], [0.9, 0.7, 0.6]])
    f = np.asfortranarray(r)
    flat = r.reshape(-1)
    dev = flat - flat.mean()
    s = np.abs(dev).max()
    std = s * np.sqrt(((dev / s) ** 2).sum() / 9)
    dev_f = f - f.mean()
    assert s * np.sqrt(((dev_f / s) ** 2).sum() / 9) != std
    c = r - r.mean(axis=1, keepdims=True)
    assert np.array_equal(batch_std(r, eps=0.0), c / std)
    assert np.array_equal(batch_std(f, eps=0.0), c / std)
    assert np.array_equal(batch_std(r.T.copy().T, eps=0.0), c / std)
