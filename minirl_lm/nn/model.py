r"""The model: token ids in, token log-probs out, and `dloss/dlogp` back to parameter gradients.

A decoder-only transformer: embeddings, `n_layer` pre-norm blocks, a final RMSNorm, and the LM
head through the real-vocabulary primitive (`minirl_lm.scale.bigvocab`), so no (B, T, V) logits
are kept. A row is a prompt `x` (P ids) and a response `y` (T ids); the network reads
`x ∘ y_<T` (P + T - 1 positions) and position `P - 2 + t` predicts `y_t`:

    z = embed(x ∘ y_<T),  z <- block_l(z) for l = 1..n_layer                eq. (trunk)
    h = rmsnorm(z; lnf)[:, P-1:]                     (B, T, d)              eq. (final_norm)
    logp[b, t] = log softmax(head h[b, t])[y_t]      (bigvocab)             eq. (unembed)

The interface is `TabularPolicy`'s with the prompt ids in place of the state ids:
`logp(prompt, tokens, mask) -> (logp (B, T), seq_logp (B,))` and
`backward(prompt, tokens, mask, dlogp) -> grads`, so an objective's `(loss, dloss_dlogp)` drives
it unchanged. Only positions P-1.. are read, so the last block runs its queries, its MLP and
its second norm on those T rows (`block_forward(..., start=P-1)`; its keys and values on every
position), and the final norm on the T rows. The backward is the chain rule through the file's
layers in reverse:
`bigvocab.chunked_loss_grad.core` gives `(dh, dhead)` for the token loss `sum g * logp`, then
`rmsnorm_backward`, each `block_backward`, `embed_backward` (eq. (model_grad)); the layers are
called through `.core`, on the batch the method's declaration read. The backward is linear in
`g`: the LM head's runs on `g / 2^k` (entries below 1 in size; a power of 2, so exact) and its
gradients are scaled back, so a gradient beyond float64 shows in the result, which the declared
check reports.

With ``value_head=True`` the same `h` also gives one value per position (`nn/value.py`):

    v[b, t] = h[b, t] . vhead + vbias         (B, T)                        eq. (value_head)

and `backward(..., dlogp, dvalues)` adds the value head's `dh` to the LM head's before the final
norm: the trunk's gradient is the sum of the policy loss's and the value loss's (eq.
(model_grad)). The RL code (GAE, the clipped value loss) stays outside this part.

Parameters (a flat dict of float64 arrays, `params`): ``wte`` (V, d), ``wpe`` (max_len, d),
``h{l}.ln1/qkv/proj/ln2/fc/out`` per block (the MLP is 4d wide), ``lnf`` (d,), ``head`` (V, d),
and with a value head ``vhead`` (d,), ``vbias`` (1,).
Initialization: normal with standard deviation `init_scale` (the projections into the residual
stream divided by `sqrt(2 n_layer)`, as GPT-2), gains 1; every draw from `rng`. The value head
starts at 0 (no draw, so a model with and one without a value head share every other weight):
its first values are 0 and its first gradient into the trunk is 0. The sizes are bounded:
at most `MAX_PARAMS` parameters in all (1 GiB of float64).
"""

import numpy as np

from minirl_lm.boundary import COUNT, MASK, array, boundary, flag, generator, number, optional
from minirl_lm.nn.block import BLOCK_KEYS, EPS, block_backward, block_forward
from minirl_lm.nn.embed import embed_backward, embed_forward
from minirl_lm.nn.layer import START, Arrays, Cache, ids_in
from minirl_lm.nn.norm import rmsnorm_backward, rmsnorm_forward
from minirl_lm.nn.value import value_backward, value_forward
from minirl_lm.scale.bigvocab import chunked_logp, chunked_loss_grad

__all__ = ["MAX_PARAMS", "Transformer"]

MAX_PARAMS = 2**27  # parameters of a model at most: 1 GiB of float64
INIT_SCALE = number(0.0, 1e100)  # beyond ~1e150 the first norm's mean square leaves float64
IDS = array("B P", integer=True, low=0)  # (B, P) prompt ids, P >= 1
RESPONSE = array("B T", integer=True, low=0)  # (B, T) response ids


def _heads(d, n_head):
    """`n_head` divides the width `d`."""
    if d % n_head:
        return f"n_head: expected a divisor of d = {d}, got {n_head}"


def _size(V, d, n_layer, max_len):
    """At most `MAX_PARAMS` parameters; else the argument whose parameters weigh most is named."""
    terms = {"V": 2 * V * d, "max_len": max_len * d, "n_layer": n_layer * (12 * d * d + 2 * d), "d": 4 * d}
    if sum(terms.values()) > MAX_PARAMS:
        name = max(terms, key=terms.get)
        return (
            f"{name}: expected a model of at most {MAX_PARAMS} parameters, got {sum(terms.values())} "
            f"(V = {V}, d = {d}, n_layer = {n_layer}, max_len = {max_len})"
        )


