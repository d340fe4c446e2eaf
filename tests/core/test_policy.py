"""The tabular softmax policy: log-probs, the backward against finite differences, sampling.

Every test runs twice, on the Numba kernels and on the NumPy path (`core/_tabular.py`, what the
policy runs when Numba cannot be imported, and what its standalone copy holds); the NumPy path is
then tested equal to the kernels, and picked when `numba` cannot be imported."""

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_cases import CASES, RTOL, case, rel_err

import minirl_lm.core.policy as policy_mod
from gradcheck import fd_grad
from minirl_lm import kernels
from minirl_lm.core import _tabular
from minirl_lm.core.policy import TabularPolicy, log_softmax_table, softmax_table
from quiet import raises

ROOT = Path(__file__).resolve().parents[2]
NUMPY_PATH = ("_tabular_logp", "_tabular_backward", "_abs_sum", "_dead_row", "_dtheta_fault")
NUMPY_PATH += ("policy_batch_fast", "weights_fast")


@pytest.fixture(autouse=True, params=["numba", "numpy"])
def path(request, monkeypatch):
    """The policy's two paths: as imported (Numba is installed here), and the NumPy fallback."""
    if request.param == "numpy":
        for name in NUMPY_PATH:
            monkeypatch.setattr(policy_mod, name, getattr(_tabular, name))
    return request.param


def batch(rng, S, V, B, T):
    """Random states/tokens with a random right-padded mask (some rows may be empty)."""
    states = rng.integers(0, S, size=(B, T))
    tokens = rng.integers(0, V, size=(B, T))
    lengths = rng.integers(0, T + 1, size=B)
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(float)
    return states, tokens, mask


def test_logp_matches_direct_log_softmax_and_is_zero_at_padding():
    rng = np.random.default_rng(0)
    theta = rng.normal(size=(6, 7)) * 3
    pol = TabularPolicy(theta)
    states, tokens, mask = batch(rng, 6, 7, 9, 5)
    logp, seq = pol.logp(states, tokens, mask)
    want = log_softmax_table(theta)[states, tokens] * mask
    np.testing.assert_allclose(logp, want, rtol=1e-13, atol=1e-13)
    assert (logp[mask == 0] == 0.0).all()
    np.testing.assert_allclose(seq, logp.sum(1), rtol=1e-13, atol=1e-13)


def test_backward_matches_central_finite_differences():
    # loss = sum_bt c_bt * logp_bt, so dloss/dlogp = c; check dloss/dtheta entry by entry.
    # Central differences with h = 1e-6 in float64: truncation O(h^2) ~ 1e-12, rounding
    # ~ 1e-16 * |loss| / h ~ 1e-9; tolerance atol 1e-7.
    rng = np.random.default_rng(1)
    S, V, B, T = 5, 4, 8, 6
    theta = rng.normal(size=(S, V))
    states, tokens, mask = batch(rng, S, V, B, T)
    c = rng.normal(size=(B, T))
    grad = TabularPolicy(theta).backward(states, tokens, mask, c)
    fd = fd_grad(lambda th: (TabularPolicy(th).logp(states, tokens, mask)[0] * c).sum(), theta)
    np.testing.assert_allclose(grad, fd, atol=1e-7, rtol=0)


def test_backward_is_the_scatter_of_w_times_onehot_minus_pi():
    rng = np.random.default_rng(2)
    S, V, B, T = 4, 5, 7, 3
    theta = rng.normal(size=(S, V))
    states, tokens, mask = batch(rng, S, V, B, T)
    w = rng.normal(size=(B, T))
    pi = softmax_table(theta)
    want = np.zeros((S, V))
    for b in range(B):
        for t in range(T):
            if mask[b, t]:
                want[states[b, t]] += w[b, t] * (np.eye(V)[tokens[b, t]] - pi[states[b, t]])
    got = TabularPolicy(theta).backward(states, tokens, mask, w)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_padding_and_empty_responses_contribute_nothing():
    rng = np.random.default_rng(3)
    theta = rng.normal(size=(3, 4))
    states, tokens, _ = batch(rng, 3, 4, 4, 3)
    mask = np.zeros((4, 3))
    w = rng.normal(size=(4, 3))  # garbage at padding is ignored
    logp, seq = TabularPolicy(theta).logp(states, tokens, mask)
    assert (logp == 0).all() and (seq == 0).all()
    assert (TabularPolicy(theta).backward(states, tokens, mask, w) == 0).all()


