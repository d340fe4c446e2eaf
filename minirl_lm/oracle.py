"""A test oracle: your implementation against the reference, case by case.

Any implementation of an estimator (PyTorch, JAX, your own NumPy) can be checked against the
function of this package it implements: wrap yours so that it takes the reference's arguments by
name and returns NumPy arrays, then

    from minirl_lm import oracle
    from minirl_lm.pg.clip import clipped_surrogate

    rows = oracle.compare(my_clipped_loss, clipped_surrogate)
    print(oracle.report(rows))

`cases(reference, seed)` builds the seeded inputs from the reference's signature, one generator
per argument name, and every combination of them:

- token arrays (`logp`, `logp_old`, `logp_ref`, `logp_mu`, ...) hold garbage (large and random)
  at every position the mask zeroes; the old and reference log-probs sit up to 1.5 nats away, so
  ratios leave the clip range (and pass the dual-clip constant 3) on both sides;
- masks come right-padded, with holes inside a response (a tool output), and with an
  all-padding row; advantages take both signs and 0;
- rewards come in groups, in groups of equal non-dyadic rewards (0.1: a group mean that is
  inexact in floating point), as groups of one response, and per response or per token;
- an option with a string default runs through every value the package allows (`agg` over every
  aggregation, `estimator` over k1, k2, k3, ...); a numeric knob takes its default, and a
  constant that must exceed 1 takes 0.9 too (the reference refuses it: yours must too).

`compare(fn, reference)` calls both on every case with the same keyword arguments (fresh copies,
so neither sees the other's writes). Outcomes agree when both raise, or when both return and
every output (a tuple's items, a dict's values) agrees: the largest absolute difference of an
output, over its reference's largest magnitude floored at 1e-8, is at most `rtol`.

Imports NumPy and the package's estimators.
"""

import inspect
import itertools
from dataclasses import dataclass

import numpy as np

from minirl_lm.core.ops import AGGS
from minirl_lm.multiturn.calculator import calculator
from minirl_lm.pg.advantages import BASELINES
from minirl_lm.pg.kl import ESTIMATORS
from minirl_lm.pg.offpolicy import ACCUM, LEVELS, MODES
from minirl_lm.pg.seqclip import RATIOS

_OPTIONS = (AGGS, ESTIMATORS, BASELINES, LEVELS, MODES, ACCUM, RATIOS)
_B, _T, _S = 6, 5, 7  # rows, padded width, states of a table
_GROUPS = {"groups (3, 2)": (3, 2), "groups (2, 3)": (2, 3)}
_FLOOR = 1e-8  # the smallest scale a difference is measured against


@dataclass(frozen=True)
class Row:
    """One case of a comparison: its name, the largest relative difference over its outputs
    (0.0 when both raised; inf when one raised and the other did not), and what happened."""

    case: str
    rel: float
    outcome: str

    def flagged(self, rtol):
        return not self.rel <= rtol


# ---- inputs, one generator per argument name: a list of (label, value) ---------------------------
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
    logp = -np.abs(rng.normal(1.0, 0.6, size=(_B, _T)))  # token log-probs < 0
    shifts = rng.choice([-1.5, -0.4, -0.1, 0.0, 0.1, 0.4, 1.5], size=(_B, _T))
    other = {k: np.minimum(logp + shifts * s, -1e-3) for k, s in (("old", 1.0), ("ref", -0.7), ("mu", 0.5))}
    garbage = rng.uniform(-40.0, 40.0, size=(_B, _T))
    # rewards: (N, K) groups, (B,) per response, (B, T) per token: a reference refuses the shapes
    # it does not take, and so must yours
    rewards = [
        (name, rng.integers(0, 2, size=nk).astype(float) + rng.normal(0, 0.3, size=nk))
        for name, nk in _GROUPS.items()
    ]
    rewards += [
        ("equal non-dyadic groups", np.full((2, 3), 0.1)),
        ("groups of one", rng.normal(size=(_B, 1))),
        ("per response (B,)", rng.normal(size=_B)),
        ("per token (B, T)", rng.normal(size=(_B, _T)) * masks[1][1]),  # 0 off the policy's tokens
    ]
    env = calculator(0.8, 0.1)
    return {
        "mask": masks,
        "logp": [("", logp)],
        "logp_old": [("", other["old"])],
        "logp_ref": [("", other["ref"])],
        "logp_mu": [("", other["mu"])],
        "adv": [("", np.array([1.0, -1.0, 0.5, -2.0, 0.0, 1.5]))],
        "rewards": rewards,
        "terminal_reward": [("", rng.normal(size=_B))],
        "values": [("table (S,)", rng.normal(size=_S)), ("per position (B, T)", rng.normal(size=(_B, _T)))],
        "states": [("", rng.integers(0, _S, size=(_B, _T)))],
        "deltas": [("", rng.normal(size=(_B, _T)))],
        "action_mask": [("", masks[1][1])],
        "G": [("G 2", 2), ("G 3", 3)],
        "beta": [("beta 0.1", 0.1)],
        "c": [("c 3", 3.0), ("c 0.9", 0.9)],
        "env": [("calculator", env)],
        "ep": [("every episode", env.all_episodes())],
        "_garbage": garbage,
    }


