"""The bad-input battery's kinds: `BAD[kind]` turns a valid value into bad ones, each with a
label (wrong type, NaN, inf, wrong shape, empty, out of range, unhashable option, ...). See
battery.py."""

import numpy as np
from battery_data import INF, MDP, NAN, ROLLOUT, B, T

from minirl_lm.core.mdp import Rollout, TokenMDP
from minirl_lm.core.policy import TabularPolicy

# ---------------------------------------------------------------- bad values per kind


def _first(v, x):
    a = np.array(v, dtype=np.float64)
    a.flat[0] = x
    return a


def _empty(v):
    a = np.asarray(v)
    return np.zeros((0,) + a.shape[1:], a.dtype)


def bad_float(v, finite_neginf=False):
    out = [
        ("str", "x"),
        ("None", None),
        ("ragged", [[1.0], [1.0, 2.0]]),
        ("complex", np.asarray(v) + 1j),
        ("nan", _first(v, NAN)),
        ("+inf", _first(v, INF)),
        ("extra axis", np.asarray(v)[..., None]),
        ("empty", _empty(v)),
    ]
    if not finite_neginf:
        out.append(("-inf", _first(v, -INF)))
    return out


def bad_logits(v):
    a = np.array(v, dtype=np.float64)
    a.reshape(-1, a.shape[-1])[0] = -INF  # an all -inf row
    return bad_float(v, finite_neginf=True) + [("all -inf row", a)]


def bad_mask(v):
    """A token-level mask: any 0/1 pattern is valid (holes too)."""
    return bad_float(v) + [("0.5", _first(v, 0.5))]


def bad_prefix_mask(v):
    """A mask read as a prefix (returns, GAE, the critic, the trajectory): right padding too."""
    left = np.array(v, dtype=np.float64)
    left[0, 0] = 0.0  # 0 then 1: left padding
    return bad_mask(v) + [("left padded", left)]


def bad_ids(high):
    def gen(v):
        return [
            ("str", "x"),
            ("None", None),
            ("float", np.asarray(v) + 0.5),
            ("-1", _first(v, -1).astype(np.int64)),
            ("high", _first(v, high).astype(np.int64)),
            ("extra axis", np.asarray(v)[..., None]),
        ]

    return gen


def bad_number(low=None, high=None, low_open=False, integer=False):
    def gen(v):
        out = [
            ("str", "x"),
            ("None", None),
            ("bool", True),
            ("list", [v]),
            ("nan", NAN),
            ("inf", INF),
            ("-inf", -INF),
        ]
        if integer:
            out += [("float", 1.5)]
        if low is not None:
            out.append(("below", low if low_open else low - (1 if integer else 0.5)))
        if high is not None:
            out.append(("above", high + (1 if integer else 0.5)))
        return out

    return gen


def bad_option(v):
    return [("unknown", "nope"), ("unhashable", [v]), ("None", None), ("int", 1)]


def bad_generator(v):
    return [("int", 42), ("None", None), ("RandomState", np.random.RandomState(0))]


def bad_policy(v):
    return [("None", None), ("str", "x"), ("object", object()), ("wrong shape", TabularPolicy(np.zeros((2, 2))))]


def bad_grader(v):
    return [
        ("None", None),
        ("str", "x"),
        ("one argument", lambda p: 1.0),
        ("returns None", lambda p, r: None),
        ("returns str", lambda p, r: "1"),
        ("returns NaN", lambda p, r: NAN),
        ("returns inf", lambda p, r: INF),
        ("returns bool", lambda p, r: True),
        ("returns 1-element array", lambda p, r: np.ones(1)),
        ("returns 10**400", lambda p, r: 10**400),
    ]


def bad_prob(v):
    a = np.array(v, dtype=np.float64)
    a[0] = a[0] * (1 + 1e-6)  # rows summing to 1 + 1e-6
    return bad_float(v) + [("sum 1+1e-6", a), ("negative", _first(v, -0.1))]