def test_extreme_logits_stay_finite_and_neginf_only_where_gathered():
    theta = np.array([[1e4, -1e4, 0.0, -np.inf], [-np.inf, 3.0, -1e4, 1e4]])
    pol = TabularPolicy(theta)
    states = np.array([[0, 1, 0, 0]])
    tokens = np.array([[0, 3, 1, 3]])
    mask = np.array([[1.0, 1.0, 1.0, 1.0]])
    logp, seq = pol.logp(states, tokens, mask)
    assert logp[0, 0] == 0.0 and logp[0, 1] == 0.0  # exp(-2e4) underflows: log-prob 0
    assert logp[0, 2] == -2e4 and logp[0, 3] == -np.inf
    assert seq[0] == -np.inf
    g = pol.backward(states[:, :3], tokens[:, :3], mask[:, :3], np.ones((1, 3)))
    assert np.isfinite(g).all()
    assert np.isfinite(pol.probs()).all() and np.isfinite(pol.log_probs()[theta > -np.inf]).all()
    # the impossible token (state 0, token 3) gets the limit 1 - pi = 1 in its own entry
    g_all = pol.backward(states, tokens, mask, np.array([[0.0, 0.0, 0.0, 1.0]]))
    want = -pol.probs()[0]
    want[3] += 1.0
    assert np.isfinite(g_all).all()
    np.testing.assert_array_equal(g_all[0], want)
    assert (g_all[1] == 0).all()


def test_sampling_matches_rng_choice_draw_for_draw():
    rng = np.random.default_rng(4)
    theta = rng.normal(size=(4, 9))
    pi = softmax_table(theta)
    r1, r2 = np.random.default_rng(5), np.random.default_rng(5)
    want = np.concatenate([r1.choice(9, 32, p=pi[x]) for x in range(4)])
    got = TabularPolicy(theta).sample(np.repeat(np.arange(4), 32), r2)
    np.testing.assert_array_equal(got, want)
    assert r1.random() == r2.random()  # same generator state after


def test_sampling_never_draws_a_zero_probability_token():
    theta = np.array([[0.0, -np.inf, 0.0, -np.inf]])
    y = TabularPolicy(theta).sample(np.zeros(2000, np.int64), np.random.default_rng(0))
    assert set(np.unique(y)) == {0, 2}


def test_copy_is_independent():
    pol = TabularPolicy(np.zeros((2, 3)))
    ref = pol.copy()
    pol.theta[0, 0] = 5.0
    assert ref.theta[0, 0] == 0.0


@settings(max_examples=40, deadline=None)
@given(
    S=st.integers(1, 6), V=st.integers(1, 7), B=st.integers(1, 6), T=st.integers(1, 5), seed=st.integers(0, 2**31)
)
def test_logp_and_backward_properties(S, V, B, T, seed):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(S, V)) * 4
    states, tokens, mask = batch(rng, S, V, B, T)
    pol = TabularPolicy(theta)
    logp, seq = pol.logp(states, tokens, mask)
    assert (logp <= 1e-12).all() and (logp[mask == 0] == 0).all()
    g = pol.backward(states, tokens, mask, rng.normal(size=(B, T)))
    # each row of a softmax gradient sums to zero: sum_v (onehot - pi) = 0
    np.testing.assert_allclose(g.sum(1), 0.0, atol=1e-10)


GOOD = dict(states=np.zeros((2, 3), np.int64), tokens=np.zeros((2, 3), np.int64), mask=np.ones((2, 3)))


def call_logp(**kw):
    args = {**GOOD, **kw}
    return TabularPolicy(np.zeros((3, 4))).logp(args["states"], args["tokens"], args["mask"])


