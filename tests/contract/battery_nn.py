"""The bad-input battery's table, part nn (minirl_lm/nn/): the layers, the model, AdamW and
generation. See battery.py."""

import numpy as np
from battery_data import MASK, RNG, F, V, const
from battery_kinds import BAD, bad_float

from minirl_lm.nn import attention, block, embed, mlp, norm, value
from minirl_lm.nn.adamw import AdamW
from minirl_lm.nn.generate import generate, generate_recompute
from minirl_lm.nn.model import Transformer

D, M = 4, 8  # width and MLP width of the battery's layers


def _r(*shape, seed=0):
    return lambda: np.random.default_rng(seed).normal(size=shape)


def _model():
    return Transformer(V=5, d=D, n_head=2, n_layer=1, max_len=6, rng=np.random.default_rng(0), init_scale=0.5)


def _vmodel():
    return Transformer(5, D, 2, 1, 6, np.random.default_rng(0), init_scale=0.5, value_head=True)


def _transformer(**kw):
    return Transformer(**kw)


_transformer.__name__ = "Transformer"
_transformer.__wrapped__ = Transformer.__init__


def _adamw(**kw):
    return AdamW(**kw)


_adamw.__name__ = "AdamW"
_adamw.__wrapped__ = AdamW.__init__


def _block_params():
    rng = np.random.default_rng(1)
    return {
        "ln1": np.ones(D),
        "qkv": rng.normal(size=(D, 3 * D)),
        "proj": rng.normal(size=(D, D)),
        "ln2": np.ones(D),
        "fc": rng.normal(size=(D, M)),
        "out": rng.normal(size=(M, D)),
    }


X = _r(2, 3, D)
IDS = lambda: np.array([[1, 4, 0], [2, 2, 3]])  # noqa: E731 (B, L) = (2, 3) ids < 5
CACHES = {
    "embed": lambda: embed.embed_forward(_r(5, D)(), _r(6, D)(), IDS())[1],
    "rmsnorm": lambda: norm.rmsnorm_forward(X(), np.ones(D))[1],
    "attention": lambda: attention.attention_forward(X(), _r(D, 3 * D)(), _r(D, D)(), 2)[1],
    "mlp": lambda: mlp.mlp_forward(X(), _r(D, M)(), _r(M, D)())[1],
    "block": lambda: block.block_forward(X(), _block_params(), 2)[1],
    "value": lambda: value.value_forward(X(), _r(D)(), _r(1)())[1],
}


def _bad_cache(kind):
    other = "mlp" if kind != "mlp" else "embed"
    return lambda v: [("None", None), ("str", "x"), ("empty tuple", ()), (f"{other}'s cache", CACHES[other]())]


for _k in CACHES:
    BAD[f"cache_{_k}"] = _bad_cache(_k)
BAD["kv"] = lambda v: [
    ("None", None),
    ("list", v.tolist()),
    ("float32", v.astype(np.float32)),
    ("wrong shape", v[:, :, :1]),
]
BAD["nn_model"] = lambda v: [("None", None), ("str", "x"), ("object", object())]
BAD["params"] = lambda v: [
    ("None", None),
    ("empty", {}),
    ("float32", {"a": np.zeros(2, np.float32)}),
    ("list", [1.0]),
]
BAD["grads"] = lambda v: (
    [("None", None), ("other keys", {"b": np.zeros((2, 3))})]
    + [(label, {"a": bad}) for label, bad in bad_float(v["a"])]
)
BAD["block_params"] = lambda v: [
    ("None", None),
    ("missing key", {k: x for k, x in v.items() if k != "out"}),
    ("wrong shape", {**v, "qkv": np.ones((D, D))}),
    ("nan", {**v, "ln1": np.full(D, np.nan)}),
]


def _grad(kind, *shape):
    return F(
        {
            "embed": embed.embed_backward,
            "rmsnorm": norm.rmsnorm_backward,
            "attention": attention.attention_backward,
            "mlp": mlp.mlp_backward,
            "block": block.block_backward,
        }[kind],
        dy=("float", X),
        cache=(f"cache_{kind}", CACHES[kind]),
    )


def _value_grad():
    return F(value.value_backward, dy=("float", _r(2, 3)), cache=("cache_value", CACHES["value"]))