def bad_mdp(v):
    return [
        ("None", None),
        ("str", "x"),
        ("lazy ids", TokenMDP(["a", "b"], V=3, eos=0, max_len=2, ids="lazy", capacity=6)),
    ]


def bad_prefix(v):
    return [
        ("str", "ab"),
        ("None", None),
        ("-1", (1, -1)),
        ("V", (3,)),
        ("float", (0.9,)),
        ("after EOS", (0, 1)),
        ("too long", (1, 1, 1)),
        ("bool", (True,)),
    ]


def bad_nonterminal(v):
    return bad_prefix(v) + [("ends in EOS", (0,)), ("at max_len", (1, 2))]


def bad_rollout(v):
    r = ROLLOUT()
    bad_prompt = Rollout(r.states, r.tokens, r.mask, r.prompt - 1, r.lengths)
    bad_tok = Rollout(r.states, r.tokens + 5, r.mask, r.prompt, r.lengths)
    return [("None", None), ("str", "x"), ("prompt -1", bad_prompt), ("tokens >= V", bad_tok)]


def bad_record(v):
    return [("str", "x"), ("int", 5), ("-1", [-1]), ("0", [0]), ("beyond", [10**9]), ("float", [1.5])]


def bad_karray(dtype, ndim):
    """Kernel arrays: exactly this dtype, ndim, C-contiguous, non-empty."""

    def gen(v):
        other = np.float64 if dtype == np.int64 else np.float16
        out = [
            ("list", np.asarray(v).tolist()),
            ("None", None),
            ("dtype", np.asarray(v).astype(other)),
            ("extra axis", np.ascontiguousarray(np.asarray(v)[..., None])),
            ("empty", _empty(v)),
        ]
        if np.asarray(v).ndim >= 2 and np.asarray(v).shape[-1] > 1:
            out.append(("not contiguous", np.asarray(v)[..., ::-1]))
        return out

    return gen


def bad_kfloat(dtype, ndim, nan_ok=False):
    def gen(v):
        out = bad_karray(dtype, ndim)(v)
        if not nan_ok:
            out.append(("nan", _first(v, NAN).astype(dtype)))
        return out

    return gen


def bad_kmask(v):
    return bad_karray(np.float64, 2)(v) + [("0.5", _first(v, 0.5))]


def bad_kids(high):
    def gen(v):
        return bad_karray(np.int64, 2)(v) + [
            ("-1", _first(v, -1).astype(np.int64)),
            ("high", _first(v, high).astype(np.int64)),
        ]

    return gen


def bad_flag(v):
    return [("str", "x"), ("None", None), ("int", 1), ("array", np.array([True]))]


def bad_bools(v):
    return [
        ("str", "x"),
        ("None", None),
        ("int", np.asarray(v).astype(np.int64)),
        ("extra axis", np.asarray(v)[..., None]),
        ("short", np.asarray(v)[:1]),
    ]


def bad_callable(nargs):
    def gen(v):
        return [
            ("None", None),
            ("str", "x"),
            (f"{nargs - 1} arguments", eval("lambda " + ", ".join("a" * i for i in range(1, nargs)) + ": 0.5")),
            (
                f"{nargs + 1} arguments",
                eval("lambda " + ", ".join("a" * i for i in range(1, nargs + 2)) + ": 0.5"),
            ),
            ("a class", float),
        ]

    return gen


def bad_judge(v):
    return bad_callable(3)(v) + [
        ("returns None", lambda p, a, b: None),
        ("returns str", lambda p, a, b: "0.5"),
        ("returns 1.5", lambda p, a, b: 1.5),
        ("returns NaN", lambda p, a, b: NAN),
    ]


def bad_turn_reward(v):
    return bad_callable(3)(v) + [
        ("returns None", lambda w, t, d: None),
        ("returns str", lambda w, t, d: "1"),
        ("returns NaN", lambda w, t, d: NAN),
        ("returns inf", lambda w, t, d: INF),
        ("returns bool", lambda w, t, d: True),
    ]