BAD = [
    (lambda: TabularPolicy(np.zeros(4)), ValueError, "theta"),
    (lambda: TabularPolicy([[0.0, np.nan]]), ValueError, "theta"),
    (lambda: TabularPolicy([[0.0, np.inf]]), ValueError, "theta"),
    (lambda: TabularPolicy([[-np.inf, -np.inf]]), ValueError, "theta"),
    (lambda: TabularPolicy("abc"), TypeError, "theta"),
    (lambda: TabularPolicy(np.zeros((0, 3))), ValueError, "theta"),
    (lambda: call_logp(states=np.zeros((2, 3))), TypeError, "states"),
    (lambda: call_logp(states=np.full((2, 3), 3)), ValueError, "states"),
    (lambda: call_logp(states=np.full((2, 3), -1)), ValueError, "states"),
    (lambda: call_logp(states=np.zeros(3, np.int64)), ValueError, "states"),
    (lambda: call_logp(tokens=np.full((2, 3), 4)), ValueError, "tokens"),
    (lambda: call_logp(tokens=np.zeros((2, 2), np.int64)), ValueError, "tokens"),
    (lambda: call_logp(tokens=np.zeros((2, 3), bool)), TypeError, "tokens"),
    (lambda: call_logp(mask=np.full((2, 3), 0.5)), ValueError, "mask"),
    (lambda: call_logp(mask=np.array([[0, 1, -1], [1, 1, 1.0]])), ValueError, "mask"),
    (lambda: call_logp(mask=np.ones((2, 4))), ValueError, "mask"),
    (lambda: call_logp(mask=np.array([[1, np.nan, 0], [1, 1, 1.0]])), ValueError, "mask"),
    (
        lambda: TabularPolicy(np.zeros((3, 4))).backward(
            GOOD["states"], GOOD["tokens"], GOOD["mask"], np.zeros((2, 4))
        ),
        ValueError,
        "dlogp",
    ),
    (
        lambda: TabularPolicy(np.zeros((3, 4))).backward(
            GOOD["states"], GOOD["tokens"], GOOD["mask"], np.full((2, 3), np.nan)
        ),
        ValueError,
        "dlogp",
    ),
    (lambda: TabularPolicy(np.zeros((3, 4))).sample([0, 1], None), TypeError, "rng"),
    (lambda: TabularPolicy(np.zeros((3, 4))).sample([0, 5], np.random.default_rng()), ValueError, "states"),
    (lambda: TabularPolicy(np.zeros((3, 4))).sample([0.0], np.random.default_rng()), TypeError, "states"),
    (lambda: softmax_table([[-np.inf, -np.inf]]), ValueError, "theta"),
    (lambda: log_softmax_table(np.zeros(3)), ValueError, "theta"),
]


@pytest.mark.parametrize("call,exc,name", BAD)
def test_bad_input_is_rejected_with_a_named_error(call, exc, name):
    with pytest.raises(exc, match=rf"^{name}:"):
        call()


def test_sampling_large_path_matches_rng_choice():
    # M * V > 2**22 takes the one-search-per-state branch; it must draw the same tokens.
    rng = np.random.default_rng(6)
    theta = rng.normal(size=(2, 1024))
    pi = softmax_table(theta)
    r1, r2 = np.random.default_rng(7), np.random.default_rng(7)
    want = np.concatenate([r1.choice(1024, 2500, p=pi[x]) for x in range(2)])
    got = TabularPolicy(theta).sample(np.repeat(np.arange(2), 2500), r2)
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- theta: checked when it is set


@pytest.mark.parametrize(
    "bad, exc",
    [
        ([[0.0, np.nan]], ValueError),
        ([[np.inf, 0.0]], ValueError),
        ([[-np.inf, -np.inf]], ValueError),
        (np.zeros(3), ValueError),
        ("abc", TypeError),
    ],
)
def test_a_bad_theta_is_refused_when_set_and_the_old_one_kept(bad, exc):
    pol = TabularPolicy(np.arange(6.0).reshape(2, 3))
    old = pol.theta
    with pytest.raises(exc, match="^theta:"):
        pol.theta = bad
    assert pol.theta is old and np.array_equal(old, np.arange(6.0).reshape(2, 3))
    assert (pol.S, pol.V) == (2, 3)


