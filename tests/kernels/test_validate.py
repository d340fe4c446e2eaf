"""kernels/validate.py: the jitted passes the entries' checks are made of. The one pass over the
batch finds every fault and names the first in the order of the checks; the guards' bounds."""

import numpy as np
import pytest

from minirl_lm.kernels.validate import (
    _abs_sum,
    _batch_fault,
    _dead_row,
    _dlogits_fault,
    _dtheta_fault,
    _logp_fault,
)

MASK = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
IDS = np.zeros((2, 3), np.int64)


def fault(mask=MASK, tokens=IDS, V=4, states=IDS, S=3, w=None):
    return _batch_fault(mask, tokens, V, states, S, w)


def test_a_clean_batch_has_no_fault_and_sums_w_at_the_real_positions():
    w = np.array([[1.0, -2.0, np.nan], [0.5, np.inf, 7.0]])  # garbage at padding
    assert fault(w=w) == (0, 0, 0, 3.5)
    assert fault(states=None)[:3] == (0, 0, 0) and fault(states=None, w=w)[3] == 3.5
    assert _abs_sum(w, MASK) == 3.5


@pytest.mark.parametrize(
    "kw, want",
    [
        (dict(mask=np.array([[1.0, 0.5, 0.0], [1.0, 0.0, 0.0]])), (1, 0, 1)),
        (dict(mask=np.array([[1.0, 1.0, 0.0], [1.0, 0.0, np.nan]])), (1, 1, 2)),
        (dict(states=np.array([[0, 0, 9], [0, 3, 9]])), None),  # padding: not read
        (dict(states=np.array([[0, 0, 0], [3, 0, 0]])), (2, 1, 0)),
        (dict(tokens=np.array([[0, -1, 0], [4, 0, 0]])), (3, 0, 1)),
        (dict(w=np.array([[1.0, np.nan, 0.0], [np.inf, 0.0, 0.0]])), (4, 0, 1)),
    ],
)
def test_each_fault_and_where(kw, want):
    got = fault(**kw)
    assert got[:3] == (want or (0, 0, 0))


def test_the_first_check_is_named_first_whatever_the_position():
    """A bad mask at the end is named before a bad token at the start, as the checks are ordered
    (the mask says which positions are real)."""
    mask = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 2.0]])
    tokens = np.array([[9, 0, 0], [0, 0, 0]])
    states = np.array([[0, 5, 0], [0, 0, 0]])
    assert fault(mask=mask, tokens=tokens, states=states)[:3] == (1, 1, 2)
    assert fault(tokens=tokens, states=states)[:3] == (2, 0, 1)


def test_finite_weights_whose_sum_overflows_are_no_fault_but_an_infinite_bound():
    w = np.array([[1e308, 1e308, 0.0], [1e308, 0.0, 0.0]])
    code, _, _, wsum = fault(w=w)
    assert code == 0 and wsum == np.inf


def test_the_forward_guards():
    logp = np.array([[-1.0, -np.inf, np.nan], [0.0, np.nan, np.nan]])  # NaN at padding only
    assert not _logp_fault(logp, MASK)
    logp[0, 1] = np.nan
    assert _logp_fault(logp, MASK)
    out = np.zeros((2, 3, 4))
    out[0, 2] = np.nan  # a padding row
    assert not _dlogits_fault(out, IDS, MASK)
    out[1, 0, 0] = np.inf
    assert _dlogits_fault(out, IDS, MASK)


def test_the_dtheta_guard_reads_entry_0_of_each_row_below_the_bound():
    states = np.array([[0, 0, 0], [1, 0, 0]])
    tokens = np.array([[0, 1, 0], [2, 0, 0]])
    d = np.zeros((3, 4))
    d[0, 1] = np.inf  # gathered by the second token of state 0
    d[2, 3] = np.nan  # neither entry 0 nor gathered
    assert not _dtheta_fault(d, states, tokens, MASK, 1.0)
    assert _dtheta_fault(d, states, tokens, MASK, 1e307)  # huge weights: every gathered one
    d[1, 0] = np.nan
    assert _dtheta_fault(d, states, tokens, MASK, 1.0)


def test_dead_row_reads_the_visited_rows_only():
    theta = np.array([[0.0, -np.inf], [np.nan, 0.0], [-np.inf, -np.inf], [np.inf, 0.0]])
    assert _dead_row(theta, np.array([0, 0])) == -1
    for s in (1, 2, 3):
        assert _dead_row(theta, np.array([0, s, 0])) == s


def numpy_rules(states, tokens, mask, S, V):
    """The full checks, as the engine's kinds: ids in range, a 0/1 mask of their shape. True iff
    they accept."""
    from minirl_lm.boundary import array

    dims = {}
    try:
        array("B T", integer=True, low=0, high=S - 1)(states, "states", dims)
        array("B T", integer=True, low=0, high=V - 1)(tokens, "tokens", dims)
        array("B T", values=(0.0, 1.0))(mask, "mask", dims)
    except ValueError:
        return False
    return True


def test_the_policys_fast_path_accepts_exactly_what_its_full_checks_accept():
    """policy_batch_fast (one jitted pass) against the engine's kinds (ids in range, a 0/1 mask) on batches
    with one random corruption each: never True where the full checks raise."""
    from minirl_lm.kernels.validate import policy_batch_fast

    rng = np.random.default_rng(0)
    S, V = 5, 4
    for i in range(400):
        B, T = rng.integers(1, 4, 2)
        states, tokens = rng.integers(0, S, (B, T)), rng.integers(0, V, (B, T))
        lengths = rng.integers(0, T + 1, B)
        mask = (np.arange(T) < lengths[:, None]).astype(float)
        b, t = rng.integers(0, B), rng.integers(0, T)
        kind = i % 6
        if kind == 1:
            states[b, t] = rng.choice([-1, S])
        elif kind == 2:
            tokens[b, t] = rng.choice([-1, V])
        elif kind == 3:
            mask[b, t] = rng.choice([0.5, np.nan, np.inf, -1.0])
        elif kind == 4 and t > 0:
            mask[b, :] = 0.0
            mask[b, t] = 1.0  # a 1 after a 0: not right-padded
        elif kind == 5:
            mask[b, t] = 1.0 - mask[b, t]
        assert policy_batch_fast(states, tokens, mask, S, V) == numpy_rules(states, tokens, mask, S, V)