def bad_loss_fn(v):
    return bad_callable(2)(v) + [
        ("returns None", lambda lp, r: None),
        ("returns NaN", lambda lp, r: (NAN, 0 * lp)),
        ("returns str", lambda lp, r: ("x", 0 * lp)),
        ("wrong shape", lambda lp, r: (0.0, np.zeros(lp.size + 1))),
        ("NaN gradient", lambda lp, r: (0.0, lp * NAN)),
        ("returns '1.0'", lambda lp, r: ("1.0", lp)),
        ("returns inf", lambda lp, r: (INF, lp)),
        ("returns None loss", lambda lp, r: (None, lp)),
        ("bool gradient", lambda lp, r: (0.0, lp > 0)),
    ]


def bad_spans(v):
    return [
        ("None", None),
        ("str", "x"),
        ("not tuples", [2, 3]),
        ("empty span", [(), (2, 4)]),
        ("id V", [(2, 5), (2, 4)]),
        ("-1", [(2, -1), (2, 4)]),
        ("prefix", [(2,), (2, 4)]),
        ("float", [(2.5, 3), (2, 4)]),
        ("bool", [(True, 3), (2, 4)]),
    ]


def bad_episodes(v):
    # a wrong field (a chance node's state id, a token) names the field (`states`, `tokens`):
    # tests/multiturn/test_env.py tests those; here the batch itself is not an Episodes
    return [("None", None), ("str", "x"), ("object", object()), ("Rollout", ROLLOUT())]


def bad_mtenv(v):
    return [("None", None), ("str", "x"), ("TokenMDP", MDP())]


def _no_extra_axis(gen):
    return lambda v: [(label, x) for label, x in gen(v) if label != "extra axis"]


BAD = {
    "float": bad_float,
    "float_neginf": lambda v: bad_float(v, True),
    "logits": bad_logits,
    "mask": bad_mask,
    "pmask": bad_prefix_mask,
    "pos": bad_number(0.0, low_open=True),
    "nonneg": bad_number(0.0),
    "unit": bad_number(0.0, 1.0),
    "eps": bad_number(0.0, 1.0, low_open=True),
    "half": bad_number(0.0, 0.5),
    "int1": bad_number(1, integer=True),
    "int0": bad_number(0, integer=True),
    "ddof": bad_number(0, 1, integer=True),
    "option": bad_option,
    "generator": bad_generator,
    "policy": bad_policy,
    "grader": bad_grader,
    "prob": bad_prob,
    "mdp": bad_mdp,
    "prefix": bad_prefix,
    "nonterminal": bad_nonterminal,
    "rollout": bad_rollout,
    "record_at": bad_record,
    "real": bad_number(),
    "kmask": bad_kmask,
    "gt1": bad_number(1.0, low_open=True),
    "ge1": bad_number(1.0),
    "flag": bad_flag,
    "bools": bad_bools,
    "callable2": bad_callable(2),
    "judge": bad_judge,
    "turn_reward": bad_turn_reward,
    "loss_fn": bad_loss_fn,
    "spans": bad_spans,
    "episodes": bad_episodes,
    "mtenv": bad_mtenv,
    "ids5": bad_ids(5),
    "tokids": lambda v: [(label, x) for label, x in bad_ids(3)(v) if label != "high"],
    "amask": lambda v: bad_float(v) + [("0.5", _first(v, 0.5)), ("1 off mask", np.ones((B, T)))],
    "mask1": lambda v: bad_float(v) + [("0.5", _first(v, 0.5))],
}
for _h in (2, 3, 4, 6, 9):
    BAD[f"ids{_h}"] = bad_ids(_h)
    BAD[f"kids{_h}"] = bad_kids(_h)
