"""A grader: your implementation against the reference, case by case, saying what differs.

Any implementation of an estimator (PyTorch, JAX, NumPy) can be checked against the function of
this package it implements: it takes the reference's arguments by name (NumPy arrays) and returns
what the reference returns (torch tensors are detached; anything `np.asarray` takes will do):

    from minirl_lm import oracle
    from minirl_lm.pg.clip import clipped_surrogate

    print(oracle.report(oracle.compare(my_clipped_loss, clipped_surrogate)))

`cases(reference, seed)` builds seeded inputs from the reference's signature, one generator per
argument name. Each token array holds garbage of its own where its mask is 0 (hundreds of nats:
an exp or a difference taken there before masking overflows to inf or NaN); ratios sit on both
sides of both clip edges, advantages take both signs and 0; masks come right-padded, with holes
and with an empty row; rewards in groups, in equal non-dyadic groups, in groups of one, per
response, per token and per reward; sequence log-probs, logits, probability tables. String
options run over every value the package allows, bools over both; each numeric knob takes its
default, then (one knob at a time) a value that separates it: `eps_high` 0.28 beside `eps` 0.2,
`beta`, `c`, `std_eps`, `ddof`, temperatures. Cases the reference refuses are dropped, but a
dual-clip constant 0.9 stays: yours must refuse it too. Keywords bound by `functools.partial`
stay as bound; `only={"agg": [...]}` keeps the cases whose arguments take the listed values.

`compare(fn, reference)` calls both on every case (fresh copies of the inputs). A case agrees
when both raise, or both return and each output's largest absolute difference over the
reference's largest magnitude (floored at 1e-8) is at most `rtol`, non-finite entries equal. A
NotImplementedError of yours skips the case. `report(rows)` prints, per case, which output
differs and by how much; `python -m minirl_lm.grade` adds the patterns and the known bugs.

Imports NumPy and the package's option tuples (the multi-turn environment on demand only).
"""

import functools
import importlib
import inspect
import itertools
import warnings
from dataclasses import dataclass

import numpy as np

from minirl_lm.boundary import NONNEGATIVE, boundary, number
from minirl_lm.core.ops import AGGS
from minirl_lm.pg.advantages import BASELINES
from minirl_lm.pg.kl import ESTIMATORS
from minirl_lm.pg.offpolicy import ACCUM, LEVELS, MODES
from minirl_lm.pg.seqclip import RATIOS

__all__ = ["Row", "cases", "compare", "report", "a_function", "rows_of", "lines_of", "SEED"]

_OPTIONS = (AGGS, ESTIMATORS, BASELINES, LEVELS, MODES, ACCUM, RATIOS)
_B, _T, _S, _V = 6, 5, 7, 4  # rows, padded width, states of a table, vocabulary
_FLOOR = 1e-8  # the smallest scale a difference is measured against
# one knob at a time: the values beside its default that separate it from its neighbours
_GRID = {
    "eps": [0.1], "eps_high": [0.28], "c": [2.0], "beta": [0.5], "std_eps": [0.1], "gamma": [0.9],
    "lam": [0.8], "temperature": [2.0], "label_smoothing": [0.1], "tau": [0.1], "alpha": [0.3],
    "max_len": [8], "delta_high": [0.3], "rho_min": [0.5], "rho_max": [2.0], "c_max": [2.0],
    "c_min": [0.5], "lo": [0.5], "margin": [0.5], "batch_eps": [0.1], "z0": [0.2],
}  # fmt: skip
_REFUSE = {"c": [0.9]}  # values the reference refuses and yours must: kept whatever it does
_PAD = {"logp_c": "mask_c", "logp_r": "mask_r"}  # a token array's own mask (else `mask`)
_GARBAGE = ("logp", "logp_old", "logp_ref", "logp_mu", "logp_teacher", "logp_c", "logp_r", "entropies")
# arguments that are objects, not arrays: why a reference that takes one is refused
_OBJECTS = {
    "policy": "a policy", "ref_policy": "a policy", "ref": "a policy", "mdp": "an MDP",
    "grader": "a grader", "judge": "a judge", "model": "a network", "cache": "a forward pass's cache",
    "objective": "an objective's name with an MDP", "loss_fn": "a function", "child": "a tree",
}  # fmt: skip


