"""The kinds and relations the kernels' checked entries declare (`minirl_lm.boundary`), and the
jitted passes they are made of.

The jitted cores trust their inputs: an id out of range reads outside the table, a shape
mismatch can crash the interpreter. So each entry of `kernels/__init__.py` declares its
arguments: `exact(...)` reads an array as it is (its dtype, its shape letters, C-contiguous; no
conversion and no copy: a kernel reads the memory as it is) in O(1), and one relation makes one
jitted pass over the (B, T) batch, `_batch_fault`, for the values (a 0/1 mask, ids in range at
the real positions, finite weights). After the core, one look at what the core wrote where a
fault of the table shows (a NaN or +inf logit, or an all -inf row, gives a NaN at the gathered
entry of its output row): `_logp_fault`, `_dlogits_fault`, `_dtheta_fault`, O(B T) (O(S) for
`dtheta`). An overflow of `dtheta` from finite weights is named after the entry.

No check reads the S x V table or the (B, T, V) logits beside the core: the boundary costs
O(B T) next to the core's O(B T V) (dense) or O(S_visited V + B T) (tabular); the benchmark
prints each entry's time over its core's. The messages are composed only on the error path.
"""

import numpy as np
from numba import njit

from minirl_lm.boundary import finite

__all__ = [
    "F64",
    "F32",
    "I64",
    "LOGITS",
    "exact",
    "logits_batch",
    "table_batch",
    "fits_out",
    "policy_batch_fast",
    "weights_fast",
    "exp_guard",
    "logp_guard",
    "dlogits_guard",
    "dtheta_guard",
]

F64, F32, I64 = (np.float64,), (np.float32,), (np.int64,)
_SUM = {"reassoc"}  # wsum is a bound: its order may change (it vectorizes); NaN stays NaN
LOGITS = (np.float64, np.float32)

# ---------------------------------------------------------------- the jitted passes


@njit(cache=True, fastmath=_SUM)
def _batch_fault(mask, tokens, V, states, S, w):
    """The values of a (B, T) batch: (code, b, t, wsum). code is that of its first fault in the
    order of the checks, 0 if none: 1 a mask entry that is not 0.0 or 1.0 (anywhere); at the
    real positions (mask != 0) 2 a state id outside [0, S), 3 a token id outside [0, V), 4 a NaN
    or +-inf weight. wsum = sum of |w| over the real positions (the bound `_dtheta_fault` uses).
    ``states`` and ``w`` may be None (the dense entries have no states, the forwards no weights;
    numba compiles one specialization per combination).

    The good path is one branch-free pass (it vectorizes); only a batch with a fault, or a
    non-finite wsum, is scanned again, position by position, to say where."""
    B, T = mask.shape
    bad = False
    wsum = 0.0
    for b in range(B):
        for t in range(T):
            x = mask[b, t]
            real = x != 0.0
            bad |= real & (x != 1.0)
            if states is not None:
                bad |= real & ((states[b, t] < 0) | (states[b, t] >= S))
            bad |= real & ((tokens[b, t] < 0) | (tokens[b, t] >= V))
            if w is not None:
                wsum += abs(w[b, t]) if real else 0.0
    if not bad and np.isfinite(wsum):
        return 0, 0, 0, wsum
    return _batch_fault_at(mask, tokens, V, states, S, w)


@njit(cache=True)
def _batch_fault_at(mask, tokens, V, states, S, w):
    """``_batch_fault``'s second pass: the first fault of each code, by position; the lowest code
    that has one wins (so a bad mask is named before an id it makes real)."""
    B, T = mask.shape
    first = np.full(5, B * T)  # (5,) flat position of each code's first fault
    wsum = 0.0
    for b in range(B):
        for t in range(T):
            i = b * T + t
            x = mask[b, t]
            if not (x == 0.0 or x == 1.0):
                first[1] = min(first[1], i)
            if x == 0.0:
                continue
            if states is not None and (states[b, t] < 0 or states[b, t] >= S):
                first[2] = min(first[2], i)
            if tokens[b, t] < 0 or tokens[b, t] >= V:
                first[3] = min(first[3], i)
            if w is not None:
                if not np.isfinite(w[b, t]):
                    first[4] = min(first[4], i)
                wsum += abs(w[b, t])
    for code in range(1, 5):
        if first[code] < B * T:
            return code, first[code] // T, first[code] % T, wsum
    return 0, 0, 0, wsum  # finite w whose sum of |w| overflows


@njit(cache=True)
def _logp_fault(logp, mask):
    """True iff a real position of logp (B, T) is NaN (a -inf is a gathered -inf logit);
    branch-free, so the pass vectorizes."""
    bad = False
    for b in range(logp.shape[0]):
        for t in range(logp.shape[1]):
            bad |= (mask[b, t] != 0.0) & (logp[b, t] != logp[b, t])
    return bad


