"""The boundary of the network part: one bundle call per public function of `minirl_lm/nn/`.
Built on `core/checks.py`; NumPy only. Every message starts with the argument's name."""

import numpy as np

from minirl_lm.core.checks import (
    _NOT_GIVEN,
    _describe,
    float_array,
    float_scalar,
    int_array,
    int_scalar,
    mask_array,
    nonempty,
    rng_check,
)
from minirl_lm.core.validate import flag

BLOCK_KEYS = ("ln1", "qkv", "proj", "ln2", "fc", "out")  # one block's parameters


def _floats(x, name, ndim):
    """A finite float64 array with ``ndim`` axes, none of them empty."""
    arr = float_array(x, name, ndim=ndim)
    nonempty(arr, name)
    return arr


def _dim(name, arr, axis, n, what):
    if arr.shape[axis] != n:
        raise ValueError(f"{name}: expected {what} = {n} on axis {axis}, got shape {arr.shape}")


def _cache(cache, name, kind):
    """A cache returned by the forward ``kind``: (kind, output shape, ...)."""
    if not (isinstance(cache, tuple) and len(cache) > 2 and cache[0] == kind):
        raise TypeError(f"{name}: expected the cache returned by {kind}_forward, got {_describe(cache)}")
    return cache


def grad_args(dy, cache, kind):
    """A backward's (dy, cache): the cache of forward ``kind``, dy of the forward output's shape."""
    cache = _cache(cache, "cache", kind)
    dy = float_array(dy, "dy", shape=cache[1])
    return dy, cache


# -- embed.py
def embed_args(wte, wpe, ids):
    wte, wpe = _floats(wte, "wte", 2), _floats(wpe, "wpe", 2)
    _dim("wpe", wpe, 1, wte.shape[1], "d (from wte)")
    ids = int_array(ids, "ids", ndim=2, low=0, high=wte.shape[0])
    nonempty(ids, "ids")
    if ids.shape[1] > wpe.shape[0]:
        raise ValueError(f"ids: expected at most max_len = {wpe.shape[0]} positions, got {ids.shape[1]}")
    return wte, wpe, ids


# -- norm.py, attention.py, mlp.py
def norm_args(x, g, eps):
    x = _floats(x, "x", 3)
    g = float_array(g, "g", shape=(x.shape[2],))
    return x, g, float_scalar(eps, "eps", 0.0, low_open=True)


def attention_args(x, Wqkv, Wo, n_head):
    x = _floats(x, "x", 3)
    d = x.shape[2]
    n_head = int_scalar(n_head, "n_head", low=1)
    if d % n_head:
        raise ValueError(f"n_head: expected a divisor of d = {d}, got {n_head}")
    return x, float_array(Wqkv, "Wqkv", shape=(d, 3 * d)), float_array(Wo, "Wo", shape=(d, d)), n_head


def mlp_args(x, W1, W2):
    x = _floats(x, "x", 3)
    W1 = _floats(W1, "W1", 2)
    _dim("W1", W1, 0, x.shape[2], "d (from x)")
    return x, W1, float_array(W2, "W2", shape=(W1.shape[1], x.shape[2]))


def block_args(x, p, n_head):
    x = _floats(x, "x", 3)
    d = x.shape[2]
    if not isinstance(p, dict) or set(p) != set(BLOCK_KEYS):
        raise TypeError(f"p: expected a dict with keys {BLOCK_KEYS}, got {_describe(p)}")
    shapes = {"ln1": (d,), "qkv": (d, 3 * d), "proj": (d, d), "ln2": (d,), "fc": (d, None), "out": (None, d)}
    q = {k: float_array(p[k], "p", shape=shapes[k]) for k in BLOCK_KEYS}
    if q["fc"].shape[1] != q["out"].shape[0]:
        raise ValueError(f"p: expected fc (d, m) and out (m, d), got {q['fc'].shape} and {q['out'].shape}")
    n_head = int_scalar(n_head, "n_head", low=1)
    if d % n_head:
        raise ValueError(f"n_head: expected a divisor of d = {d}, got {n_head}")
    return x, q, n_head


# -- value.py
def value_args(h, w, c):
    h = _floats(h, "h", 3)
    return h, float_array(w, "w", shape=(h.shape[2],)), float_array(c, "c", shape=(1,))


