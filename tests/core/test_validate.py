"""core/validate.py: core's kinds (logits with -inf, ids read without a copy; tested through
logprob's and policy's own tests and the battery), the allocation bounds and a callable's
return value, each exactly."""

import numpy as np

from minirl_lm.core import validate as CV
from quiet import kind_message as _message
from quiet import raises


def test_max_draws_is_addressable():
    assert CV.MAX_DRAWS * 8 <= np.iinfo(np.intp).max


def test_real_result():
    assert CV.real_result(np.float32(0.5), "grader") == 0.5
    assert CV.real_result(3, "grader") == 3.0 and CV.MAX_CELLS == 2**31
    for bad, exc in (
        (None, TypeError),
        ("1", TypeError),
        (True, TypeError),
        (np.array([1.0]), TypeError),
        (np.nan, ValueError),
        (-np.inf, ValueError),
        (10**400, ValueError),
    ):
        assert raises(exc, lambda bad=bad: CV.real_result(bad, "grader", " (a reward)")).startswith(
            "grader: expected a"
        )


def test_policy_table_shape():
    class Table:
        theta = np.zeros((3, 4))

    assert CV.policy_table_shape(Table(), 3, 4) is None
    assert CV.policy_table_shape(Table(), 2, 4, " for this MDP") == (
        "policy: expected a policy with a table of shape (S, V) = (2, 4) for this MDP, got Table with shape (3, 4)"
    )
    Table.theta = [0.0]  # no shape
    assert CV.policy_table_shape(Table(), 2, 4) == (
        "policy: expected a policy with a table of shape (S, V) = (2, 4), got Table with shape None"
    )


def test_logits_are_a_fresh_float64_copy_that_keeps_minus_inf():
    x = np.array([[[0.5, -np.inf]]])
    dims = {}
    got = CV.logits("B T V")(x, "z", dims)
    assert got is not x and got.dtype == np.float64 and np.array_equal(got, x) and dims == {"B": 1, "T": 1, "V": 2}
    got[0, 0, 0] = 9.0
    assert x[0, 0, 0] == 0.5
    ints = CV.logits("B T V")(np.array([[[1, 2]]], np.int32), "z", {})
    assert ints.dtype == np.float64 and ints.tolist() == [[[1.0, 2.0]]]


def test_logits_refuse_plus_inf_nan_dead_rows_ragged_and_shapes_exactly():
    L = CV.logits("B T V")
    assert _message(L, np.array([[[1.0, np.inf]]])) == (
        "ValueError: z: expected finite values or -inf (no +inf), got 1 such entries"
    )
    assert _message(L, np.array([[[-np.inf, -np.inf]]])) == (
        "ValueError: z: expected a finite entry in every row (-inf everywhere has no softmax), got 1 all -inf "
        "rows, the first at (0, 0)"
    )
    assert _message(L, np.array([[[np.nan, 0.0]]])) == "ValueError: z: expected no NaN, got 1 NaN entries"
    assert (
        _message(L, [[1.0], [2.0, 3.0]])
        == "TypeError: z: expected a real-valued array, got list [[1.0], [2.0, 3.0]]"
    )
    assert _message(L, np.zeros((2, 3))) == "ValueError: z: expected shape (B, T, V), got (2, 3)"
    assert _message(L, np.zeros((1, 1, 2)), {"V": 3}) == "ValueError: z: expected shape (B, T, 3), got (1, 1, 2)"


def test_logits_with_leading_axes_take_any_number_of_them():
    for shape in [(4,), (2, 4), (2, 3, 4), (1, 2, 3, 4)]:
        dims = {}
        assert CV.logits("... V")(np.zeros(shape), "z", dims).shape == shape
        assert dims["V"] == 4 and len(dims) == len(shape)
    assert _message(CV.logits("... V"), 1.0) == "ValueError: z: expected shape (V,), got ()"
    assert CV._expand("... V", 3) == "_0 _1 V" and CV._expand("... V", 0) == "V" and CV._expand("B V", 5) == "B V"
    assert CV._expand("... V", 1) == "V" and CV._expand("A ... V", 4) == "A _0 _1 V"