BAD["klogits"] = bad_kfloat(np.float64, 3, nan_ok=False)
BAD["ktheta"] = bad_kfloat(np.float64, 2)
BAD["kw"] = bad_kfloat(np.float64, 2)
BAD["kx"] = bad_kfloat(np.float64, 1)
BAD["kx32"] = bad_kfloat(np.float32, 1)
BAD["float_any"] = _no_extra_axis(bad_float)  # (B,) or (N, K): any 2-D shape is valid
BAD["logits_any"] = _no_extra_axis(bad_logits)  # (..., V)
BAD["ids6_any"] = _no_extra_axis(bad_ids(6))  # states of any shape
BAD["tree_mdp"] = lambda v: bad_mdp(v) + [("a rollout", ROLLOUT())]  # an enumerated TokenMDP
BAD["mdp_any"] = lambda v: [("None", None), ("str", "x"), ("object", object())]
BAD["toy_prompt"] = lambda v: [("unknown", "1+1"), ("None", None), ("int", 0)]
BAD["toy_response"] = lambda v: [
    ("-1", (-1,)),
    ("9", (9,)),
    ("two tokens", (4, 4)),
    ("empty", ()),
    ("float", (0.5,)),
    ("str", "4"),
    ("None", None),
]
BAD["toy_grader"] = lambda v: bad_grader(v) + [("unknown", "exact"), ("unhashable", ["gold"])]


# sizes that must be refused before any allocation, bools among ids
BAD["count"] = lambda v: BAD["int1"](v) + [("10**12", 10**12)]  # K
BAD["width"] = lambda v: BAD["int1"](v) + [("2**63", 2**63)]  # T, max_len
BAD["turns"] = lambda v: BAD["int1"](v) + [("10**6", 10**6)]  # a tree's depth
BAD["calls"] = lambda v: BAD["ids5"](v) + [("bool among ids", (2, True))]
BAD["prompt_ids"] = lambda v: BAD["ids2"](v) + [("bool among ids", [True, 0])]
BAD["result"] = lambda v: [
    ("str", "abc"),
    ("bytes", b"1"),
    ("None", None),
    ("complex", 1j),
    ("nan", NAN),
    ("inf in a list", [1.0, INF]),
    ("object", object()),
]
BAD["real_result"] = lambda v: BAD["result"](v) + [("bool", True), ("array", np.ones(1)), ("10**400", 10**400)]
BAD["cells"] = lambda v: [("2**31 + 1", 2**31 + 1), ("2**40", 2**40), ("2**63", 2**63), ("10**30", 10**30)]
BAD["not_array"] = lambda v: [("None", None), ("list", np.asarray(v).tolist()), ("str", "x"), ("object", object())]
BAD["shaped"] = lambda v: BAD["not_array"](v) + [("extra axis", np.asarray(v)[..., None]), ("empty", _empty(v))]
BAD["any_float"] = lambda v: [
    (label, x) for label, x in bad_float(v) if label not in ("extra axis", "empty")
]  # no shape asked
BAD["any_ids"] = lambda v: [(label, x) for label, x in bad_ids(3)(v) if label != "extra axis"]
BAD["any_array"] = lambda v: BAD["not_array"](v) + [("empty", _empty(v))]
BAD["generator2"] = lambda v: bad_generator(v) + [("str", "x"), ("Generator class", np.random.Generator)]
BAD["prompts"] = lambda v: [("str", "ab"), ("empty", []), ("None", None), ("int", 3)]
BAD["checkpoint"] = lambda v: [("int", 0), ("-1", -1), ("bool", True), ("str", "a"), ("float", 1.0)]  # enumerated
BAD["reference"] = lambda v: [("None", None), ("float", 1.5), ("class", int), ("list", [v])]
BAD["rows"] = lambda v: [("None", None), ("float", 1.0), ("list of floats", [1.0]), ("str", "x")]
BAD["lines"] = lambda v: [("str", "a line"), ("None", None), ("list of ints", [1]), ("int", 3)]
BAD["kwargs_list"] = lambda v: [("None", None), ("dict", {}), ("list of ints", [1]), ("str", "x")]