# -- model.py
def model_args(V, d, n_head, n_layer, max_len, rng, init_scale, value_head=False):
    V, d = int_scalar(V, "V", low=1), int_scalar(d, "d", low=1)
    n_head = int_scalar(n_head, "n_head", low=1)
    if d % n_head:
        raise ValueError(f"n_head: expected a divisor of d = {d}, got {n_head}")
    n_layer, max_len = int_scalar(n_layer, "n_layer", low=0), int_scalar(max_len, "max_len", low=1)
    rng, init_scale = rng_check(rng, "rng"), float_scalar(init_scale, "init_scale", 0.0)
    return V, d, n_head, n_layer, max_len, rng, init_scale, flag(value_head, "value_head")


def batch_args(model, prompt, tokens, mask, dlogp=_NOT_GIVEN):
    """(prompt (B, P), tokens (B, T), mask (B, T), dlogp (B, T) or None) for the model's logp and
    backward (dlogp not given: None): ids below V, P >= 1, P + T - 1 <= max_len."""
    prompt = int_array(prompt, "prompt", ndim=2, low=0, high=model.V)
    nonempty(prompt, "prompt")
    tokens = int_array(tokens, "tokens", ndim=2, shape=(prompt.shape[0], None), low=0, high=model.V)
    nonempty(tokens, "tokens")
    if prompt.shape[1] + tokens.shape[1] - 1 > model.max_len:
        raise ValueError(
            f"tokens: expected P + T - 1 <= max_len = {model.max_len}, "
            f"got {prompt.shape[1]} + {tokens.shape[1]} - 1"
        )
    mask = mask_array(mask, "mask", shape=tokens.shape)
    if dlogp is _NOT_GIVEN:
        return prompt, tokens, mask, None
    return prompt, tokens, mask, float_array(dlogp, "dlogp", shape=tokens.shape)


def has_value_head(model):
    """The model was built with ``value_head=True``."""
    if "vhead" not in model.params:
        raise ValueError("model: expected a Transformer built with value_head=True, got one without a value head")


def dvalues_arg(model, dvalues, shape):
    """None, or (B, T) float: then the model must have a value head."""
    if dvalues is None:
        return None
    dvalues = float_array(dvalues, "dvalues", shape=shape)
    if "vhead" not in model.params:
        raise ValueError("dvalues: expected None for a Transformer without a value head, got an array")
    return dvalues


def _model(model):
    if not (isinstance(getattr(model, "params", None), dict) and hasattr(model, "max_len")):
        raise TypeError(f"model: expected a minirl_lm.nn.model.Transformer, got {_describe(model)}")


def generate_args(model, prompt, T, rng, eos):
    _model(model)
    prompt = int_array(prompt, "prompt", ndim=2, low=0, high=model.V)
    nonempty(prompt, "prompt")
    T = int_scalar(T, "T", low=1, high=model.max_len - prompt.shape[1] + 1)
    if eos is not None:
        eos = int_scalar(eos, "eos", low=0, high=model.V - 1)
    return prompt, T, rng_check(rng, "rng"), eos


# -- adamw.py
def adamw_args(params, lr, beta1, beta2, eps, weight_decay):
    if not isinstance(params, dict) or not params:
        raise TypeError(f"params: expected a non-empty dict of float64 arrays, got {_describe(params)}")
    for k, v in params.items():
        if not (isinstance(v, np.ndarray) and v.dtype == np.float64):
            raise TypeError(f"params: expected float64 arrays (updated in place), got {_describe(v)} at {k!r}")
    return (
        float_scalar(lr, "lr", 0.0),
        float_scalar(beta1, "beta1", 0.0, 1.0),
        float_scalar(beta2, "beta2", 0.0, 1.0),
        float_scalar(eps, "eps", 0.0, low_open=True),
        float_scalar(weight_decay, "weight_decay", 0.0),
    )


def adamw_grads(params, grads):
    """grads: a dict with the keys of params, each finite and of its parameter's shape."""
    if not isinstance(grads, dict) or set(grads) != set(params):
        raise TypeError(f"grads: expected a dict with the keys of params, got {_describe(grads)}")
    return {k: float_array(grads[k], "grads", shape=params[k].shape) for k in params}
