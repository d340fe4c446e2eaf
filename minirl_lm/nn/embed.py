r"""Token and position embeddings: the network's first layer, forward and backward.

    x[b, i] = wte[ids[b, i]] + wpe[i]                                   eq. (embed)
    dwte[v] = sum over (b, i) with ids[b, i] = v of dx[b, i]            eq. (embed_grad)
    dwpe[i] = sum_b dx[b, i]                                            eq. (embed_grad)

A row of `wte` gets the sum of the gradients of every position that holds its token (a
scatter-add: tokens repeat); `wpe` rows past the sequence's length get zero.
"""

import numpy as np

from minirl_lm.nn.checks import embed_args, grad_args


def embed_forward(wte, wpe, ids):
    """Token plus position embedding.

    Args:
        wte: (V, d) token embeddings.
        wpe: (max_len, d) position embeddings.
        ids: (B, L) int token ids in [0, V), L <= max_len.

    Returns:
        ``(x, cache)``: x (B, L, d) float64 and the cache `embed_backward` reads.
    """
    return forward(*embed_args(wte, wpe, ids))


def forward(wte, wpe, ids):
    """`embed_forward` without checks."""
    L = ids.shape[1]
    x = wte[ids]  # (B, L, d)
    x += wpe[:L]  # eq. (embed)
    return x, ("embed", x.shape, ids, wte.shape[0], wpe.shape[0])


def embed_backward(dy, cache):
    """Gradients of the embedding tables.

    Args:
        dy: (B, L, d) gradient of the loss in the embedding's output.
        cache: what `embed_forward` returned beside its output.

    Returns:
        ``(dwte, dwpe)``, (V, d) and (max_len, d).
    """
    return backward(*grad_args(dy, cache, "embed"))


def backward(dy, cache):
    """`embed_backward` without checks."""
    _, (B, L, d), ids, V, max_len = cache
    dwte = np.zeros((V, d))
    np.add.at(dwte, ids.ravel(), dy.reshape(-1, d))  # eq. (embed_grad): scatter-add over positions
    dwpe = np.zeros((max_len, d))
    dwpe[:L] = dy.sum(axis=0)  # eq. (embed_grad)
    return dwte, dwpe