def test_id_arrays_that_already_are_int64_c_contiguous_are_read_without_a_copy():
    I = CV.id_array("B T")  # noqa: E741
    x = np.arange(6, dtype=np.int64).reshape(2, 3)
    dims = {}
    assert I(x, "z", dims) is x and dims == {"B": 2, "T": 3}
    strided = np.arange(12, dtype=np.int64).reshape(2, 6)[:, ::2]
    got = I(strided, "z", {})
    assert got is not strided and got.flags.c_contiguous and got.dtype == np.int64 and np.array_equal(got, strided)
    for other in (x.astype(np.int32), x.tolist()):
        got = I(other, "z", {})
        assert got is not other and got.dtype == np.int64 and np.array_equal(got, x)
    assert _message(I, x, {"B": 3}) == "ValueError: z: expected shape (3, T), got (2, 3)"
    assert I(x, "z", {"B": 2, "T": 3}) is x


def test_id_arrays_refuse_bools_floats_ragged_and_empty_exactly():
    I = CV.id_array("B T")  # noqa: E741
    assert _message(I, [[True, 1]]) == "TypeError: z: expected integer ids, got a bool in [[True, 1]]"
    assert _message(I, [[np.True_, 1]]) == "TypeError: z: expected integer ids, got a bool in [[np.True_, 1]]"
    assert (
        _message(I, np.array([[True, False]]))
        == "TypeError: z: expected integer ids, got a bool in array of dtype bool"
    )
    assert _message(I, [[1.5]]) == "TypeError: z: expected an integer array, got list [[1.5]]"
    assert _message(I, "12") == "TypeError: z: expected an integer array, got str '12'"
    assert _message(I, [[1], [2, 3]]) == "TypeError: z: expected an integer array, got list [[1], [2, 3]]"
    empty = "ValueError: z: expected a non-empty array (every axis of length >= 1), got shape (0, 2)"
    assert _message(I, np.zeros((0, 2), np.int64)) == empty and _message(I, np.zeros((0, 2), np.int32)) == empty
    E = CV.id_array("... N", empty=True)
    none = np.zeros(0, np.int64)
    assert E(none, "z", {}) is none and E(np.zeros((2, 0), np.int32), "z", {}).shape == (2, 0)


def test_real_result_messages_exactly():
    assert (
        raises(TypeError, lambda: CV.real_result("1", "grader")) == "grader: expected a real number, got str '1'"
    )
    assert raises(TypeError, lambda: CV.real_result(None, "g", " (a reward)")) == (
        "g: expected a real number (a reward), got NoneType None"
    )
    assert raises(TypeError, lambda: CV.real_result(np.zeros((1, 2)), "g")) == (
        "g: expected a real number, got array of shape (1, 2) and dtype float64"
    )
    assert raises(ValueError, lambda: CV.real_result(np.nan, "g")) == "g: expected a finite number, got nan"
    long = raises(TypeError, lambda: CV.real_result("x" * 300, "g"))  # the repr cut at 120 characters
    assert long == "g: expected a real number, got " + ("str '" + "x" * 300)[:120]
    context = " " + "c" * 300
    assert (
        raises(ValueError, lambda: CV.real_result(np.inf, "g", context))
        == ("g: expected a finite number" + context)[:200]
    )


def test_the_kinds_of_ids_cut_long_messages_and_read_ragged_leading_axes():
    assert _message(CV.id_array("B"), [True] + [1] * 100) == (
        "TypeError: " + ("z: expected integer ids, got a bool in " + repr([True] + [1] * 100))[:200]
    )
    assert _message(CV.id_array("... N"), [[1], [2, 3]]) == (
        "TypeError: z: expected an integer array, got list [[1], [2, 3]]"
    )