def test_setting_theta_copies_it_and_updates_the_shape():
    pol = TabularPolicy(np.zeros((2, 3)))
    new = np.ones((4, 5), np.float32)
    pol.theta = new
    assert pol.theta.dtype == np.float64 and pol.theta.flags.c_contiguous
    assert (pol.S, pol.V) == (4, 5) and not np.shares_memory(pol.theta, new)
    arr = pol.theta
    pol.theta -= 1.0  # in place: the same array, checked
    assert pol.theta is arr and (arr == 0.0).all()


def test_a_call_that_raises_changes_no_state():
    """Bad batches, a bad generator draw and a table edited in place into NaN: every call raises
    before it writes theta or draws from the generator."""
    rng = np.random.default_rng(3)
    theta = rng.normal(size=(3, 4))
    pol = TabularPolicy(theta)
    gen = np.random.default_rng(0)
    state = gen.bit_generator.state
    states, tokens, mask = np.zeros((2, 3), np.int64), np.zeros((2, 3), np.int64), np.ones((2, 3))
    calls = [
        lambda: pol.logp(states, tokens + 9, mask),
        lambda: pol.backward(states, tokens, mask, np.full((2, 3), np.nan)),
        lambda: pol.backward(states, tokens, mask, np.full((2, 3), 1e308)),  # overflow
        lambda: pol.sample(np.array([0, 7]), gen),
    ]
    for call in calls:
        with pytest.raises(ValueError):
            call()
        assert np.array_equal(pol.theta, theta) and gen.bit_generator.state == state
    pol.theta[1, 2] = np.nan  # bypasses the setter
    edited = "(the table was changed after construction)"
    rows = "theta: expected rows with a finite entry and no NaN"
    got = raises(ValueError, lambda: pol.sample(np.array([0, 1]), gen))  # a visited row: refused, no draw
    assert got == f"{rows} {edited}" and gen.bit_generator.state == state
    got = raises(
        ValueError, lambda: pol.logp(np.ones((1, 2), np.int64), np.zeros((1, 2), np.int64), np.ones((1, 2)))
    )
    assert got == f"{rows} or +inf {edited}, got a NaN log-prob"
    ones = np.ones((1, 2))  # a visited row edited into NaN
    got = raises(
        ValueError, lambda: pol.backward(np.ones((1, 2), np.int64), np.zeros((1, 2), np.int64), ones, ones)
    )
    assert got == f"{rows} or +inf at the visited states {edited}, got a non-finite dtheta"
    assert pol.sample(np.array([0, 2, 0]), gen).shape == (3,)  # the rows it reads are fine


def test_backward_guard_catches_an_overflow_in_one_gathered_entry():
    """c[s] cancels to 0 while the scatter into token 1 overflows (see tests/kernels/
    test_tabular.py): named after the method, with the range of dlogp, as every overflow of the
    sums of finite dlogp."""
    pol = TabularPolicy(np.zeros((1, 3)))
    dlogp = np.array([[0.0, 1e308, -1e308, 1e308, -1e308]])
    msg = (
        "TabularPolicy.backward: expected a finite dtheta (sums of dlogp per state), got inf (beyond float64) "
        "from dlogp in [-1e+308, 1e+308]"
    )
    ids = np.zeros((1, 5), np.int64), np.array([[0, 1, 2, 1, 2]])
    assert raises(ValueError, lambda: pol.backward(*ids, np.ones((1, 5)), dlogp)) == msg


# ---------------------------------------------------------------- the NumPy path (core/_tabular.py)


@pytest.mark.parametrize("kw", CASES)
def test_numpy_path_equals_the_kernels(kw, path):
    if path == "numpy":
        pytest.skip("compares the two paths itself")
    theta, _, states, tokens, mask, w = case(**kw)
    for a, b in zip(
        _tabular._tabular_logp(theta, states, tokens, mask), kernels.tabular_logp(theta, states, tokens, mask)
    ):
        assert rel_err(a, b) <= RTOL
    got = _tabular._tabular_backward(theta, states, tokens, mask, w)
    assert rel_err(got, kernels.tabular_backward(theta, states, tokens, mask, w)) <= RTOL
    unvisited = np.setdiff1d(np.arange(theta.shape[0]), states[mask > 0])
    assert np.all(got[unvisited] == 0.0)