def a_function(what):
    """A callable that is not a class (`what` says whose)."""

    def read(f, name, dims):
        if not callable(f) or isinstance(f, type):
            raise TypeError(f"{name}: expected {what}, got {type(f).__name__}")
        return f

    return read


def rows_of(x, name, dims):
    """A list or tuple of `Row` (what `compare` returned), as a list."""
    if not isinstance(x, (list, tuple)) or not all(isinstance(r, Row) for r in x):
        bad = type(x).__name__ if not isinstance(x, (list, tuple)) else "a sequence holding other objects"
        raise TypeError(f"{name}: expected a list of oracle.Row (what compare returns), got {bad}")
    return list(x)


def lines_of(x, name, dims):
    """A list or tuple of strings (lines of text), as a list."""
    if isinstance(x, (str, bytes)) or not isinstance(x, (list, tuple)) or not all(isinstance(v, str) for v in x):
        raise TypeError(f"{name}: expected a list of lines (strings), got {type(x).__name__} {x!r}"[:200])
    return list(x)


SEED = number(0, integer=True)
_REFERENCE = a_function("a function of minirl_lm")
_FN = a_function("a function (your implementation)")


@dataclass(frozen=True)
class Row:
    """One case: its name, the largest relative difference over its outputs (0.0 when both raised
    or the case was skipped; inf when one raised; NaN when yours is NaN where ours is not), what
    happened, each output's difference `(name, rel)`, and the positions that differ (`where`)."""

    case: str
    rel: float
    outcome: str
    diffs: tuple = ()
    where: tuple = ()

    @boundary(rtol=NONNEGATIVE, returns=None)
    def flagged(self, rtol):
        """Whether the case counts against yours at tolerance `rtol` (a skipped one never).

        Args:
            rtol: a float `>= 0`; the case counts when its `rel` exceeds it or is NaN.

        Returns:
            A bool.
        """
        return not self.outcome.startswith("skipped") and not self.rel <= rtol


# ---- inputs: one generator per argument name, each a list of (label, value) ---------------------
def _masks():
    lengths = np.array([5, 3, 1, 4, 2, 5])
    right = (np.arange(_T)[None, :] < lengths[:, None]).astype(float)  # (B, T) right-padded
    holes = right.copy()
    holes[0, 2] = holes[3, 1] = holes[5, 1] = holes[5, 3] = 0.0  # tool outputs inside responses
    empty = right.copy()
    empty[2] = 0.0  # an all-padding row
    return [("right-padded", right), ("holes", holes), ("an empty row", empty)]


