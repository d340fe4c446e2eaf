"""Numba kernels: the hot core of the one primitive, fused; the only part that imports numba.

Each kernel has a NumPy twin in `minirl_lm.core.logprob` and is tested equal to it
(`tests/kernels/test_<file>.py`). What is computed (labels as in `logprob.py` and the page
"The one primitive"):

```text
logp[b, t] = z_y - m - log sum_v exp(z_v - m),  m = max_v z_v          eq. (log_softmax)
seq_logp[b] = sum_t mask[b, t] logp[b, t]                             eq. (factorization)
d logp / d z_v = 1[v = y] - softmax(z)_v                              eq. (logsoftmax_grad)
```

One concept a file (the page "Performance" says why each is written the way it is):

```text
exp.py       _exp, _exp32: the branch-free exponentials that LLVM vectorizes
rows.py      _row_max, _row_lse, _row_grad, _row_exp, _row_scale: one row of V logits; sequence_logp
dense.py     logits (B, T, V): _dense_logp, _dense_backward (+ the opt-in threaded variants)
tabular.py   theta (S, V) at states (B, T): one logsumexp per visited state
chunk.py     _chunk_logp_exp, _chunk_grad_from_exp (and the older pair): the rows of minirl_lm.scale.bigvocab
batch.py     _batch_marginals: a batch's joint outcome in one pass (minirl_lm.exact.batch)
validate.py  the njit passes and array checks the entries below use
```

Contract (`CONTRIBUTING.md`): the public functions here validate their inputs (C-contiguous
float64 / int64; the dense kernels also take float32 logits) and call the trusted jitted cores
`_name`, which do not re-check; the library's inner loops call those cores directly. Positions
with `mask == 0` are never read (their logits, states and tokens may hold anything), get
`logp == 0.0` and contribute nothing to any gradient. A row of logits may contain `-inf`
entries but needs one finite entry; a gathered `-inf` logit gives `logp = -inf` and a finite
gradient `w (1 - 0)` at that entry (its probability is 0). Here and below `w` is the upstream
gradient `g = dloss/dlogp`, `(B, T)`. A bad input is a ValueError/TypeError naming the argument;
nothing non-finite is returned except the documented logp = -inf of a gathered -inf logit.

Every kernel is a module-level `@njit(cache=True)` function calling the others directly: a
closure or a factory-made variant defeats (or worse, aliases) the on-disk cache, whose key
ignores the `parallel` and `fastmath` options. numba invalidates a cached kernel when its own
file changes, not when a kernel it calls from another file does: after editing `exp.py` or
`rows.py`, delete `minirl_lm/kernels/__pycache__` (or point `NUMBA_CACHE_DIR` elsewhere).
"""

from minirl_lm.boundary import boundary, flag
from minirl_lm.kernels.chunk import _chunk_grad_inplace, _chunk_logp  # noqa: F401
from minirl_lm.kernels.dense import (
    _dense_backward,
    _dense_backward_into,  # noqa: F401
    _dense_backward_parallel_into,  # noqa: F401
    _dense_logp,
    _dense_logp_parallel,
)
from minirl_lm.kernels.exp import _exp32_array, _exp_array
from minirl_lm.kernels.tabular import (
    _tabular_backward,
    _tabular_backward_per_token,
    _tabular_logp,
    _tabular_logp_per_token,
)
from minirl_lm.kernels.validate import (
    F32,
    F64,
    I64,
    LOGITS,
    dlogits_guard,
    dtheta_guard,
    exact,
    exp_guard,
    fits_out,
    logits_batch,
    logp_guard,
    table_batch,
)

__all__ = [
    "exp_array",
    "exp32_array",
    "dense_logp",
    "dense_backward",
    "tabular_logp",
    "tabular_logp_per_token",
    "tabular_backward",
    "tabular_backward_per_token",
]

# the batches the entries read, as they are (no copy): `exact` in validate.py
DENSE = dict(logits=exact("B T V", LOGITS), tokens=exact("B T", I64), mask=exact("B T", F64))
TABLE = dict(theta=exact("S V", F64), states=exact("B T", I64), tokens=exact("B T", I64), mask=exact("B T", F64))
W = exact("B T", F64)  # the upstream gradient g = dloss/dlogp


@boundary(x=exact("n", F64), returns=None)  # a NaN in x: exp_guard names x
def exp_array(x):
    """The vectorizable `_exp` over an array (for tests and benchmarks).

    Args:
        x: `(n,)` float64, C-contiguous, no NaN.

    Returns:
        `(n,)` float64 `exp(x)`.

    Raises:
        ValueError: `x` holds a NaN or is not a 1-D float64 array.
    """
    out, nan = _exp_array(x)
    exp_guard(nan)
    return out


@boundary(x=exact("n", F32), returns=None)
def exp32_array(x):
    """The float32 `_exp32` over an array (for tests and benchmarks): `exp_array` in float32.

    Its argument, return and errors are those of `exp_array` with float32 for float64.
    """
    out, nan = _exp32_array(x)
    exp_guard(nan)
    return out