@njit(cache=True)
def _dlogits_fault(out, tokens, mask):
    """True iff a real row of out (B, T, V) has a NaN or +inf at its own token (O(B T))."""
    for b in range(out.shape[0]):
        for t in range(out.shape[1]):
            if mask[b, t] != 0.0:
                g = out[b, t, tokens[b, t]]
                if g != g or g == np.inf:
                    return True
    return False


@njit(cache=True)
def _dtheta_fault(dtheta, states, tokens, mask, wsum):
    """True iff dtheta (S, V) of the tabular backward holds a NaN or +-inf; one read per row of
    dtheta (O(S), no pass over the batch) unless the weights are huge.

    Where dtheta can go non-finite: a bad row of theta (a NaN or +inf entry, or no finite one)
    has a NaN logsumexp and makes its whole row of dtheta NaN (c[s] NaN = NaN, 0 NaN = NaN); an
    overflowing c[s] makes its whole row non-finite (inf, or inf 0 = NaN); so entry 0 of each
    row shows both (an unvisited row is exactly 0). The onehot scatter sums w into the gathered
    entries only, and when the sum of |w| over the real positions, wsum, is below 1e307, no
    partial sum of w, nor |scatter| + |c[s] pi| <= 2 wsum, can overflow; above it every gathered
    entry is read too."""
    for s in range(dtheta.shape[0]):
        if not np.isfinite(dtheta[s, 0]):
            return True
    if wsum < 1e307:
        return False
    for b in range(states.shape[0]):
        for t in range(states.shape[1]):
            if mask[b, t] != 0.0 and not np.isfinite(dtheta[states[b, t], tokens[b, t]]):
                return True
    return False


@njit(cache=True, fastmath=_SUM)
def _abs_sum(w, mask):
    """sum of |w| over the real positions of w (B, T): the wsum of `_dtheta_fault`."""
    acc = 0.0
    for b in range(w.shape[0]):
        for t in range(w.shape[1]):
            acc += abs(w[b, t]) if mask[b, t] != 0.0 else 0.0
    return acc


@njit(cache=True)
def _dead_row(theta, ids):
    """The first id of ids (M,) whose row of theta (S, V) holds a NaN or +inf or no finite
    entry, or -1: each visited row is read once (O(S + M + S_visited V))."""
    seen = np.zeros(theta.shape[0], dtype=np.bool_)
    for i in range(ids.shape[0]):
        s = ids[i]
        if seen[s]:
            continue
        seen[s] = True
        finite = False
        for v in range(theta.shape[1]):
            x = theta[s, v]
            if x != x or x == np.inf:
                return s
            finite = finite or x != -np.inf
        if not finite:
            return s
    return -1


@njit(cache=True)
def _policy_batch_ok(states, S, tokens, V, mask):
    """True iff a (B, T) batch meets the policy's rules (its relation `_in_table`): ids in
    range at every position, padding too; a 0/1 mask (holes
    allowed). One branch-free pass; NaN fails every comparison."""
    ok = True
    for b in range(mask.shape[0]):
        for t in range(mask.shape[1]):
            x = mask[b, t]
            ok &= (states[b, t] >= 0) & (states[b, t] < S)
            ok &= (tokens[b, t] >= 0) & (tokens[b, t] < V)
            ok &= (x == 0.0) | (x == 1.0)
    return ok


@njit(cache=True)
def _all_finite(x):
    """True iff every entry of x (B, T) is finite (branch-free)."""
    ok = True
    for b in range(x.shape[0]):
        for t in range(x.shape[1]):
            ok &= np.isfinite(x[b, t])
    return ok


def _exact(x, dtype, shape):
    return isinstance(x, np.ndarray) and x.dtype == dtype and x.shape == shape and x.flags.c_contiguous


def policy_batch_fast(states, tokens, mask, S, V):
    """True iff (states, tokens, mask) are already what `TabularPolicy` would make of them
    (C-contiguous int64 / int64 / float64 (B, T), B, T >= 1) and valid: then the policy uses them
    as they are. False sends it to its full checks, which convert, or raise naming the argument."""
    shape = getattr(mask, "shape", None)
    return (
        _exact(mask, np.float64, shape)
        and len(shape) == 2
        and 0 not in shape
        and _exact(states, np.int64, shape)
        and _exact(tokens, np.int64, shape)
        and _policy_batch_ok(states, S, tokens, V, mask)
    )


def weights_fast(w, shape):
    """True iff w is already a finite C-contiguous float64 array of ``shape`` (B, T)."""
    return _exact(w, np.float64, shape) and _all_finite(w)


# ---------------------------------------------------------------- the kinds and relations (before the core)