TABLE = [
    # embed.py
    F(embed.embed_forward, wte=("float", _r(5, D)), wpe=("float", _r(6, D)), ids=("ids5", IDS)),
    _grad("embed"),
    # norm.py
    F(norm.rmsnorm_forward, x=("float", X), g=("float", lambda: np.ones(D)), eps=("pos", const(1e-5))),
    _grad("rmsnorm"),
    # attention.py
    F(
        attention.attention_forward,
        x=("float", X),
        Wqkv=("float", _r(D, 3 * D)),
        Wo=("float", _r(D, D)),
        n_head=("int1", const(2)),
        start=("int0", const(1)),
    ),
    _grad("attention"),
    F(
        attention.attention_step,
        x=("float", X),
        Wqkv=("float", _r(D, 3 * D)),
        Wo=("float", _r(D, D)),
        n_head=("int1", const(2)),
        kv=("kv", lambda: np.zeros((2, 2, 2, 6, D // 2))),
        pos=("int0", const(1)),
        start=("int0", const(1)),
    ),
    # mlp.py
    F(mlp.mlp_forward, x=("float", X), W1=("float", _r(D, M)), W2=("float", _r(M, D))),
    _grad("mlp"),
    # block.py
    F(
        block.block_forward,
        x=("float", X),
        p=("block_params", _block_params),
        n_head=("int1", const(2)),
        start=("int0", const(1)),
    ),
    _grad("block"),
    F(
        block.block_step,
        x=("float", X),
        p=("block_params", _block_params),
        n_head=("int1", const(2)),
        kv=("kv", lambda: np.zeros((2, 2, 2, 6, D // 2))),
        pos=("int0", const(1)),
        start=("int0", const(1)),
    ),
    # value.py
    F(value.value_forward, h=("float", X), w=("float", _r(D)), c=("float", _r(1))),
    _value_grad(),
    # model.py
    F(
        _transformer,
        V=("int1", const(5)),
        d=("int1", const(4)),
        n_head=("int1", const(2)),
        n_layer=("int0", const(1)),
        max_len=("int1", const(6)),
        rng=("generator", RNG),
        init_scale=("nonneg", const(0.02)),
        value_head=("flag", const(True)),
    ),
    F(Transformer.logp, self=V(_model), prompt=("ids5", IDS), tokens=("ids5", IDS), mask=("mask", MASK)),
    F(Transformer.block, self=V(_model), layer=("int0", const(0))),
    F(Transformer.hidden, self=V(_model), seq=("ids5", IDS), start=("int0", const(1))),
    F(
        Transformer.backward,
        self=V(_model),
        prompt=("ids5", IDS),
        tokens=("ids5", IDS),
        mask=("mask1", MASK),  # returns a dict: the holes test reads tuples (logp's row covers holes)
        dlogp=("float", _r(2, 3)),
    ),
    F(
        Transformer.logp_values,
        self=V(_vmodel),
        prompt=("ids5", IDS),
        tokens=("ids5", IDS),
        mask=("mask", MASK),
    ),
    F(
        Transformer.backward,
        self=V(_vmodel),
        prompt=("ids5", IDS),
        tokens=("ids5", IDS),
        mask=("mask1", MASK),
        dlogp=("float", _r(2, 3)),
        dvalues=("float", _r(2, 3)),
    ),
    # adamw.py
    F(
        _adamw,
        params=("params", lambda: {"a": np.zeros(2)}),
        lr=("nonneg", const(1e-3)),
        beta1=("unit", const(0.9)),
        beta2=("unit", const(0.999)),
        eps=("pos", const(1e-8)),
        weight_decay=("nonneg", const(0.0)),
    ),
    F(AdamW.step, self=V(lambda: AdamW({"a": np.zeros((2, 3))})), grads=("grads", lambda: {"a": np.ones((2, 3))})),
    # generate.py
    F(
        generate,
        model=("nn_model", _model),
        prompt=("ids5", IDS),
        T=("int1", const(2)),
        rng=("generator", RNG),
        eos=("int0", const(0)),
    ),
    F(
        generate_recompute,
        model=("nn_model", _model),
        prompt=("ids5", IDS),
        T=("int1", const(2)),
        rng=("generator", RNG),
        eos=("int0", const(0)),
    ),
]