def _batch(self, prompt, tokens):
    """Ids below V, and P + T - 1 positions at most `max_len`."""
    if prompt.shape[1] + tokens.shape[1] - 1 > self.max_len:
        return (
            f"tokens: expected P + T - 1 <= max_len = {self.max_len}, "
            f"got {prompt.shape[1]} + {tokens.shape[1]} - 1"
        )
    return ids_in("prompt", prompt, self.V) or ids_in("tokens", tokens, self.V)


def _value_head(self):
    """`logp_values` needs the value head."""
    if "vhead" not in self.params:
        return "model: expected a Transformer built with value_head=True, got one without a value head"


def _dvalues(self, dvalues):
    """`dvalues` needs the value head."""
    if dvalues is not None and "vhead" not in self.params:
        return "dvalues: expected None for a Transformer without a value head, got an array"


def _seq(self, seq, start):
    """Ids below V, at most `max_len` positions, `start` one of them."""
    if seq.shape[1] > self.max_len:
        return f"seq: expected at most max_len = {self.max_len} positions, got {seq.shape[1]}"
    if start >= seq.shape[1]:
        return f"start: expected a position < L = {seq.shape[1]}, got {start}"
    return ids_in("seq", seq, self.V)


def _layer(self, layer):
    if layer >= self.n_layer:
        return f"layer: expected a block index < n_layer = {self.n_layer}, got {layer}"