def exact(shape, dtypes):
    """An ndarray of one of `dtypes` and `shape` (letters, as `boundary.array`'s), non-empty and
    C-contiguous, returned as it is (the entries are the relations' or the core's to read)."""
    letters = shape.split()

    def read(x, name, dims):
        if not isinstance(x, np.ndarray) or x.dtype not in dtypes:
            want = " or ".join(np.dtype(d).name for d in dtypes)
            if not isinstance(x, np.ndarray):
                raise TypeError(f"{name}: expected a numpy array of dtype {want}, got {type(x).__name__}")
            raise TypeError(
                f"{name}: expected dtype {want} (convert with np.ascontiguousarray(x, dtype=...)), got {x.dtype}"
            )
        if x.ndim != len(letters) or any(dims.get(k, n) != n for k, n in zip(letters, x.shape)):
            want = tuple(dims.get(k, k) for k in letters)
            raise ValueError(f"{name}: expected shape {str(want).replace(chr(39), '')}, got {x.shape}")
        if 0 in x.shape:
            raise ValueError(f"{name}: expected every axis of length >= 1, got shape {x.shape}")
        if not x.flags.c_contiguous:
            raise ValueError(
                f"{name}: expected a C-contiguous array (np.ascontiguousarray), got strides {x.strides}"
            )
        dims.update(zip(letters, x.shape))
        return x

    return read


def _batch(mask, tokens, V, states=None, S=0, w=None):
    """The message of the first fault of a (B, T) batch's values, or None (one jitted pass)."""
    code, b, t, _ = _batch_fault(mask, tokens, V, states, S, w)
    if code == 1:
        return "mask: expected only 0.0 and 1.0"
    if code in (2, 3):
        name, ids, high = ("states", states, S) if code == 2 else ("tokens", tokens, V)
        return f"{name}: expected ids in [0, {high}) at the real positions, got {int(ids[b, t])} at ({b}, {t})"
    if code == 4:
        return "w: expected finite weights at the real positions, got NaN or inf"
    return None


def logits_batch(logits, tokens, mask, w=None):
    """The dense batch's values: a 0/1 mask, token ids in [0, V) and finite weights (if any) at
    the real positions."""
    return _batch(mask, tokens, logits.shape[2], w=w)


def table_batch(theta, states, tokens, mask, w=None):
    """The tabular batch's values: a 0/1 mask, state ids in [0, S), token ids in [0, V) and
    finite weights (if any) at the real positions."""
    return _batch(mask, tokens, theta.shape[1], states=states, S=theta.shape[0], w=w)


def fits_out(out, logits):
    """`out`, if given, is a writeable C-contiguous buffer of the logits' dtype and shape, not
    sharing their memory."""
    if out is None:
        return None
    if not isinstance(out, np.ndarray) or out.dtype != logits.dtype or out.shape != logits.shape:
        return (
            f"out: expected a {logits.dtype} array of shape {logits.shape}, got "
            f"{getattr(out, 'dtype', type(out).__name__)} of shape {getattr(out, 'shape', None)}"
        )
    if not out.flags.c_contiguous or not out.flags.writeable:
        return "out: expected a writeable C-contiguous array"
    if np.shares_memory(out, logits):
        return "out: expected an array not sharing memory with logits"
    return None


# ---------------------------------------------------------------- the guards (after the core)

ROWS = "rows with a finite entry and no NaN or +inf"


def exp_guard(nan):
    """Raise naming ``x`` if the core counted a NaN in it (its exp would be NaN)."""
    if nan:
        raise ValueError("x: expected no NaN")


def logp_guard(logp, mask, name):
    """Raise naming ``name`` (the table or the logits) if a real position's log-prob is NaN."""
    if _logp_fault(logp, mask):
        raise ValueError(f"{name}: expected {ROWS} at the real positions, got a row whose result is NaN")


def dlogits_guard(out, tokens, mask):
    """Raise naming ``logits`` if a real row of the dense backward is NaN (``out`` is written)."""
    if _dlogits_fault(out, tokens, mask):
        raise ValueError(f"logits: expected {ROWS} at the real positions, got a row whose result is NaN")


def dtheta_guard(dtheta, entry, *, theta, states, tokens, mask, w):
    """Raise if ``dtheta`` is non-finite: naming ``theta`` if a visited row of it is bad (a NaN
    or +inf entry, or no finite one), else ``entry`` (finite weights whose sums overflow)."""
    if _dtheta_fault(dtheta, states, tokens, mask, _abs_sum(w, mask)):
        if _dead_row(theta, states[mask != 0.0]) != -1:
            raise ValueError(f"theta: expected {ROWS} at the visited states, got a non-finite gradient")
        finite(dtheta, entry, ["dtheta"], {"w": w[mask != 0.0]})