def _generators(rng):
    masks = _masks()
    one = lambda v: [("", v)]  # noqa: E731  (an argument with one variant)
    _probs = lambda rng, *s: (lambda p: p / p.sum(axis=-1, keepdims=True))(rng.uniform(0.1, 1.0, size=s))  # noqa: E731
    logp = -0.5 - np.abs(rng.normal(1.5, 0.6, size=(_B, _T)))  # token log-probs < 0
    rhos = np.array([0.3, 0.75, 0.85, 0.95, 1.0, 1.05, 1.15, 1.25, 1.35, 4.0])  # both clip edges
    ratio = {k: rng.choice(rhos, size=(_B, _T)) for k in ("o", "r", "m", "t")}
    ratio["o"][masks[0][1] > 0] = rng.permutation(np.resize(rhos, int(masks[0][1].sum())))  # each one twice
    near = {k: np.minimum(logp - np.log(r), -1e-3) for k, r in ratio.items()}
    rew = {"groups (3, 2)": (3, 2), "groups (2, 3)": (2, 3), "rewards (N, K, R)": (3, 2, 2)}
    rewards = [(n, rng.integers(0, 2, size=s) + rng.normal(0, 0.3, size=s)) for n, s in rew.items()]
    rewards += [
        ("equal non-dyadic groups", np.full((2, 3), 0.1)),
        ("groups of one", rng.normal(size=(_B, 1))),
        ("per response (B,)", rng.normal(size=_B)),
        ("per token (B, T)", rng.normal(size=(_B, _T)) * masks[1][1]),  # 0 off the policy's tokens
    ]
    gen = {
        k: one(rng.normal(size=(_B, _T)))
        for k in ("deltas", "vpreds", "values_old", "returns", "targets", "dlogp", "x")
    }
    gen.update({k: one(rng.normal(size=_B)) for k in ("dseq", "r_chosen", "r_rejected", "r", "terminal_reward")})
    seqs = ("seq_logp", "seq_logp_c", "seq_logp_r", "seq_logp_ref", "seq_logp_ref_c", "seq_logp_ref_r")
    gen.update({k: one(rng.normal(-3.0, 1.0, size=_B)) for k in seqs})
    gen.update(
        {k: one(rng.normal(0, 2, size=(_B, _T, _V))) for k in ("student_logits", "teacher_logits", "logits")}
    )
    gen.update({k: one(rng.normal(size=(_S, _V))) for k in ("theta", "theta_ref")})
    gen.update({k: [("", _probs(rng, _S, _V)), (f"{k} 0.3", 0.3)] for k in ("p", "q")})
    gen.update(
        {k: [(f"{k} (Y,)", _probs(rng, _V)), (f"{k} (N, Y)", _probs(rng, 2, _V))] for k in ("pi", "pi_ref")}
    )
    scalars = dict(clip=0.2, delta=0.1, kl=0.3, coef=0.1, entropy=0.3, current_kl=0.3, target_kl=0.1, gap=0.5,
                   horizon=100.0, n_steps=8.0, mixup=0.6, max_len=_T, buffer_len=2, eos=_V - 1, B=_B, M=2,
                   loss_type="sigmoid")  # fmt: skip
    gen.update({k: one(v) for k, v in scalars.items()})
    gen.update(
        {k: [(f"{k} {v}", v) for v in vs] for k, vs in dict(G=(2, 3), K=(2, 4), N=(1, 4), k=(1, 2)).items()}
    )
    gen.update(
        mask=masks, mask_c=[(f"chosen {n}", m) for n, m in masks], action_mask=one(masks[1][1]), logp=one(logp),
        mask_r=[("rejected right-padded", masks[0][1])],
        logp_old=one(near["o"]), logp_ref=one(near["r"]), logp_mu=one(near["m"]), logp_teacher=one(near["t"]),
        logp_c=one(logp), logp_r=one(near["o"]), logp_other=one(near["r"]), rewards=rewards,
        adv=one(np.array([1.0, -1.0, 0.5, -2.0, 0.0, 1.5])), token_rewards=one(rewards[-1][1]),
        greedy_rewards=[(f"greedy ({n},)", rng.normal(size=n)) for n in (3, 2, 6)],
        lengths=[(f"lengths {s}", rng.integers(1, _T + 1, size=s)) for s in ((3, 2), (2, 3), (_B,))],
        values=[("table (S,)", rng.normal(size=_S)), ("per position (B, T)", rng.normal(size=(_B, _T)))],
        states=one(rng.integers(0, _S, size=(_B, _T))), entropies=one(rng.uniform(0.0, 1.4, size=(_B, _T))),
        sum_pi_sq=one(rng.uniform(0.05, 1.0, size=(_B, _T))), weights=one(rng.uniform(0.0, 2.0, size=(_B, _T))),
        desirable=one(np.array([True, False, True, True, False, False])),
        accept=one(np.array([True, False, True, True, False, True])),
        label=one(rng.integers(0, 2, size=_B).astype(float)), tokens=one(rng.integers(0, _V, size=(_B, _T))),
        z=one(rng.normal(0, 2, size=(_B, _V))), mu=one(_probs(rng, _V)), r_hat=one(rng.normal(size=_V)),
        reward=[("reward (Y,)", rng.normal(size=_V)), ("reward (N, Y)", rng.normal(size=(2, _V)))],
        log_odds=one(1.0), agg=[(f"agg {a}", a) for a in AGGS], beta=[("beta 0.1", 0.1), ("beta 0.5", 0.5)],
        c=[("c 3", 3.0), ("c 0.9", 0.9)],
    )  # fmt: skip
    return gen


def _environment(which):
    """The calculator of the multi-turn chapter and every episode of it, imported on demand (a
    copy of this file leaves the environment out: its references that take one are refused)."""
    try:
        calculator = importlib.import_module("minirl_lm.multiturn.calculator").calculator
    except ImportError:
        msg = f"reference: its argument {which!r} is the multi-turn environment, which this copy leaves out"
        raise TypeError(msg + ": grade it with the package") from None
    env = calculator(0.8, 0.1)
    return {"env": [("calculator", env)], "ep": [("every episode", env.all_episodes())]}