def _pair_args(gen, rng):
    """The preference losses' chosen/rejected arrays: two token batches and their references."""
    masks = gen["mask"]
    lp = gen["logp"][0][1]
    return {
        "logp_c": [("", lp)],
        "logp_r": [("", gen["logp_old"][0][1])],
        "mask_c": masks,
        "mask_r": [masks[0]],
        "seq_logp_ref_c": [("", rng.normal(-3.0, 1.0, size=_B))],
        "seq_logp_ref_r": [("", rng.normal(-3.0, 1.0, size=_B))],
    }


def _option_values(fn, name, default):
    """Every allowed value of a string option: the package's tuple that holds its default."""
    pool = [v for v in vars(inspect.getmodule(fn)).values() if isinstance(v, tuple)] + list(_OPTIONS)
    for values in pool:
        if default in values and all(isinstance(v, str) for v in values):
            return [(f"{name} {v}", v) for v in values]
    return [("", default)]


def cases(reference, seed=0):
    """The seeded cases of `reference`: a list of `(name, kwargs)`, every combination of its
    arguments' variants (arguments with a default the package cannot vary keep the default)."""
    if not callable(reference):
        raise TypeError(f"reference: expected a function of minirl_lm, got {type(reference).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed: expected an integer >= 0, got {seed!r}")
    rng = np.random.default_rng(seed)
    gen = _generators(rng)
    gen.update(_pair_args(gen, rng))
    axes = []
    for name, p in inspect.signature(reference).parameters.items():
        if name in gen:
            axes.append((name, gen[name]))
        elif isinstance(p.default, bool):
            axes.append((name, [(f"{name} {v}", v) for v in (p.default, not p.default)]))
        elif isinstance(p.default, str):
            axes.append((name, _option_values(reference, name, p.default)))
        elif p.default is inspect.Parameter.empty:
            raise TypeError(f"reference: no input generator for its argument {name!r}")
    out = []
    for combo in itertools.product(*(values for _, values in axes)):
        kwargs = {name: value for (name, _), (_, value) in zip(axes, combo)}
        for key in [k for k in kwargs if k.startswith("logp")]:  # garbage where the mask is 0
            m = kwargs.get({"logp_c": "mask_c", "logp_r": "mask_r"}.get(key, "mask"))  # its own mask
            if m is not None and kwargs[key].shape == m.shape:
                kwargs[key] = np.where(m > 0, kwargs[key], gen["_garbage"])
        label = ", ".join(lab for (_, _), (lab, _) in zip(axes, combo) if lab) or "default"
        out.append((label, kwargs))
    return out


# ---- the comparison ----------------------------------------------------------------------------
def _leaves(out):
    if isinstance(out, dict):
        return [x for k in sorted(out) for x in _leaves(out[k])]
    if isinstance(out, (tuple, list)):
        return [x for item in out for x in _leaves(item)]
    return [out]


def _rel(a, b):
    """Largest |a - b| over the reference's largest magnitude (floored); inf on a shape change."""
    try:
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    except (TypeError, ValueError):
        return 0.0 if a == b else np.inf
    if a.shape != b.shape:
        return np.inf
    if not np.all(np.isfinite(a)):
        return np.inf
    return float(np.abs(a - b).max(initial=0.0) / max(np.abs(b).max(initial=0.0), _FLOOR))


def _call(f, kwargs):
    fresh = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    try:
        return f(**fresh), None
    except Exception as error:  # an outcome to compare, whatever it is
        return None, error


def compare(fn, reference, seed=0):
    """Run `fn` and `reference` on every case of `cases(reference, seed)`; one `Row` per case."""
    if not callable(fn):
        raise TypeError(f"fn: expected a function (your implementation), got {type(fn).__name__}")
    rows = []
    for name, kwargs in cases(reference, seed):
        want, refused = _call(reference, kwargs)
        got, raised = _call(fn, kwargs)
        if refused is not None or raised is not None:
            both = refused is not None and raised is not None
            what = (
                "both raise"
                if both
                else (
                    "accepts what the reference refuses" if raised is None else f"raises {type(raised).__name__}"
                )
            )
            rows.append(Row(name, 0.0 if both else np.inf, what))
            continue
        a, b = _leaves(got), _leaves(want)
        rel = np.inf if len(a) != len(b) else max((_rel(x, y) for x, y in zip(a, b)), default=0.0)
        rows.append(Row(name, rel, "returns"))
    return rows


def report(rows, rtol=1e-6):
    """The rows as text, one line per case, then `flagged: F of N cases (max rel err X)`."""
    if not isinstance(rtol, float) or not rtol >= 0.0:
        raise ValueError(f"rtol: expected a float >= 0, got {rtol!r}")
    lines = [f"{'FLAGGED' if r.flagged(rtol) else 'ok':7} {r.rel:9.2e}  {r.case}: {r.outcome}" for r in rows]
    worst = max((r.rel for r in rows), default=0.0)
    n = sum(r.flagged(rtol) for r in rows)
    return "\n".join(lines + [f"flagged: {n} of {len(rows)} cases (max rel err {worst:.2e})"])