@boundary(**DENSE, parallel=flag, where=[logits_batch], returns=None)  # -inf: a gathered -inf logit
def dense_logp(logits, tokens, mask, *, parallel=False):
    """Token and sequence log-probs from dense logits, fused: no `(B, T, V)` temporary.

    Validated; the trusted cores are `_dense_logp` and `_dense_logp_parallel`.

    Args:
        logits: `(B, T, V)` float64 or float32, C-contiguous.
        tokens: `(B, T)` int64 ids in `[0, V)` at real positions.
        mask: `(B, T)` float64 0/1, holes allowed.
        parallel: spread the rows over all of numba's threads (opt-in; the same bits).

    Returns:
        `(logp, seq_logp)`: `logp` `(B, T)` float64, 0.0 at padding; `seq_logp` `(B,)`, the
        masked sum over `t`.
    """
    logp, seq = (_dense_logp_parallel if parallel else _dense_logp)(logits, tokens, mask)
    logp_guard(logp, mask, "logits")
    return logp, seq


@boundary(**DENSE, w=W, parallel=flag, where=[logits_batch, fits_out], returns=None)  # NaN rows: dlogits_guard
def dense_backward(logits, tokens, mask, w, *, out=None, parallel=False):
    """The backward of `dense_logp`, eq. (logsoftmax_grad):
    `dlogits[b, t] = w[b, t] mask[b, t] (onehot(y_bt) - softmax(logits[b, t]))`.

    Without `out` the output is allocated by NumPy, not inside the kernel: NumPy asks the kernel
    for transparent huge pages on large arrays, numba's allocator does not, and a fresh 32 MB
    output page-faulted in 4 KB pages cost twice the arithmetic (measured on the page
    "Performance"). Validated; the trusted core is `_dense_backward`. A call that raises after
    the kernel ran, on a NaN row, has written `out`.

    Args:
        logits: `(B, T, V)` float64 or float32, C-contiguous.
        tokens: `(B, T)` int64 ids in `[0, V)` at real positions.
        mask: `(B, T)` float64 0/1, holes allowed.
        w: `(B, T)` float64 upstream gradient `g = dloss/dlogp`, finite at real positions.
        out: optional C-contiguous `(B, T, V)` array of the logits' dtype to write into (reuse
            it across steps).
        parallel: spread the rows over all of numba's threads (opt-in; the same bits).

    Returns:
        `(B, T, V)` `dlogits`, of the logits' dtype (`out` itself when given).
    """
    out = _dense_backward(logits, tokens, mask, w, out, parallel)
    dlogits_guard(out, tokens, mask)
    return out


@boundary(**TABLE, where=[table_batch], returns=None)
def tabular_logp(theta, states, tokens, mask):
    """Token and sequence log-probs of a softmax table at the visited states.

    Each visited state's logsumexp is computed once: work `S_visited V + B T`. Validated; the
    trusted core is `_tabular_logp`.

    Args:
        theta: `(S, V)` float64 logits, C-contiguous.
        states: `(B, T)` int64 state ids in `[0, S)` at real positions.
        tokens: `(B, T)` int64 token ids in `[0, V)` at real positions.
        mask: `(B, T)` float64 0/1, holes allowed.

    Returns:
        `(logp, seq_logp)`: `(B, T)`, 0.0 at padding, and `(B,)`.
    """
    logp, seq = _tabular_logp(theta, states, tokens, mask)
    logp_guard(logp, mask, "theta")
    return logp, seq


@boundary(**TABLE, where=[table_batch], returns=None)
def tabular_logp_per_token(theta, states, tokens, mask):
    """`tabular_logp` recomputing the logsumexp at every token (`B T V` work; for the benchmark).

    Args:
        theta: `(S, V)` float64 logits.
        states: `(B, T)` int64 state ids.
        tokens: `(B, T)` int64 token ids.
        mask: `(B, T)` float64 0/1.

    Returns:
        `(logp (B, T), seq_logp (B,))`.
    """
    logp, seq = _tabular_logp_per_token(theta, states, tokens, mask)
    logp_guard(logp, mask, "theta")
    return logp, seq


@boundary(**TABLE, w=W, where=[table_batch], returns=None)  # overflow: dtheta_guard
def tabular_backward(theta, states, tokens, mask, w):
    """`dtheta`: the scatter of `w[b, t] (onehot(y_bt) - pi(. | s_bt))` into row `s_bt`.

    Validated; the trusted core is `_tabular_backward`.

    Args:
        theta: `(S, V)` float64 logits, C-contiguous.
        states: `(B, T)` int64 state ids in `[0, S)` at real positions.
        tokens: `(B, T)` int64 token ids in `[0, V)` at real positions.
        mask: `(B, T)` float64 0/1, holes allowed.
        w: `(B, T)` float64 upstream gradient `g = dloss/dlogp`, finite at real positions.

    Returns:
        `(S, V)` float64 `dtheta`.
    """
    dtheta = _tabular_backward(theta, states, tokens, mask, w)
    dtheta_guard(dtheta, "tabular_backward", theta=theta, states=states, tokens=tokens, mask=mask, w=w)
    return dtheta


@boundary(**TABLE, w=W, where=[table_batch], returns=None)  # overflow: dtheta_guard
def tabular_backward_per_token(theta, states, tokens, mask, w):
    """`tabular_backward` scattering a full softmax row per token (`B T V` work; for the benchmark).

    Args:
        theta: `(S, V)` float64 logits.
        states: `(B, T)` int64 state ids.
        tokens: `(B, T)` int64 token ids.
        mask: `(B, T)` float64 0/1.
        w: `(B, T)` float64 upstream gradient `g = dloss/dlogp`.

    Returns:
        `(S, V)` float64 `dtheta`.
    """
    dtheta = _tabular_backward_per_token(theta, states, tokens, mask, w)
    dtheta_guard(dtheta, "tabular_backward_per_token", theta=theta, states=states, tokens=tokens, mask=mask, w=w)
    return dtheta