def _option_values(fn, name, default):
    """Every allowed value of a string option: the package's tuple that holds its default."""
    module = inspect.getmodule(fn)
    pool = [v for v in vars(module).values() if isinstance(v, tuple)] if module else []
    for values in pool + list(_OPTIONS):
        if default in values and all(isinstance(v, str) for v in values):
            return [(f"{name} {v}", v) for v in values]
    return [("", default)]


def _knob(name, default):
    """A numeric knob's default first, then the values of the grid (an int 0/1 knob: the other)."""
    alt = [v for v in _GRID.get(name, [2.0 * default if default else 0.5]) if v != default]
    alt = [1 - default] if name == "ddof" else alt if isinstance(default, float) or name in _GRID else []
    return [("", default)] + [(f"{name} {v}", v) for v in alt + _REFUSE.get(name, [])]


def _axes(reference, gen):
    """(name, variants, is_knob) per argument of `reference`; a bound keyword stays as bound."""
    bound = reference.keywords if isinstance(reference, functools.partial) else {}
    name_of = getattr(reference, "__name__", None) or getattr(getattr(reference, "func", None), "__name__", None)
    name_of = name_of or "the reference"  # a callable object has no name
    axes = []
    for name, p in inspect.signature(reference).parameters.items():
        if name in bound:
            continue
        if name in ("env", "ep") and name not in gen:
            gen.update(_environment(name))
        if name in _OBJECTS or name == "rng" and p.default is inspect.Parameter.empty:
            what = _OBJECTS.get(name, "a random generator driving a sampler")
            raise TypeError(
                f"reference: {name_of} takes {name!r}, {what}: the grader compares functions of arrays; "
                "check the estimators it is built from"
            )
        if p.default is inspect.Parameter.empty:
            if name not in gen:
                raise TypeError(
                    f"reference: {name_of} takes {name!r}, which the grader does not draw: bind it, "
                    f"functools.partial({name_of}, {name}=...)"
                )
            axes.append((name, gen[name], False))
        elif isinstance(p.default, bool):
            axes.append((name, [(f"{name} {v}", v) for v in (p.default, not p.default)], False))
        elif isinstance(p.default, str):
            axes.append((name, _option_values(reference, name, p.default), False))
        elif isinstance(p.default, (int, float)) or p.default is None:
            axes.append((name, _knob(name, p.default), True))
    return axes


def _garnish(kwargs, rng_garbage):
    """Garbage of its own where each token array's mask is 0 (a fresh draw per array)."""
    out = dict(kwargs)
    for key in [k for k in out if k in _GARBAGE]:
        m = out.get(_PAD.get(key, "mask"))
        if isinstance(m, np.ndarray) and isinstance(out[key], np.ndarray) and out[key].shape == m.shape:
            out[key] = np.where(m > 0, out[key], rng_garbage[key])
    return out


@boundary(reference=_REFERENCE, seed=SEED, returns=None)
def cases(reference, seed=0, only=None):
    """The seeded cases of `reference`: every combination of its arrays' and options' variants
    with the knobs at their defaults, then each knob's other values one at a time; cases the
    reference refuses are dropped, but for `_REFUSE`'s values.

    Args:
        reference: a function of minirl_lm (or a `functools.partial` of one: bound keywords stay
            as bound) taking arrays by name; not a class.
        seed: an int `>= 0`, the seed of the inputs.
        only: None, or a dict mapping an argument the cases vary to the values to keep
            (`{"agg": ["token_mean"]}`).

    Returns:
        A list of `(name, kwargs)`.

    Raises:
        TypeError: the reference takes an argument the grader does not draw (an object, a random
            generator, an unknown name), or refuses every case; `only` not a dict.
        ValueError: `only` names an argument or a value the cases do not vary.
    """
    rng = np.random.default_rng(seed)
    gen = _generators(rng)
    sign = {k: rng.choice([-1.0, 1.0], size=(_B, _T)) for k in _GARBAGE}
    garbage = {k: sign[k] * rng.uniform(300.0, 800.0, size=(_B, _T)) for k in _GARBAGE}
    axes = _axes(reference, gen)
    only = _only(only, axes)
    plain = [(n, v if not knob else v[:1]) for n, v, knob in axes]
    base = list(itertools.product(*(v for _, v in plain)))  # then one knob at a time, off its default:
    combos = base + [
        c[:i] + (alt,) + c[i + 1 :] for i, (_, v, knob) in enumerate(axes) if knob for alt in v[1:] for c in base
    ]
    out = []
    for combo in combos:
        kwargs = {name: value for (name, _, _), (_, value) in zip(axes, combo)}
        if any(kwargs[name] not in values for name, values in only.items()):
            continue
        label = ", ".join(lab for lab, _ in combo if lab) or "default"
        dressed = _garnish(kwargs, garbage)
        must_refuse = any(kwargs.get(name) in values for name, values in _REFUSE.items())
        if must_refuse or _call(reference, dressed)[1] is None:
            out.append((label, dressed))
        elif dressed is not kwargs and _call(reference, kwargs)[1] is None:
            out.append((label, kwargs))  # a reference that refuses garbage gets none
    if not out:
        raise TypeError("reference: refuses every case the grader draws for it (bind its arguments: partial)")
    return out


