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

After `eos` (when given) a row is padding: token `eos`, mask 0, logp 0. A call that raises (a
bad argument, or log-probs beyond float64 from a model whose weights were driven there) leaves
the generator as it was.
"""

import numpy as np

from minirl_lm.boundary import COUNT, array, boundary, finite, generator, number, optional
from minirl_lm.nn.block import EPS, block_step
from minirl_lm.nn.layer import Arrays, ids_in
from minirl_lm.nn.model import Transformer
from minirl_lm.nn.norm import rmsnorm_forward

__all__ = ["generate", "generate_recompute"]


def _transformer(model, name, dims):
    """A `Transformer` (its blocks are read through their declared bodies)."""
    if not isinstance(model, Transformer):
        raise TypeError(f"{name}: expected a minirl_lm.nn.model.Transformer, got {type(model).__name__}")
    return model


def _fits(model, prompt, T, eos):
    """Prompt ids below V, P + T - 1 <= max_len, an eos below V."""
    if prompt.shape[1] + T - 1 > model.max_len:
        return f"T: expected P + T - 1 <= max_len = {model.max_len}, got {prompt.shape[1]} + {T} - 1"
    if eos is not None and eos >= model.V:
        return f"eos: expected a token id < V = {model.V}, got {eos}"
    return ids_in("prompt", prompt, model.V)


DRAW = dict(
    model=_transformer,
    prompt=array("B P", integer=True, low=0),
    T=COUNT,
    rng=generator,
    eos=optional(number(0, integer=True)),
    where=[_fits],
    returns=None,  # checked before it returns: a raising call puts the generator back
)


def _draw(h, head, U):
    """Next tokens from the last hidden states h (B, d): (tokens (B,), their log-probs (B,))."""
    z = h @ head.T  # (B, V) eq. (sample)
    z = z - z.max(axis=1, keepdims=True)
    logpi = z - np.log(np.exp(z).sum(axis=1, keepdims=True))  # (B, V)
    F = np.cumsum(np.exp(logpi), axis=1)  # (B, V)
    y = np.minimum((F <= U[:, None]).sum(axis=1), head.shape[0] - 1)  # (B,) inversion
    return y, logpi[np.arange(y.size), y]


def _finish(model, rng, state, tokens, logp, eos):
    """The mask of a (B, T) draw (1 up to and including the first eos; padding after it), and
    the draw checked finite (else the generator is put back to `state`)."""
    mask = np.ones(tokens.shape)
    if eos is not None:
        after = np.cumsum(tokens == eos, axis=1) - (tokens == eos) > 0  # (B, T) past the first eos
        mask[after] = 0.0
        tokens[after], logp[after] = eos, 0.0
    try:
        return finite(
            (tokens, mask, logp), "generate", ["tokens", "mask", "logp"], {"params": Arrays(model.params)}
        )
    except ValueError:
        rng.bit_generator.state = state
        raise


@boundary(**DRAW)
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
    (B, P), p, state = prompt.shape, model.params, rng.bit_generator.state
    e = model.d // model.n_head
    kv = [np.empty((2, B, model.n_head, P + T - 1, e)) for _ in range(model.n_layer)]  # the cache
    tokens, logp = np.zeros((B, T), np.int64), np.zeros((B, T))
    x, pos = prompt, 0
    for t in range(T):
        z = p["wte"][x]  # (B, L, d) the new positions
        z += p["wpe"][pos : pos + x.shape[1]]  # eq. (embed)
        for layer in range(model.n_layer):  # the last block: the last position only
            last = x.shape[1] - 1 if layer == model.n_layer - 1 else 0
            z = block_step.core(z, model.block.core(model, layer), model.n_head, kv[layer], pos, start=last)
        h = rmsnorm_forward.core(z[:, -1:], p["lnf"], EPS)[0][:, 0]  # (B, d)
        tokens[:, t], logp[:, t] = _draw(h, p["head"], rng.random(B))
        pos += x.shape[1]
        x = tokens[:, t : t + 1]
    return _finish(model, rng, state, tokens, logp, eos)


@boundary(**DRAW)
def generate_recompute(model, prompt, T, rng, eos=None):
    """The same draws as `generate`, recomputing the whole prefix at every step (no cache).

    Args and returns as `generate`.
    """
    B, state = prompt.shape[0], rng.bit_generator.state
    seq = prompt
    tokens, logp = np.zeros((B, T), np.int64), np.zeros((B, T))
    for t in range(T):
        h, _ = model.hidden.core(model, seq)  # (B, P + t, d)
        tokens[:, t], logp[:, t] = _draw(h[:, -1], model.params["head"], rng.random(B))
        seq = np.concatenate([seq, tokens[:, t : t + 1]], axis=1)
    return _finish(model, rng, state, tokens, logp, eos)
