"""adamw.py: the AdamW step against the update written out for scalars, and its edge cases."""

import numpy as np
import pytest

from minirl_lm.nn.adamw import AdamW
from quiet import raises


def test_adamw_matches_the_update_written_out():
    p = {"w": np.array([1.0, -2.0])}
    opt = AdamW(p, lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.01)
    w, m, u = np.array([1.0, -2.0]), 0.0, 0.0
    for n, g in enumerate([np.array([0.5, -1.0]), np.array([0.1, 2.0]), np.array([-0.3, 0.0])], start=1):
        opt.step({"w": g})
        m = 0.9 * m + 0.1 * g
        u = 0.99 * u + 0.01 * g * g
        w = w - 0.1 * ((m / (1 - 0.9**n)) / (np.sqrt(u / (1 - 0.99**n)) + 1e-8) + 0.01 * w)
        assert np.allclose(p["w"], w, rtol=0, atol=1e-15)
    assert opt.n == 3


def test_first_step_moves_each_entry_by_lr_times_its_sign():
    p = {"a": np.zeros(3)}
    AdamW(p, lr=0.01, eps=1e-12).step({"a": np.array([3.0, -1e-3, 0.0])})
    assert np.allclose(p["a"], [-0.01, 0.01, 0.0])


def test_adamw_errors_change_nothing():
    p = {"a": np.zeros(3)}
    opt = AdamW(p)
    assert raises(ValueError, lambda: opt.step({"b": np.zeros(3)})).startswith("grads: expected the keys")
    assert raises(ValueError, lambda: opt.step({"a": np.array([1.0, np.nan, 0.0])})).startswith("grads:")
    assert opt.n == 0 and (p["a"] == 0).all()
    assert raises(TypeError, lambda: AdamW({"a": np.zeros(3, np.float32)})).startswith("params:")
    assert raises(ValueError, lambda: AdamW(p, beta1=1.5)).startswith("beta1:")


def test_a_step_that_raises_writes_nothing():
    p = {"a": np.zeros(3), "b": np.ones(2)}
    opt = AdamW(p)
    opt.step({"a": np.ones(3), "b": np.ones(2)})
    before = ({k: v.copy() for k, v in p.items()}, {k: v.copy() for k, v in opt.m.items()}, opt.n)
    p["b"].flags.writeable = False  # made read-only after the optimizer was built
    assert raises(ValueError, lambda: opt.step({"a": np.ones(3), "b": np.ones(2)})).startswith(
        "params: expected finite, writable"
    )
    p["b"].flags.writeable = True
    # a square beyond float64 would freeze the second moment at inf: an error, nothing written
    msg = raises(ValueError, lambda: opt.step({"a": np.full(3, 1e200), "b": np.ones(2)}))
    assert msg.startswith("AdamW.step: expected a finite u['a']") and "grads in [1, 1e+200]" in msg
    assert msg.endswith("params in [-0.001, 0.999]")
    assert all(np.array_equal(p[k], before[0][k]) and np.array_equal(opt.m[k], before[1][k]) for k in p)
    assert opt.n == before[2]


def test_parameters_are_finite_writable_float64():
    ro = np.zeros(2)
    ro.flags.writeable = False
    for bad, start in [
        (np.array([0.0, np.nan]), "params: expected finite"),
        (np.array([np.inf]), "params: expected finite"),
        (ro, "params: expected finite, writable"),
    ]:
        assert raises(ValueError, lambda bad=bad: AdamW({"a": bad})).startswith(start)


def test_the_parameter_messages_say_what_came():
    assert (
        raises(TypeError, lambda: AdamW([1.0])) == "params: expected a non-empty dict of float64 arrays, got list"
    )
    assert raises(TypeError, lambda: AdamW({})) == (
        "params: expected a non-empty dict of float64 arrays, got an empty dict"
    )
    ro = np.zeros(2)
    ro.flags.writeable = False
    for bad, kind, got in [
        (np.zeros(2, np.float32), TypeError, "a float32 array"),
        ([0.0, 1.0], TypeError, "a list"),
        (ro, ValueError, "read-only values"),
        (np.array([0.0, np.nan]), ValueError, "NaN or inf"),
    ]:
        assert raises(kind, lambda bad=bad: AdamW({"a": bad})) == (
            f"params: expected finite, writable float64 arrays (updated in place), got {got} at 'a'"
        )
    opt = AdamW({"a": np.zeros(2)})
    assert raises(TypeError, lambda: opt.step([1.0, 1.0])) == (
        "grads: expected a dict of arrays with the keys of params, got list"
    )


def test_gradients_of_any_kind_are_read_as_float64():
    # lists of any depth, integers, float32 (its squares taken in float64, not rounded to
    # float32) and an empty list for an empty parameter: the same step as float64 arrays
    def stepped(grads):
        p = {"w": np.array([[1.0, -2.0]]), "b": np.array([0.5, 0.0]), "c": np.zeros(2), "e": np.zeros(0)}
        AdamW(p, lr=0.1, weight_decay=0.01).step(grads)
        return p

    c = np.array([0.1, -3.7], np.float32)
    want = stepped(
        {"w": np.array([[0.5, -1.0]]), "b": np.array([2.0**32, -1.0]), "c": c.astype(float), "e": np.zeros(0)}
    )
    got = stepped({"w": [[0.5, -1.0]], "b": np.array([2**32, -1]), "c": c, "e": []})
    assert all(np.array_equal(got[k], want[k]) for k in want)


def test_the_moments_start_at_float64_zeros_of_each_shape_and_stay_float64():
    p = {"w": np.ones((2, 3)), "b": np.ones(1)}
    opt = AdamW(p)
    for moments in (opt.m, opt.u):
        assert all(moments[k].dtype == np.float64 and moments[k].shape == p[k].shape for k in p)
        assert all((moments[k] == 0).all() for k in p)
    opt.step({"w": np.ones((2, 3)), "b": np.ones(1)})
    assert all(opt.m[k].dtype == np.float64 and opt.u[k].dtype == np.float64 for k in p)


def test_a_matrix_gradient_steps_like_its_array():
    # np.matrix's `*` is the matrix product: taken as it came, `g * g` would be g @ g, not the
    # entrywise square of the second moment (here a different (2, 2) matrix)
    g = np.array([[1.0, 2.0], [3.0, 4.0]])
    with pytest.warns(PendingDeprecationWarning, match="the matrix subclass"):  # NumPy's, for any matrix
        matrix = np.asmatrix(g)
    stepped = []
    for grad in (g, matrix):
        p = {"w": np.ones((2, 2))}
        opt = AdamW(p, lr=0.1)
        opt.step({"w": grad})
        opt.step({"w": grad})
        stepped.append((p["w"], opt.u["w"]))
    assert type(stepped[1][0]) is np.ndarray and type(stepped[1][1]) is np.ndarray
    assert np.array_equal(stepped[0][0], stepped[1][0]) and np.array_equal(stepped[0][1], stepped[1][1])