def _only(only, axes):
    names = {n: [v for _, v in values if isinstance(v, (str, int, float, type(None)))] for n, values, _ in axes}
    if not isinstance(only if only is not None else {}, dict):
        raise TypeError(f"only: expected a dict of argument -> values, got {type(only).__name__}")
    for name, values in (only or {}).items():
        if name not in names:
            raise ValueError(f"only: the reference has no varied argument {name!r} (it has {sorted(names)})")
        bad = [v for v in values if v not in names[name]]
        if bad:
            raise ValueError(f"only: {name} takes {sorted(map(repr, names[name]))}, got {bad[0]!r}")
    return only or {}


# ---- the comparison ----------------------------------------------------------------------------
def _names(reference, n):
    """Names of the `n` leaves of the reference's result: its declared `returns=` (the boundary),
    else its docstring's `Returns:` (`(loss, dloss_dlogp)`), else `output 1`, `output 2`, ..."""
    declared = getattr(getattr(reference, "func", reference), "returns", None)
    if isinstance(declared, list) and len(declared) == n:
        return declared
    doc = inspect.getdoc(getattr(reference, "func", reference)) or ""
    tail = doc.split("Returns:", 1)[1] if "Returns:" in doc else ""
    span = tail.split("`")[1] if tail.count("`") >= 2 else ""
    words = [w.split()[0] for w in span.replace("(", " ").replace(")", " ").split(",") if w.split()]
    if span.startswith("(") and len(words) == n:
        return words
    return ["result"] if n == 1 else [f"output {i + 1}" for i in range(n)]


def _leaves(out):
    if isinstance(out, dict):
        return [x for k in sorted(out) for x in _leaves(out[k])]
    if isinstance(out, (tuple, list)):
        return [x for item in out for x in _leaves(item)]
    return [out]


def _array(x):
    """Anything np.asarray takes; a torch tensor is detached and moved to the CPU first."""
    for step in ("detach", "cpu", "numpy"):
        if hasattr(x, step) and callable(getattr(x, step)):
            x = getattr(x, step)()
    return np.asarray(x, dtype=float)


def _rel(a, b):
    """Largest |a - b| over the reference's largest magnitude (floored); inf on a shape change
    or a non-finite entry where the reference's is another; NaN when yours has a NaN there."""
    try:
        a, b = _array(a), _array(b)
    except (TypeError, ValueError):  # not numbers: equal or not
        try:
            return 0.0 if np.array_equal(a, b) else np.inf
        except Exception:  # an output that cannot be compared is not the reference's
            return np.inf
    if a.shape != b.shape:
        return np.inf
    fa, fb = np.isfinite(a), np.isfinite(b)
    if not (np.array_equal(fa, fb) and np.array_equal(a[~fa], b[~fb], equal_nan=True)):
        return np.nan if np.isnan(a[fb]).any() or np.isnan(a).any() else np.inf
    return float(np.abs(a[fa] - b[fa]).max(initial=0.0) / max(np.abs(b[fb]).max(initial=0.0), _FLOOR))


def _where(got, want, mask, rtol):
    """The `(b, t)` positions where a `(B, T)` output of yours differs from the reference's."""
    out = set()
    for a, b in zip(got, want):
        try:
            a, b = _array(a), _array(b)
        except (TypeError, ValueError):  # not numbers: _rel compares them whole
            continue
        if isinstance(mask, np.ndarray) and a.shape == b.shape == mask.shape:
            scale = max(np.abs(b[np.isfinite(b)]).max(initial=0.0), _FLOOR)
            with np.errstate(invalid="ignore"):
                bad = ~(np.abs(a - b) <= rtol * scale) & ~((a == b) | (np.isnan(a) & np.isnan(b)))
            out |= {(int(i), int(j)) for i, j in zip(*np.nonzero(bad))}
    return tuple(sorted(out))