class Transformer:
    """A small causal LM whose gradients are all derived by hand.

    Args:
        V: vocabulary size.
        d: width of the residual stream.
        n_head: attention heads, a divisor of d.
        n_layer: number of blocks (0: embeddings, final norm and head only).
        max_len: the longest input, P + T - 1 positions.
        rng: np.random.Generator for the initialization (drawn from only once every argument
            is read).
        init_scale: standard deviation of the initial weights, at most 1e100.
        value_head: also a value head on the trunk (eq. (value_head)), started at 0.

    Raises:
        ValueError: a bad argument (named), or sizes beyond `MAX_PARAMS` parameters.
    """

    @boundary(
        V=COUNT,
        d=COUNT,
        n_head=COUNT,
        n_layer=number(0, integer=True),
        max_len=COUNT,
        rng=generator,
        init_scale=INIT_SCALE,
        value_head=flag,
        where=[_heads, _size],
        returns=None,
    )
    def __init__(self, V, d, n_head, n_layer, max_len, rng, init_scale=0.02, value_head=False):
        self.V, self.d, self.n_head, self.n_layer, self.max_len = V, d, n_head, n_layer, max_len
        deep = init_scale / np.sqrt(2 * max(n_layer, 1))
        p = {"wte": rng.normal(0, init_scale, (V, d)), "wpe": rng.normal(0, init_scale, (max_len, d))}
        for layer in range(n_layer):
            p[f"h{layer}.ln1"] = np.ones(d)
            p[f"h{layer}.qkv"] = rng.normal(0, init_scale, (d, 3 * d))
            p[f"h{layer}.proj"] = rng.normal(0, deep, (d, d))
            p[f"h{layer}.ln2"] = np.ones(d)
            p[f"h{layer}.fc"] = rng.normal(0, init_scale, (d, 4 * d))
            p[f"h{layer}.out"] = rng.normal(0, deep, (4 * d, d))
        p["lnf"], p["head"] = np.ones(d), rng.normal(0, init_scale, (V, d))
        if value_head:
            p["vhead"], p["vbias"] = np.zeros(d), np.zeros(1)
        self.params = p

    def copy(self):
        """An independent copy (the frozen reference is `model.copy()`)."""
        new = object.__new__(Transformer)
        new.__dict__.update(self.__dict__)
        new.params = {k: v.copy() for k, v in self.params.items()}
        return new

    @boundary(layer=number(0, integer=True), where=[_layer], returns=None)
    def block(self, layer):
        """The parameters of one block, what `block_forward` takes.

        Args:
            layer: the block's index, an int in `[0, n_layer)`.

        Returns:
            A dict of the model's arrays (views, not copies) with the keys of `block.BLOCK_KEYS`.
        """
        return {k: self.params[f"h{layer}.{k}"] for k in BLOCK_KEYS}

    @boundary(seq=array("B L", integer=True, low=0), start=START, where=[_seq], returns="h caches")
    def hidden(self, seq, *, start=0):
        """The final-normed hidden states of positions start..L-1, eq. (trunk) and (final_norm).

        Args:
            seq: (B, L) int ids, L <= max_len.
            start: the first position whose hidden state is computed (the last block runs
                those positions only).

        Returns:
            ``(h, caches)``: h (B, L - start, d) and what the backward reads.
        """
        z, ce = embed_forward.core(self.params["wte"], self.params["wpe"], seq)  # eq. (trunk)
        caches = []
        for layer in range(self.n_layer):
            last = layer == self.n_layer - 1
            z, c = block_forward.core(z, self.block.core(self, layer), self.n_head, start=start if last else 0)
            caches.append(c)
        if not self.n_layer:
            z = z[:, start:]
        h, cf = rmsnorm_forward.core(z, self.params["lnf"], EPS)  # eq. (final_norm)
        return h, Cache(("trunk", h.shape, ce, caches, cf))

    def _hidden(self, prompt, tokens):
        """The hidden states that predict tokens: (B, T, d), and the caches."""
        seq = np.concatenate([prompt, tokens[:, :-1]], axis=1)  # (B, P + T - 1): x ∘ y_<T
        return self.hidden.core(self, seq, start=prompt.shape[1] - 1)

    @boundary(prompt=IDS, tokens=RESPONSE, mask=MASK, where=[_batch], returns="logp seq_logp")
    def logp(self, prompt, tokens, mask):
        """Token log-probs of the responses.

        Args:
            prompt: (B, P) int prompt ids, P >= 1.
            tokens: (B, T) int response ids in [0, V); P + T - 1 <= max_len.
            mask: (B, T) 0/1, 1 on scored tokens; holes allowed.

        Returns:
            ``(logp, seq_logp)``: (B, T) float64, 0.0 where ``mask == 0``, and (B,) the row sums.
        """
        lp = self._logp_values(prompt, tokens, mask)[0]
        return lp, lp.sum(axis=1)

    def _logp_values(self, prompt, tokens, mask, values=False):
        h, _ = self._hidden(prompt, tokens)
        B, T, d = h.shape
        lp = chunked_logp.core(h.reshape(-1, d), self.params["head"], tokens.ravel(), mask.ravel())
        if not values:
            return lp.reshape(B, T), None  # eq. (unembed)
        v = value_forward.core(h, self.params["vhead"], self.params["vbias"])[0] * mask  # (B, T) eq. (value_head)
        return lp.reshape(B, T), v

    @boundary(prompt=IDS, tokens=RESPONSE, mask=MASK, where=[_batch, _value_head], returns="logp values")
    def logp_values(self, prompt, tokens, mask):
        """Token log-probs and the values of the states that predict them, from one forward.

        Args:
            prompt: as in `logp`.
            tokens: as in `logp`.
            mask: as in `logp`.

        Returns:
            ``(logp, values)``: (B, T) and (B, T) float64, `values[b, t]` = v(s_t) of the state
            `(x, y_<t)`, eq. (value_head); both 0.0 where ``mask == 0``.

        Raises:
            ValueError: a model built without ``value_head=True``, or a bad batch.
        """
        return self._logp_values(prompt, tokens, mask, values=True)

    @boundary(
        prompt=IDS,
        tokens=RESPONSE,
        mask=MASK,
        dlogp=array("B T"),
        dvalues=optional(array("B T")),
        where=[_batch, _dvalues],
        returns="grads",
    )
    def backward(self, prompt, tokens, mask, dlogp, dvalues=None):
        """The gradient of a loss whose derivative in the token log-probs is ``dlogp``.

        Args:
            prompt: as in `logp`.
            tokens: as in `logp`.
            mask: as in `logp`.
            dlogp: (B, T) `dloss/dlogp` (an objective's second output); ignored where mask is 0.
            dvalues: None, or (B, T) `dloss/dvalues` of a value loss (a model with a value
                head); ignored where mask is 0. The trunk gets the sum of both gradients.

        Returns:
            A dict of (name -> array of the parameter's shape): `d loss / d params` (the value
            head's entries are 0 when ``dvalues`` is None).

        Raises:
            ValueError: a bad argument (named), or a gradient beyond float64 (named after the
                method, with the range of its inputs).
        """
        h, (_, _, ce, caches, cf) = self._hidden(prompt, tokens)
        B, T, d = h.shape
        scale = 2.0 ** np.frexp(np.abs(dlogp * mask).max())[1]  # a power of 2 above every |g|
        g = (dlogp / scale).ravel()  # (B T,) exact

        def token_loss(lp, rows):  # loss = sum_n g_n logp_n: its derivative is g (its value unused)
            return 0.0, g[rows]

        _, _, dh, dhead = chunked_loss_grad.core(
            h.reshape(-1, d), self.params["head"], tokens.ravel(), token_loss, mask.ravel()
        )  # eq. (unembed): (B T, d) and (V, d), for g / scale
        dh = dh.reshape(B, T, d) * scale
        grads = Arrays(head=dhead * scale)
        if "vhead" in self.params:  # eq. (value_grad): the value loss's dh, added to the LM head's
            dv = np.zeros((B, T)) if dvalues is None else dvalues * mask  # (B, T)
            vcache = Cache(("value", (B, T), h, self.params["vhead"]))
            dhv, grads["vhead"], grads["vbias"] = value_backward.core(dv, vcache)
            dh += dhv
        dz, grads["lnf"] = rmsnorm_backward.core(dh, cf)  # eq. (model_grad)
        for layer in reversed(range(self.n_layer)):
            dz, gb = block_backward.core(dz, caches[layer])
            grads.update({f"h{layer}.{k}": v for k, v in gb.items()})
        if not self.n_layer:  # the prompt's first P - 1 outputs score nothing
            dz = np.concatenate([np.zeros((B, prompt.shape[1] - 1, d)), dz], axis=1)
        grads["wte"], grads["wpe"] = embed_backward.core(dz, ce)  # eq. (model_grad)
        return grads
