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
from quiet import kind_message as _message

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


# ------------------------------------------------ the kinds, the relations and the guards, directly
# (the entries build their kinds at import, before a mutant is active: these call them themselves)


def test_exact_returns_the_array_as_it_is_and_binds_its_dims():
    from minirl_lm.kernels.validate import LOGITS, exact

    read = exact("B T", LOGITS)
    x = np.zeros((2, 3))
    dims = {}
    assert read(x, "z", dims) is x and dims == {"B": 2, "T": 3}
    y = np.zeros((2, 3), np.float32)
    assert read(y, "z", dims) is y and dims == {"B": 2, "T": 3}  # bound dims that agree
    n = np.arange(4, dtype=np.int64)
    dims = {"T": 9}
    assert exact("n", (np.int64,))(n, "z", dims) is n and dims == {"T": 9, "n": 4}


def test_exact_refuses_exactly():
    from minirl_lm.kernels.validate import F64, I64, LOGITS, exact

    read = exact("B T", LOGITS)
    assert _message(read, [[1.0]]) == "TypeError: z: expected a numpy array of dtype float64 or float32, got list"
    assert _message(exact("B T", F64), 1.0) == "TypeError: z: expected a numpy array of dtype float64, got float"
    assert _message(read, np.zeros((2, 3), np.int64)) == (
        "TypeError: z: expected dtype float64 or float32 (convert with np.ascontiguousarray(x, dtype=...)), "
        "got int64"
    )
    assert _message(exact("B T", I64), np.zeros((2, 3))) == (
        "TypeError: z: expected dtype int64 (convert with np.ascontiguousarray(x, dtype=...)), got float64"
    )
    assert _message(read, np.zeros(3)) == "ValueError: z: expected shape (B, T), got (3,)"
    assert _message(read, np.zeros((2, 3, 1))) == "ValueError: z: expected shape (B, T), got (2, 3, 1)"
    assert _message(read, np.zeros((2, 3)), {"T": 4}) == "ValueError: z: expected shape (B, 4), got (2, 3)"
    assert _message(read, np.zeros((2, 3)), {"B": 1, "T": 3}) == "ValueError: z: expected shape (1, 3), got (2, 3)"
    assert _message(read, np.zeros((0, 3))) == (
        "ValueError: z: expected every axis of length >= 1, got shape (0, 3)"
    )
    assert _message(read, np.zeros((2, 0)), {"T": 0}) == (
        "ValueError: z: expected every axis of length >= 1, got shape (2, 0)"
    )
    assert _message(read, np.zeros((2, 6))[:, ::2]) == (
        "ValueError: z: expected a C-contiguous array (np.ascontiguousarray), got strides (48, 16)"
    )
    dims = {"B": 2}
    _message(read, np.zeros((2, 6))[:, ::2], dims)
    assert dims == {"B": 2}  # a refused array binds nothing


def test_weights_fast_takes_only_a_finite_c_contiguous_float64_array_of_the_shape():
    from minirl_lm.kernels.validate import weights_fast

    w = np.array([[1.0, -2.0, 0.0], [0.5, 3.0, 4.0]])
    assert weights_fast(w, (2, 3)) is True
    assert not weights_fast(w, (3, 2)) and not weights_fast(w, (2, 3, 1))
    assert not weights_fast(w.tolist(), (2, 3)) and not weights_fast(w.astype(np.float32), (2, 3))
    assert not weights_fast(np.zeros((2, 6))[:, ::2], (2, 3))
    for bad in (np.nan, np.inf, -np.inf):
        v = w.copy()
        v[1, 2] = bad
        assert not weights_fast(v, (2, 3))


