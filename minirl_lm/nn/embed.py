r"""Token and position embeddings: the network's first layer, forward and backward.

    x[b, i] = wte[ids[b, i]] + wpe[i]                                   eq. (embed)
    dwte[v] = sum over (b, i) with ids[b, i] = v of dx[b, i]            eq. (embed_grad)
    dwpe[i] = sum_b dx[b, i]                                            eq. (embed_grad)

A row of `wte` gets the sum of the gradients of every position that holds its token (a
scatter-add: tokens repeat); `wpe` rows past the sequence's length get zero.
"""

import numpy as np

from minirl_lm.boundary import array, boundary
from minirl_lm.nn.layer import ACTS, Cache, cache_of, ids_in

__all__ = ["embed_forward", "embed_backward"]


def _ids_fit(wte, wpe, ids):
    """`ids` are rows of `wte`, and at most `max_len` positions (the rows of `wpe`)."""
    if ids.shape[1] > wpe.shape[0]:
        return f"ids: expected at most max_len = {wpe.shape[0]} positions, got {ids.shape[1]}"
    return ids_in("ids", ids, wte.shape[0])


@boundary(
    wte=array("V D"),
    wpe=array("M D"),
    ids=array("B L", integer=True, low=0),
    where=[_ids_fit],
    returns="x cache",
)
def embed_forward(wte, wpe, ids):
    """Token plus position embedding.

    Args:
        wte: (V, d) token embeddings.
        wpe: (max_len, d) position embeddings.
        ids: (B, L) int token ids in [0, V), L <= max_len.

    Returns:
        ``(x, cache)``: x (B, L, d) float64 and the cache `embed_backward` reads.
    """
    L = ids.shape[1]
    x = wte[ids]  # (B, L, d)
    x += wpe[:L]  # eq. (embed)
    return x, Cache(("embed", x.shape, ids, wte.shape[0], wpe.shape[0]))


@boundary(cache=cache_of("embed"), dy=ACTS, returns="dwte dwpe")
def embed_backward(dy, cache):
    """Gradients of the embedding tables.

    Args:
        dy: (B, L, d) gradient of the loss in the embedding's output.
        cache: what `embed_forward` returned beside its output.

    Returns:
        ``(dwte, dwpe)``, (V, d) and (max_len, d).
    """
    _, (B, L, d), ids, V, max_len = cache
    dwte = np.zeros((V, d))
    np.add.at(dwte, ids.ravel(), dy.reshape(-1, d))  # eq. (embed_grad): scatter-add over positions
    dwpe = np.zeros((max_len, d))
    dwpe[:L] = dy.sum(axis=0)  # eq. (embed_grad)
    return dwte, dwpe
