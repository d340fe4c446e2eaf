r"""Sampling responses from the model, with a key/value cache and without one.

At each step the last position's hidden state gives the next-token distribution,

    pi(. | s_t) = softmax(head h_t),   y_t ~ pi(. | s_t)                      eq. (sample)

drawn by inversion, `y_t = #{v : F_v <= U}` with `F` the cumulative sum and `U ~ U[0, 1)` from
`rng`, one uniform per row and step. `generate` feeds the prompt once, then one token per step,
each block's attention reading the keys and values of earlier positions from its cache (one
array per block, allocated once and filled position by position; the last block computes the
last position only, the one that draws):
O(P + T) position-steps instead of O((P + T)^2) for `generate_recompute`, which runs the whole
prefix through `Transformer`'s forward at every step. Both draw the same uniforms, so with the
same `rng` state they return the same tokens (tests/nn/test_generate.py checks it).

After `eos` (when given) a row is padding: token `eos`, mask 0, logp 0.
"""

import numpy as np

from minirl_lm.nn import block, norm
from minirl_lm.nn.checks import generate_args


def _draw(h, head, U):
    """Next tokens from the last hidden states h (B, d): (tokens (B,), their log-probs (B,))."""
    z = h @ head.T  # (B, V) eq. (sample)
    z = z - z.max(axis=1, keepdims=True)
    logpi = z - np.log(np.exp(z).sum(axis=1, keepdims=True))  # (B, V)
    F = np.cumsum(np.exp(logpi), axis=1)  # (B, V)
    y = np.minimum((F <= U[:, None]).sum(axis=1), head.shape[0] - 1)  # (B,) inversion
    return y, logpi[np.arange(y.size), y]


def _finish(tokens, logp, eos):
    """The mask of a (B, T) draw: 1 up to and including the first eos; padding after it."""
    mask = np.ones(tokens.shape)
    if eos is not None:
        after = np.cumsum(tokens == eos, axis=1) - (tokens == eos) > 0  # (B, T) past the first eos
        mask[after] = 0.0
        tokens[after], logp[after] = eos, 0.0
    return tokens, mask, logp


def generate(model, prompt, T, rng, eos=None):
    """Sample T tokens per row with a key/value cache.

    Args:
        model: a `Transformer`.
        prompt: (B, P) int ids.
        T: tokens to draw, P + T - 1 <= max_len.
        rng: np.random.Generator (T uniform vectors of B are drawn).
        eos: optional end token; after it a row is padding.

    Returns:
        ``(tokens, mask, logp)``: (B, T) int64, (B, T) float64, (B, T) float64 log-probs of the
        drawn tokens under the model (0 at padding).
    """
    prompt, T, rng, eos = generate_args(model, prompt, T, rng, eos)
    (B, P), p = prompt.shape, model.params
    e = model.d // model.n_head
    kv = [np.empty((2, B, model.n_head, P + T - 1, e)) for _ in range(model.n_layer)]  # the cache
    tokens, logp = np.zeros((B, T), np.int64), np.zeros((B, T))
    x, pos = prompt, 0
    for t in range(T):
        z = p["wte"][x]  # (B, L, d) the new positions
        z += p["wpe"][pos : pos + x.shape[1]]  # eq. (embed)
        for layer in range(model.n_layer):  # the last block: the last position only
            last = x.shape[1] - 1 if layer == model.n_layer - 1 else 0
            z = block.step(z, model._block(layer), model.n_head, kv[layer], pos, last)
        h = norm.forward(z[:, -1:], p["lnf"], block.EPS)[0][:, 0]  # (B, d)
        tokens[:, t], logp[:, t] = _draw(h, p["head"], rng.random(B))
        pos += x.shape[1]
        x = tokens[:, t : t + 1]
    return _finish(tokens, logp, eos)


def generate_recompute(model, prompt, T, rng, eos=None):
    """The same draws as `generate`, recomputing the whole prefix at every step (no cache).

    Args and returns as `generate`.
    """
    prompt, T, rng, eos = generate_args(model, prompt, T, rng, eos)
    B = prompt.shape[0]
    seq = prompt
    tokens, logp = np.zeros((B, T), np.int64), np.zeros((B, T))
    for t in range(T):
        h, _ = model._trunk(seq)  # (B, P + t, d)
        tokens[:, t], logp[:, t] = _draw(h[:, -1], model.params["head"], rng.random(B))
        seq = np.concatenate([seq, tokens[:, t : t + 1]], axis=1)
    return _finish(tokens, logp, eos)