def test_policy_batch_fast_takes_only_exact_valid_batches():
    from minirl_lm.kernels.validate import policy_batch_fast

    states = np.array([[0, 4, 1], [2, 0, 0]])
    tokens = np.array([[3, 0, 1], [0, 2, 0]])
    mask = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert policy_batch_fast(states, tokens, mask, 5, 4) is True
    assert policy_batch_fast(states[:1], tokens[:1], mask[:1], 5, 4) is True  # B = 1
    col = [np.ascontiguousarray(a[:, :1]) for a in (states, tokens, mask)]
    assert policy_batch_fast(*col, 5, 4) is True  # T = 1
    assert not policy_batch_fast(states, tokens, mask, 4, 4) and not policy_batch_fast(states, tokens, mask, 5, 3)
    assert not policy_batch_fast(states, tokens, mask.tolist(), 5, 4)
    assert not policy_batch_fast(states, tokens, mask.astype(np.float32), 5, 4)
    assert not policy_batch_fast(states.astype(np.int32), tokens, mask, 5, 4)
    assert not policy_batch_fast(states, tokens.astype(np.int32), mask, 5, 4)
    assert not policy_batch_fast(states, tokens[:, :2], mask, 5, 4)
    assert not policy_batch_fast(states[:, :2], tokens, mask, 5, 4)
    wide = np.zeros((2, 6), np.int64)
    assert not policy_batch_fast(wide[:, ::2], tokens, mask, 5, 4)
    assert not policy_batch_fast(states, wide[:, ::2], mask, 5, 4)
    assert not policy_batch_fast(states, tokens, np.zeros((2, 6))[:, ::2], 5, 4)
    assert not policy_batch_fast(states[0], tokens[0], mask[0], 5, 4)  # one axis
    assert not policy_batch_fast(states[None], tokens[None], mask[None], 5, 4)  # three axes
    empty = np.zeros((0, 3), np.int64)
    assert not policy_batch_fast(empty, empty, np.zeros((0, 3)), 5, 4)
    assert not policy_batch_fast(empty.T, empty.T, np.zeros((3, 0)), 5, 4)


L = np.zeros((2, 3, 4))


def test_the_batch_relations_name_the_first_fault_exactly():
    from minirl_lm.kernels.validate import logits_batch, table_batch

    theta = np.zeros((3, 5))
    assert logits_batch(L, IDS, MASK) is None and table_batch(theta, IDS, IDS, MASK) is None
    w = np.array([[1.0, -2.0, np.nan], [0.5, np.inf, 7.0]])  # garbage at padding
    assert logits_batch(L, IDS, MASK, w) is None and table_batch(theta, IDS, IDS, MASK, w=w) is None
    assert logits_batch(L, IDS, np.array([[1.0, 0.5, 0.0], [1.0, 0.0, 0.0]])) == "mask: expected only 0.0 and 1.0"
    assert table_batch(theta, IDS, IDS, np.array([[1.0, 2.0, 0.0], [1.0, 0.0, 0.0]])) == (
        "mask: expected only 0.0 and 1.0"
    )
    # V is the logits' last axis, S and V the table's axes
    assert logits_batch(L, np.array([[0, 4, 0], [0, 0, 0]]), MASK) == (
        "tokens: expected ids in [0, 4) at the real positions, got 4 at (0, 1)"
    )
    assert logits_batch(L, np.array([[0, 0, 9], [-2, 0, 0]]), MASK) == (
        "tokens: expected ids in [0, 4) at the real positions, got -2 at (1, 0)"
    )
    assert table_batch(theta, IDS, np.array([[0, 0, 0], [5, 0, 0]]), MASK) == (
        "tokens: expected ids in [0, 5) at the real positions, got 5 at (1, 0)"
    )
    assert table_batch(theta, IDS, np.array([[0, 4, 0], [0, 0, 0]]), MASK) is None
    assert table_batch(theta, np.array([[0, 2, 0], [3, 9, 0]]), IDS, MASK) == (
        "states: expected ids in [0, 3) at the real positions, got 3 at (1, 0)"
    )
    bad_w = np.array([[1.0, 0.0, 0.0], [-np.inf, 0.0, 0.0]])
    msg = "w: expected finite weights at the real positions, got NaN or inf"
    assert logits_batch(L, IDS, MASK, w=bad_w) == msg and table_batch(theta, IDS, IDS, MASK, w=bad_w) == msg
    # finite weights whose sum overflows are no fault of the batch (the guard after the core names them)
    assert logits_batch(L, IDS, MASK, w=np.full((2, 3), 1e308)) is None