def _call(f, kwargs):
    fresh = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a warning of yours is not an outcome
            return f(**fresh), None
    except Exception as error:  # an outcome to compare, whatever it is
        return None, error


def _says(error):
    return f"{type(error).__name__}: {str(error).splitlines()[0][:120] if str(error) else '(no message)'}"


@boundary(fn=_FN, reference=_REFERENCE, seed=SEED, rtol=NONNEGATIVE, returns=None)
def compare(fn, reference, seed=0, only=None, rtol=1e-6):
    """Run `fn` and `reference` on every case of `cases(reference, seed, only)`; one `Row` per case.

    Args:
        fn: your implementation, a function (not a class) taking the reference's arguments by name.
        reference: the function of minirl_lm it implements, as in `cases`.
        seed: an int `>= 0`, the seed of the cases.
        only: None, or the values to keep per argument, as in `cases`.
        rtol: a float `>= 0`; it only decides which positions count as differing, for `Row.where`.

    Returns:
        A list of `Row`, one per case, in the order of `cases`.
    """
    rows = []
    for name, kwargs in cases.core(reference, seed, only):
        want, refused = _call(reference, kwargs)
        got, raised = _call(fn, kwargs)
        if isinstance(raised, NotImplementedError):
            rows.append(Row(name, 0.0, f"skipped: yours raises {_says(raised)}"))
        elif refused is not None and raised is not None:
            rows.append(Row(name, 0.0, f"both raise (ours {_says(refused)})"))
        elif refused is not None:
            rows.append(Row(name, np.inf, f"accepts what the reference refuses ({_says(refused)})"))
        elif raised is not None:
            rows.append(Row(name, np.inf, f"raises {_says(raised)}"))
        else:
            a, b = _leaves(got), _leaves(want)
            if len(a) != len(b):
                what = f"returns {len(a)} outputs, the reference {len(b)}"
                rows.append(Row(name, np.inf, what, (("result", np.inf),)))
                continue
            diffs = tuple(zip(_names(reference, len(b)), (_rel(x, y) for x, y in zip(a, b))))
            rel = max((d for _, d in diffs), key=lambda d: (np.isnan(d), d), default=0.0)
            rows.append(Row(name, rel, "returns", diffs, _where(a, b, kwargs.get("mask"), rtol)))
    return rows


# ---- the report ---------------------------------------------------------------------------------
@boundary(rows=rows_of, rtol=NONNEGATIVE, notes=lines_of, returns=None)
def report(rows, rtol=1e-6, notes=()):
    """The rows as text, one line per case (which outputs differ), then the skipped cases apart,
    the notes, and `flagged: F of N cases (max rel err X)`.

    Args:
        rows: a list or tuple of `Row`, what `compare` returned.
        rtol: a float `>= 0`, the tolerance a case is flagged at (`Row.flagged`).
        notes: a list or tuple of strings, the caller's lines (the patterns, the findings), printed
            before the last line.

    Returns:
        A string, one line per case.
    """
    lines, skipped = [], [r for r in rows if r.outcome.startswith("skipped")]
    for r in rows:
        if r in skipped:
            continue
        off = [f"{n} {d:.1e}" for n, d in r.diffs if not d <= rtol]
        what = f"{r.outcome}; differs: {', '.join(off)}" if off else r.outcome
        lines.append(f"{'FLAGGED' if Row.flagged.core(r, rtol) else 'ok':7} {r.rel:9.2e}  {r.case}: {what}")
    if skipped:
        lines.append(f"skipped: {len(skipped)} cases yours does not implement (NotImplementedError), not graded:")
        lines += [f"  {r.case}: {r.outcome[9:]}" for r in skipped]
    lines += list(notes)
    graded = [r for r in rows if r not in skipped]
    worst = max((r.rel for r in graded), key=lambda d: (np.isnan(d), d), default=0.0)
    n = sum(Row.flagged.core(r, rtol) for r in graded)
    return "\n".join(lines + [f"flagged: {n} of {len(graded)} cases (max rel err {worst:.2e})"])