def test_numpy_path_reads_nothing_at_the_padding_and_flags_bad_rows(path):
    theta = np.array([[0.0, 1.0], [np.nan, 0.0], [np.inf, 0.0], [-np.inf, -np.inf]])
    states, tokens, mask = np.array([[0, 99]]), np.array([[1, -5]]), np.array([[1.0, 0.0]])
    logp, seq = _tabular._tabular_logp(theta, states, tokens, mask)
    assert logp[0, 1] == 0.0 and np.isfinite(seq).all()
    assert _tabular._dead_row(theta, np.array([0, 0])) == -1
    for bad in (1, 2, 3):
        assert _tabular._dead_row(theta, np.array([0, bad])) == bad
        assert np.isnan(
            _tabular._tabular_logp(theta, np.array([[bad]]), np.array([[1]]), np.ones((1, 1)))[0]
        ).all()
    d = _tabular._tabular_backward(theta, np.array([[1]]), np.array([[1]]), np.ones((1, 1)), np.ones((1, 1)))
    assert _tabular._dtheta_fault(d, None, None, None, 1.0)
    assert not _tabular.policy_batch_fast(states, tokens, mask, 4, 2) and not _tabular.weights_fast(mask, (1, 2))


def test_numpy_path_is_silent_where_the_kernels_are(path):
    # a bad row, a row spanning the float range and sums of weights beyond float64: NaN or inf,
    # and no NumPy warning (the kernels raise none; the policy's guards name what came)
    theta = np.array([[np.nan, 0.0], [np.inf, 0.0], [1e308, -1e308]])
    states, tokens, ones = np.array([[0, 1, 2, 2]]), np.array([[1, 1, 0, 0]]), np.ones((1, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        logp, _ = _tabular._tabular_logp(theta, states, tokens, ones)
        d = _tabular._tabular_backward(theta, states, tokens, ones, np.full((1, 4), 1e308))
        assert _tabular._abs_sum(np.full((1, 4), 1e308), ones) == np.inf
        # weights 1.7e308, -1.7e308, -1.7e308 on tokens 0, 1, 2 of a row with pi = (1, 0, 0): c is
        # finite (-1.7e308) and the onehot part minus c pi overflows in the subtraction itself
        big = _tabular._tabular_backward(
            np.array([[0.0, -np.inf, -np.inf]]), np.zeros((1, 3), np.int64), np.array([[0, 1, 2]]),
            np.ones((1, 3)), np.array([[1.7e308, -1.7e308, -1.7e308]]),
        )  # fmt: skip
    assert big[0, 0] == np.inf and big[0, 1:].tolist() == [-1.7e308, -1.7e308]
    assert np.isnan(logp[0, :2]).all() and logp[0, 2:].tolist() == [0.0, 0.0]
    assert np.isnan(d[:2]).any() and not np.isfinite(d[2]).all()  # sums beyond float64
    assert _tabular._abs_sum(np.array([[1.0, -2.0, 4.0]]), np.array([[1.0, 0.0, 1.0]])) == 5.0  # real positions


def test_without_numba_the_policy_takes_the_numpy_path(path):
    """A process where `numba` cannot be imported: policy.py imports the NumPy path, and its
    log-probs and gradient equal this process's (the kernels') to rounding, its draws bit for bit."""
    if path == "numpy":
        pytest.skip("one subprocess suffices")
    script = """
import importlib.abc, pickle, sys
class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "numba":
            raise ImportError("numba is blocked")
sys.meta_path.insert(0, Blocked())
import numpy as np
import minirl_lm.core.policy as P
assert P._tabular_logp.__module__ == "minirl_lm.core._tabular", P._tabular_logp.__module__
rng = np.random.default_rng(0)
pol = P.TabularPolicy(rng.normal(size=(5, 6)) * 3)
s, y = rng.integers(0, 5, (4, 3)), rng.integers(0, 6, (4, 3))
m = np.array([[1.0, 1, 1], [1, 1, 0], [1, 0, 0], [0, 0, 0]])
out = [pol.theta, pol.logp(s, y, m), pol.backward(s, y, m, rng.normal(size=(4, 3))), pol.sample(s, rng)]
sys.stdout.buffer.write(pickle.dumps(out))
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    got = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True)
    assert got.returncode == 0, got.stderr.decode()[-2000:]
    import pickle

    theta, (logp, seq), dtheta, draws = pickle.loads(got.stdout)
    rng = np.random.default_rng(0)
    pol = TabularPolicy(rng.normal(size=(5, 6)) * 3)
    s, y = rng.integers(0, 5, (4, 3)), rng.integers(0, 6, (4, 3))
    m = np.array([[1.0, 1, 1], [1, 1, 0], [1, 0, 0], [0, 0, 0]])
    assert np.array_equal(theta, pol.theta)
    want = pol.logp(s, y, m)
    assert rel_err(logp, want[0]) <= RTOL and rel_err(seq, want[1]) <= RTOL
    assert rel_err(dtheta, pol.backward(s, y, m, rng.normal(size=(4, 3)))) <= RTOL
    assert np.array_equal(draws, pol.sample(s, rng))


def test_ids_and_mask_values_out_of_range_are_named_with_the_offending_value():
    pol = TabularPolicy(np.zeros((3, 2)))
    s, y, one = np.array([[0, 1]]), np.array([[0, 1]]), np.ones((1, 2))

    def refused(*args):
        return str(pytest.raises(ValueError, pol.logp, *args).value)

    assert refused(np.array([[0, -1]]), y, one) == "states: expected ids in [0, 3) (padding too), got -1"
    assert refused(np.array([[0, 3]]), y, one) == "states: expected ids in [0, 3) (padding too), got 3"
    assert refused(s, np.array([[0, 2]]), one) == "tokens: expected ids in [0, 2) (padding too), got 2"
    three = np.array([[0, 1, 2]])
    assert refused(three, three % 2, np.array([[1.0, 0.0, 0.5]])) == (
        "mask: expected only 0 and 1, got value np.float64(0.5)"
    )
    rng = np.random.default_rng(0)
    for states, bad in (([3], 3), ([0, 3], 3), ([-1, 0], -1)):
        msg = str(pytest.raises(ValueError, pol.sample, np.array(states), rng).value)
        assert msg == f"states: expected ids in [0, 3), got {bad}"


def test_a_mask_given_as_a_list_or_ints_is_read_as_floats():
    pol = TabularPolicy(np.array([[0.0, np.log(3.0)]]))
    s, y, g = np.zeros((1, 2), int), np.array([[1, 0]]), np.array([[1.0, 2.0]])
    want, dtheta = pol.logp(s, y, np.array([[1.0, 0.0]])), pol.backward(s, y, np.array([[1.0, 0.0]]), g)
    for mask in ([[1, 0]], np.array([[1, 0]]), np.array([[1.0, 0.0]], np.float32)):
        got = pol.logp(s, y, mask)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
        assert pol.backward(s, y, mask, g).tolist() == dtheta.tolist()


def test_probs_of_a_row_far_below_the_others_are_its_own_softmax():
    pol = TabularPolicy(np.array([[0.0, 0.0], [-1000.0, -1000.0]]))  # each row shifted by its own max
    assert pol.probs().tolist() == [[0.5, 0.5], [0.5, 0.5]]
    assert softmax_table(np.array([[0.0, 0.0], [-1000.0, -1000.0]])).tolist() == [[0.5, 0.5], [0.5, 0.5]]


class _FixedDraws(np.random.Generator):
    """A Generator whose uniforms are all `u`: where the inverse CDF puts a draw on a boundary."""

    def __init__(self, u):
        super().__init__(np.random.PCG64(0))
        self.u = u

    def random(self, size=None):
        return np.full(size, self.u)


def test_a_draw_on_a_cdf_boundary_takes_the_next_token_as_rng_choice_does():
    pol = TabularPolicy(np.zeros((1, 2)))  # cdf (0.5, 1): u = 0.5 is token 1 (searchsorted 'right')
    assert pol.sample(np.zeros(2, int), _FixedDraws(0.5)).tolist() == [1, 1]
    big = pol.sample(np.zeros(2**21 + 1, int), _FixedDraws(0.5))  # 2^22 + 2 entries: one CDF per state
    assert big.dtype == np.int64 and big.min() == 1 and big.max() == 1


def test_the_last_cdf_entry_is_one_so_a_draw_below_one_is_a_token():
    pol = TabularPolicy(np.array([[0.0, 1.0, 2.0]]))  # its probabilities sum to 1 - 2^-53
    u = np.nextafter(1.0, 0.0)
    assert pol.sample(np.zeros(3, int), _FixedDraws(u)).tolist() == [2, 2, 2]
    assert pol.sample(np.zeros(2**21, int), _FixedDraws(u)).max() == 2


def _unbound(monkeypatch):
    """policy.py as imported in a fresh process: every kernel name held by its stand-in."""
    if not policy_mod._STAND_INS:
        pytest.skip("numba is not installed: no stand-ins")
    for name, stand_in in policy_mod._STAND_INS.items():
        monkeypatch.setattr(policy_mod, name, stand_in)
    return TabularPolicy(np.array([[0.0, np.log(3.0)]]))


def test_the_first_kernel_call_binds_every_stand_in_but_one_rebound_meanwhile(path, monkeypatch):
    if path == "numpy":
        pytest.skip("the stand-ins are the Numba path's")
    pol = _unbound(monkeypatch)
    assert sorted(policy_mod._STAND_INS) == sorted(NUMPY_PATH)
    mine = lambda w, shape: False  # noqa: E731  a name a test rebinds before the first call
    monkeypatch.setattr(policy_mod, "weights_fast", mine)
    logp, seq = pol.logp(np.zeros((1, 2), int), np.array([[1, 0]]), np.ones((1, 2)))
    np.testing.assert_allclose(logp, [[np.log(0.75), np.log(0.25)]], rtol=1e-14)  # the kernels' exp
    np.testing.assert_allclose(seq, [np.log(0.75 * 0.25)], rtol=1e-14)
    for name in NUMPY_PATH:
        where = kernels.tabular if name.startswith("_tabular") else kernels.validate
        assert getattr(policy_mod, name) is (mine if name == "weights_fast" else getattr(where, name)), name


def test_kernels_that_cannot_be_imported_bind_the_numpy_twins(path, monkeypatch):
    if path == "numpy":
        pytest.skip("the stand-ins are the Numba path's")
    pol = _unbound(monkeypatch)

    def blocked(name, package=None):
        raise ImportError(f"{name} is blocked")

    monkeypatch.setattr(policy_mod.importlib, "import_module", blocked)
    dtheta = pol.backward(np.zeros((1, 1), int), np.array([[1]]), np.ones((1, 1)), np.array([[2.0]]))
    assert dtheta.tolist() == [[-0.5, 0.5]]  # 2 (e_1 - (0.25, 0.75))
    assert all(getattr(policy_mod, name) is getattr(_tabular, name) for name in NUMPY_PATH)


def test_numba_is_looked_for_in_the_package_only_and_without_importing_it(monkeypatch):
    assert policy_mod._numba_installed() is True  # numba is installed here
    monkeypatch.setitem(sys.modules, "numba", None)  # blocked: find_spec finds nothing
    assert policy_mod._numba_installed() is False
    fake = type(sys)("numba")  # a module without a spec: find_spec raises ValueError
    fake.__spec__ = None
    monkeypatch.setitem(sys.modules, "numba", fake)
    assert policy_mod._numba_installed() is False
    monkeypatch.undo()
    monkeypatch.setattr(policy_mod, "__package__", "")  # a standalone copy: the NumPy path only
    assert policy_mod._numba_installed() is False