def test_fits_out_exactly():
    from minirl_lm.kernels.validate import fits_out

    assert fits_out(None, L) is None and fits_out(np.zeros((2, 3, 4)), L) is None
    assert fits_out([1.0], L) == "out: expected a float64 array of shape (2, 3, 4), got list of shape None"
    assert fits_out(np.zeros((2, 3, 4), np.float32), L) == (
        "out: expected a float64 array of shape (2, 3, 4), got float32 of shape (2, 3, 4)"
    )
    assert fits_out(np.zeros((2, 3, 5)), L) == (
        "out: expected a float64 array of shape (2, 3, 4), got float64 of shape (2, 3, 5)"
    )
    assert fits_out(np.zeros((2, 3, 4), np.float32), L.astype(np.float32)) is None
    assert fits_out(np.zeros((2, 3, 8))[:, :, ::2], L) == "out: expected a writeable C-contiguous array"
    frozen = np.zeros((2, 3, 4))
    frozen.flags.writeable = False
    assert fits_out(frozen, L) == "out: expected a writeable C-contiguous array"
    assert fits_out(L, L) == "out: expected an array not sharing memory with logits"
    big = np.zeros((4, 3, 4))
    assert fits_out(big[2:], big[:2]) is None
    assert fits_out(big[:2], big[:2].copy()) is None


def test_exp_guard_raises_on_a_counted_nan():
    from minirl_lm.kernels.validate import exp_guard

    assert exp_guard(0) is None and exp_guard(False) is None
    for nan in (1, 2, True):
        with pytest.raises(ValueError) as e:
            exp_guard(nan)
        assert str(e.value) == "x: expected no NaN"


ROWS_MSG = (
    "expected rows with a finite entry and no NaN or +inf at the real positions, got a row whose result is NaN"
)


def test_logp_and_dlogits_guards_name_the_table_or_the_logits_exactly():
    from minirl_lm.kernels.validate import dlogits_guard, logp_guard

    logp = np.array([[-1.0, -np.inf, np.nan], [0.0, np.nan, np.nan]])  # NaN at padding only
    assert logp_guard(logp, MASK, "theta") is None
    logp[1, 0] = np.nan
    for name in ("theta", "logits"):
        with pytest.raises(ValueError) as e:
            logp_guard(logp, MASK, name)
        assert str(e.value) == f"{name}: {ROWS_MSG}"
    out = np.zeros((2, 3, 4))
    out[0, 2] = np.nan
    assert dlogits_guard(out, IDS, MASK) is None
    out[0, 1, 0] = np.nan
    with pytest.raises(ValueError) as e:
        dlogits_guard(out, IDS, MASK)
    assert str(e.value) == f"logits: {ROWS_MSG}"


def test_dtheta_guard_names_a_bad_visited_row_of_theta_else_the_entry():
    from minirl_lm.kernels.validate import dtheta_guard

    states = np.array([[0, 1, 2], [1, 0, 2]])  # state 2 at padding only
    tokens = np.array([[0, 1, 0], [2, 0, 0]])
    theta = np.zeros((3, 4))
    theta[2, 1] = np.nan  # a bad row, not visited
    small = np.array([[1.0, -2.0, -5.0], [0.5, 0.0, 0.0]])
    kw = dict(theta=theta, states=states, tokens=tokens, mask=MASK)
    d = np.zeros((3, 4))
    assert dtheta_guard(d, "entry", w=small, **kw) is None
    d[1, 1] = np.inf  # gathered at (0, 1): read only when the weights are huge
    assert dtheta_guard(d, "entry", w=small, **kw) is None
    huge = np.array([[1e308, 1e308, -5.0], [1e307, 0.0, 0.0]])
    with pytest.raises(ValueError) as e:
        dtheta_guard(d, "tabular_backward", w=huge, **kw)
    assert str(e.value) == (
        "tabular_backward: expected a finite dtheta, got inf (beyond float64) from w in [1e+307, 1e+308]"
    )
    d[1, 0] = np.nan  # entry 0 of a row: always read
    with pytest.raises(ValueError) as e:
        dtheta_guard(d, "entry", w=small, **kw)
    assert str(e.value) == "entry: expected a finite dtheta, got NaN (beyond float64) from w in [-2, 1]"
    theta[1, 3] = np.inf  # now a visited row is bad: theta is named
    with pytest.raises(ValueError) as e:
        dtheta_guard(d, "entry", w=small, **kw)
    assert str(e.value) == (
        "theta: expected rows with a finite entry and no NaN or +inf at the visited states, "
        "got a non-finite gradient"
    )
