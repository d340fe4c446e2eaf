"""The tabular policy theta (S, V) at states (B, T): log-probs and the backward, per visited state.

Logits are rows of a table, `theta[states]`, and many tokens share a state, so each *visited*
state's logsumexp is computed once: work `S_visited V + B T` instead of `B T V`. The backward
collects the weights per state before touching a row, eq. (per_state_backward):

```text
dtheta[s, :] = sum over real (b, t) with s_bt = s of  w[b, t] onehot(y_bt)  -  c[s] pi(. | s),
c[s] = sum over the same (b, t) of w[b, t]
```

The `*_per_token` variants are the naive form (a softmax row per token, `B T V` work), kept for
the benchmark. NumPy twins: `logprob.token_logp` on `theta[states]`, and
`logprob.token_logp_backward` scattered into rows with `np.add.at`.
"""

import numpy as np
from numba import njit

from minirl_lm.kernels.exp import _exp
from minirl_lm.kernels.rows import _row_lse, sequence_logp


@njit(cache=True)
def _visited_lse(theta, states, mask):
    """(visited (S,) bool, m (S,), lse (S,)) of each visited row: one logsumexp per state."""
    S = theta.shape[0]
    B, T = states.shape
    visited = np.zeros(S, dtype=np.bool_)
    for b in range(B):
        for t in range(T):
            if mask[b, t] != 0.0:
                visited[states[b, t]] = True
    m = np.zeros(S)  # (S,)
    lse = np.zeros(S)  # (S,)
    for s in range(S):
        if visited[s]:
            m[s], lse[s] = _row_lse(theta[s])
    return visited, m, lse


@njit(cache=True)
def _tabular_logp(theta, states, tokens, mask):
    """logp (B, T), seq_logp (B,) for the softmax table theta (S, V) at states (B, T).

    Each visited state's logsumexp is computed once: work S_visited * V + B * T.
    """
    B, T = states.shape
    visited, m, lse = _visited_lse(theta, states, mask)
    logp = np.zeros((B, T))  # (B, T)
    seq_logp = np.zeros(B)  # (B,), summed here: a second pass (`sequence_logp`) costs 6% of this kernel
    for b in range(B):
        acc = 0.0
        for t in range(T):
            if mask[b, t] == 0.0:
                continue
            s = states[b, t]
            logp[b, t] = (theta[s, tokens[b, t]] - m[s]) - lse[s]  # eq. (log_softmax)
            acc += logp[b, t]  # eq. (factorization)
        seq_logp[b] = acc
    return logp, seq_logp


@njit(cache=True)
def _tabular_backward(theta, states, tokens, mask, w):
    """dtheta (S, V): the scatter of w[b, t] (onehot(y_bt) - pi(.|s_bt)) into row s_bt.

    Per state: c[s] = sum of w over its real tokens and the onehot part accumulate in one pass
    over the tokens; then dtheta[s] = onehot_part - c[s] * softmax(theta[s]) for visited rows
    only (eq. (logsoftmax_grad) summed over the tokens sharing s). Unvisited rows stay 0.
    """
    S, V = theta.shape
    B, T = states.shape
    visited, m, lse = _visited_lse(theta, states, mask)
    dtheta = np.zeros((S, V))  # (S, V)
    c = np.zeros(S)  # (S,)
    for b in range(B):
        for t in range(T):
            if mask[b, t] == 0.0:
                continue
            s = states[b, t]
            dtheta[s, tokens[b, t]] += w[b, t]  # onehot part
            c[s] += w[b, t]
    for s in range(S):
        if visited[s]:
            cs, ms, ls = c[s], m[s], lse[s]
            row = theta[s]
            for v in range(V):
                dtheta[s, v] -= cs * _exp((row[v] - ms) - ls)  # - c[s] * pi(v|s)
    return dtheta


@njit(cache=True)
def _tabular_logp_per_token(theta, states, tokens, mask):
    """``tabular_logp`` recomputing the logsumexp at every token (B * T * V work)."""
    B, T = states.shape
    logp = np.zeros((B, T))  # (B, T)
    for b in range(B):
        for t in range(T):
            if mask[b, t] != 0.0:
                s = states[b, t]
                m, lse = _row_lse(theta[s])
                logp[b, t] = (theta[s, tokens[b, t]] - m) - lse
    return logp, sequence_logp(logp, mask)


@njit(cache=True)
def _tabular_backward_per_token(theta, states, tokens, mask, w):
    """``tabular_backward`` scattering a full softmax row per token (B * T * V work)."""
    S, V = theta.shape
    B, T = states.shape
    dtheta = np.zeros((S, V))  # (S, V)
    for b in range(B):
        for t in range(T):
            if mask[b, t] == 0.0:
                continue
            s = states[b, t]
            row = theta[s]
            m, lse = _row_lse(row)
            wb = w[b, t]
            for v in range(V):
                dtheta[s, v] -= wb * _exp((row[v] - m) - lse)
            dtheta[s, tokens[b, t]] += wb
    return dtheta
