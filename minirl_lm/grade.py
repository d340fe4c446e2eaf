"""Grade your own implementation of an estimator, and name the bug when it is a known one.

    python -m minirl_lm.grade clip path/to/mine.py          # exit 0: agrees; 1: does not
    python -m minirl_lm.grade --list                        # the exercises
    python -m minirl_lm.grade kl mine.py --only estimator=k3 --only agg=token_mean,seq_sum

FILE defines the function the exercise names (`clipped_surrogate` for `clip`), taking the
reference's arguments by name as NumPy arrays and returning what it returns (a PyTorch function
needs a few lines of wrapping: the chapter pages show them). The grader prints the oracle's
report (`oracle.compare` on the reference's cases) and what the flagged cases tell:

- patterns: the positions every difference sits at (padding, a clip region, the last real
  token, the sign of A), the inputs the flagged cases have (holes, groups of one, ...);
- hypotheses: yours equals the reference at another option value (k1 computing k3) or knob
  value (beta ignored or negated, TRL's `std_eps`/`ddof`, clip bounds swapped), times a constant,
  with rows that move when only other groups move, and a few bugs of the zoo by their signature.

A finding that is a bug of the bugs page (docs/bugs.md: the bug zoo) or of the confusions page
names the page and its anchor. `grade(fn, reference)` does it in Python.
"""

import argparse
import functools
import importlib.util
import inspect
import re
import sys
from pathlib import Path

import numpy as np

from minirl_lm import oracle
from minirl_lm.boundary import NONNEGATIVE, boundary
from minirl_lm.core.logprob import token_logp
from minirl_lm.direct.dpo import dpo_loss
from minirl_lm.direct.preferences import ipo_loss
from minirl_lm.pg.advantages import advantages
from minirl_lm.pg.clip import clipped_surrogate
from minirl_lm.pg.entropy import entropy_bonus
from minirl_lm.pg.grpo import grpo_loss
from minirl_lm.pg.kl import kl_penalty
from minirl_lm.pg.offpolicy import is_weights
from minirl_lm.pg.shaping import overlong_penalty
from minirl_lm.values.critic import gae

# exercise -> (reference, the chapter page that sets it)
__all__ = ["EXERCISES", "NAMED", "KNOBS", "TRL", "patterns", "grade", "main"]

EXERCISES = {
    "logprob": (token_logp, "primitive.md"),
    "gae": (gae, "token_vs_sequence.md"),
    "advantages": (advantages, "baselines.md"),
    "clip": (clipped_surrogate, "clip.md"),
    "kl": (kl_penalty, "kl.md"),
    "grpo": (grpo_loss, "grpo.md"),
    "overlong": (overlong_penalty, "atlas.md"),
    "dpo": (dpo_loss, "contract.md"),
    "ipo": (ipo_loss, "preferences.md"),
    "is_weights": (is_weights, "off_policy.md"),
    "entropy": (entropy_bonus, "entropy.md"),
}
B = "bugs.md#"
# a finding -> the known bug or confusion it is, with its page and anchor
NAMED = {
    ("option", "estimator", "k1", "k3"): B + "a-kl-estimator-falls-through-to-k3",
    ("option", "average", True, False): B + "ipo-on-summed-log-ratios-where-averaged-ones-were-meant",
    ("option", "carry", True, False): B + "returns-and-gae-reset-at-every-observation-token",
    ("knob", "beta", "0"): B + "the-kl-coefficient-silently-ignored",
    ("knob", "beta", "-beta"): B + "the-kl-loss-maximized",
    ("knob", "ddof", "1"): "confusions.md#bessel-versus-population-standard-deviation-at-k-2",
    ("trl",): "confusions.md#bessel-versus-population-standard-deviation-at-k-2",
    ("over", "G"): B + "the-accumulation-normalizer-divided-twice",
    ("leak",): B + "batch-statistics-instead-of-group-statistics",
    ("sign", "clip_fraction"): B + "the-clip-fraction-counted-with-the-wrong-sign",
    ("tool tokens",): B + "observation-tokens-trained-on",
    ("row sums",): B + "the-token-level-kl-paid-as-a-sequence-kl-at-the-end",
    ("A > 0", "dual_clip_surrogate"): B + "dual-clip-on-positive-advantages",
    ("at", "the last real token"): B + "gae-reads-the-critics-value-at-padding",
    ("with", "groups of one"): B + "a-group-of-one-keeps-its-raw-reward",
    ("with", "equal non-dyadic groups"): B + "equal-rewards-and-floating-point-residue",
    ("with", "c 0.9"): B + "a-dual-clip-constant-below-one",
    ("with", "agg"): "confusions.md#per-sequence-token-mean-token-mean-constant-normalizer",
    ("at", "padding"): "something computed at padding before the mask (an exp of garbage, a term left unmasked)",
    ("swap",): "the clip bounds swapped, 1 - eps_high and 1 + eps (clip.md)",
}


KNOBS = ("std_eps", "ddof", "eps", "eps_high", "max_len", "temperature", "gamma", "lam", "c", "label_smoothing")
TRL = (
    "yours computes TRL's knobs, std_eps=1e-4 and ddof=1: take them as arguments, or bind the reference "
    "to them, functools.partial(reference, std_eps=1e-4, ddof=1)"
)


def _name(reference):
    """The reference's name: its own, a partial's function's, else "the reference" (an object)."""
    func = getattr(reference, "func", None)
    return getattr(reference, "__name__", None) or getattr(func, "__name__", None) or "the reference"


def _line(text, key):
    """`text`, then the known bug or confusion `key` names: its title and its page's anchor."""
    if key not in NAMED:
        return text
    page, _, anchor = NAMED[key].partition("#")
    return f"{text}: {anchor.replace('-', ' ')} ({page}#{anchor})" if anchor else f"{text}: {page}"


# ---- patterns: read off the flagged rows and their cases ----------------------------------------
def _defaults(reference):
    """The reference's defaults by name, a partial's bound values included (its signature's)."""
    try:
        params = inspect.signature(reference).parameters.values()
    except (TypeError, ValueError):  # a builtin: no defaults to read
        return {}
    return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}


def _classes(kw):
    """Each position's class: padding, the last real token, a clip region of its ratio and A."""
    m = kw["mask"]
    cls = np.full(m.shape, "a real token", dtype=object)
    for b in np.flatnonzero(m.sum(axis=1) > 0):
        cls[b, np.flatnonzero(m[b])[-1]] = "the last real token"
    if "eps" in kw and all(isinstance(kw.get(k), np.ndarray) for k in ("logp", "logp_old", "adv")):
        eps, hi = kw["eps"], kw.get("eps_high")  # a clipped objective's range
        hi = 1.0 + (eps if hi is None else hi)
        A = np.broadcast_to(kw["adv"][:, None] if kw["adv"].ndim == 1 else kw["adv"], m.shape)
        with np.errstate(over="ignore", invalid="ignore"):  # garbage at padding: its class is set below
            rho = np.exp(kw["logp"] - kw["logp_old"])
        cls[:] = np.where(A > 0, "rho inside the clip range, A > 0", "rho inside the clip range, A < 0")
        cls[A == 0] = "A = 0"
        up, down = rho > hi, rho < 1 - eps
        cls[up & (A > 0)], cls[down & (A < 0)] = "rho > 1+eps_high, A > 0", "rho < 1-eps, A < 0"
        cls[up & (A < 0)], cls[down & (A > 0)] = "rho > 1+eps_high, A < 0", "rho < 1-eps, A > 0"
    cls[m == 0] = "padding"
    return cls


_FN = oracle.a_function("a function (your implementation)")
_REFERENCE = oracle.a_function("a function of minirl_lm")


def _case_list(x, name, dims):
    """A list or tuple of dicts (the cases' keyword arguments), as a list."""
    if not isinstance(x, (list, tuple)) or not all(isinstance(kw, dict) for kw in x):
        raise TypeError(f"{name}: expected a list of dicts (each case's arguments), got {type(x).__name__}")
    return list(x)


def _one_kwargs_per_row(rows, kwargs):
    """One case's arguments per row."""
    if len(kwargs) != len(rows):
        return f"kwargs: expected one dict per row ({len(rows)}), got {len(kwargs)}"
    return None


def _an_exercise(x, name, dims):
    """An exercise's name (`EXERCISES`), as its reference function, or a function."""
    if isinstance(x, str):
        if x not in EXERCISES:
            raise ValueError(
                f"{name}: expected an exercise ({', '.join(EXERCISES)}) or a function, got {x!r}"[:200]
            )
        return EXERCISES[x][0]
    return _REFERENCE(x, name, dims)


def _labels(case):
    """A case's name cut into its inputs' labels, at the commas outside parentheses."""
    return re.split(r", (?![^(]*\))", case)


@boundary(
    rows=oracle.rows_of,
    kwargs=_case_list,
    reference=_REFERENCE,
    rtol=NONNEGATIVE,
    where=[_one_kwargs_per_row],
    returns=None,
)
def patterns(rows, kwargs, reference, rtol=1e-6):
    """Lines for the patterns the flagged rows share.

    Args:
        rows: a list or tuple of `oracle.Row`, what `oracle.compare` returned.
        kwargs: a list or tuple of dicts, each row's case arguments, in order (one per row).
        reference: the function of minirl_lm the rows compared against (not a class).
        rtol: a float `>= 0`, the tolerance a row is flagged at (`Row.flagged`).

    Returns:
        A list of strings, each naming the known bug or confusion it is when it is one.
    """
    bad = [(r, kw) for r, kw in zip(rows, kwargs) if r.flagged.core(r, rtol)]
    good = [r for r in rows if not r.flagged.core(r, rtol) and not r.outcome.startswith("skipped")]
    out = []
    places = []
    for r, kw in bad:
        cls = _classes({**_defaults(reference), **kw}) if isinstance(kw.get("mask"), np.ndarray) else None
        places.append({cls[p] for p in r.where} if cls is not None and r.where else None)
    if bad and all(places):
        union = set().union(*places)
        if len(union) <= 2:
            text = "pattern: the differences sit only at " + " and ".join(f"[{p}]" for p in sorted(union))
            key = ("at", next(iter(union))) if len(union) == 1 else ("swap",)
            swap = union == {"rho > 1+eps_high, A > 0", "rho < 1-eps, A < 0"}
            out.append(_line(text, key) if len(union) == 1 or swap else text)
        for sign in ("A > 0", "A < 0"):
            if union - {"padding"} and all(p.endswith(sign) or p == "padding" for p in union):
                out.append(
                    _line(f"pattern: the differences sit only at tokens with {sign}", (sign, _name(reference)))
                )
    labels = [set(_labels(r.case)) for r, _ in bad]
    for lab in sorted(set.intersection(*labels) - {"default"} if labels else ()):
        if good and any(lab not in _labels(r.case) for r in good):
            key = ("with", lab) if ("with", lab) in NAMED else ("with", lab.split()[0])
            out.append(_line(f"pattern: flagged only on cases with [{lab}]", key))
    known = [k[1] for k in NAMED if k[0] == "with" and any(k[1] in lab for lab in labels)]
    if len(labels) > 1 and not set.intersection(*labels) - {"default"} and all(lab & set(known) for lab in labels):
        out += [
            _line(f"pattern: flagged only on cases with [{k}] or another known input", ("with", k)) for k in known
        ]
    if bad and all(any(np.isnan(d) for _, d in r.diffs) for r, _ in bad):
        out.append(
            _line(
                "pattern: yours is NaN where the reference is finite (0 * inf)",
                ("at", "padding"),
            )
        )
    if bad and all(r.outcome.startswith("accepts") for r, _ in bad):
        out.append("pattern: flagged only where the reference refuses its input: yours must raise there too")
    return out


# ---- hypotheses: what yours computes instead, tried on the flagged cases -------------------------
def _agrees(fn_out, want, rtol):
    a, b = oracle._leaves(fn_out), oracle._leaves(want)
    return len(a) == len(b) and all(oracle._rel(x, y) <= rtol for x, y in zip(a, b))


def _alternatives(reference, kw):
    """(key, text, the reference's output under the alternative) for one case."""
    call = functools.partial(oracle._call, reference)
    params = inspect.signature(reference).parameters
    for name, p in params.items():
        if name not in kw:
            continue
        v = kw[name]
        if isinstance(p.default, (bool, str)):
            values = [not v] if isinstance(v, bool) else [x for _, x in oracle._option_values(reference, name, v)]
            for w in (x for x in values if x != v):
                text = f"your {name}={v!r} computes the reference's {name}={w!r}"
                yield ("option", name, v, w), text, call({**kw, name: w})[0]
        elif name == "beta" and isinstance(v, float) and v > 0:
            zero, at = call({**kw, "beta": 0.0})[0], call(kw)[0]
            yield (
                ("knob", "beta", "0"),
                "yours equals the reference at beta = 0: beta never reaches the result",
                zero,
            )
            if zero is not None:
                flip = [
                    2 * oracle._array(z) - oracle._array(x)
                    for z, x in zip(oracle._leaves(zero), oracle._leaves(at))
                ]
                yield (
                    ("knob", "beta", "-beta"),
                    "yours equals the reference at -beta: the KL enters with the wrong sign",
                    flip,
                )
        elif name in KNOBS:
            if v != p.default and p.default is not inspect.Parameter.empty:
                text = f"yours ignores {name}: it computes the default {name}={p.default!r}"
                yield ("ignored", name), text, call({**kw, name: p.default})[0]
            if name == "ddof":
                text = f"yours uses ddof={1 - v} (the reference is given ddof={v})"
                yield ("knob", "ddof", str(1 - v)), text, call({**kw, "ddof": 1 - v})[0]
    if "std_eps" in params and "std_eps" in kw:
        yield ("trl",), TRL, call({**kw, "std_eps": 1e-4, "ddof": 1})[0]
    full = {**_defaults(reference), **kw}  # a knob bound by a partial, at its bound value
    if full.get("eps_high") is not None and "eps" in full:
        swap = {**kw, "eps": full["eps_high"], "eps_high": full["eps"]}
        yield ("swap",), "yours equals the reference with eps and eps_high swapped", call(swap)[0]


def _numbers(out):
    """Every output of yours reads as numbers."""
    try:
        [oracle._array(x) for x in oracle._leaves(out)]
    except (TypeError, ValueError):
        return False
    return True


def _hypotheses(fn, reference, flagged, rtol):
    """Lines for the hypotheses that explain every flagged case they apply to (at least one)."""
    found = {}
    for kw in flagged:
        got, err = oracle._call(fn, kw)
        if err is not None or not _numbers(got):  # nothing to compare a variant with
            return []
        for key, text, want in _alternatives(reference, kw):
            ok = want is not None and _agrees(got, want, rtol)
            found.setdefault((key, text), []).append(ok)
    lines = [
        _line(text if all(oks) else f"{text} (on {sum(oks)} of {len(oks)} flagged cases)", key)
        for (key, text), oks in found.items()
        if 2 * sum(oks) >= len(oks)
    ]
    return lines + _specific(fn, reference, flagged, rtol)


def _specific(fn, reference, flagged, rtol):
    """The tests that need the function itself: factors, group leaks, known variants."""
    out, name = [], _name(reference)
    outs = [(oracle._call(fn, kw)[0], oracle._call(reference, kw)[0], kw) for kw in flagged]
    ratios = []
    flat = lambda out: np.concatenate([np.ravel(oracle._array(x)) for x in oracle._leaves(out)] or [[]])  # noqa: E731
    for got, want, _ in outs:
        a, b = flat(got), flat(want)
        nz = np.abs(b) > 1e-12
        r = a[nz] / b[nz] if a.shape == b.shape and nz.any() else np.array([np.nan, 0.0])
        ratios.append(float(r[0]) if np.allclose(r, r[0], rtol=1e-9) else None)
    if ratios and all(x is not None for x in ratios):
        over = [
            k
            for k in outs[0][2]
            if all(
                isinstance(kw.get(k), int)
                and not isinstance(kw.get(k), bool)
                and kw[k]
                and np.isclose(x, 1 / kw[k])
                for x, (_, _, kw) in zip(ratios, outs)
            )
        ]
        if over:
            out.append(_line(f"yours is the reference divided by {over[0]} once more", ("over", over[0])))
        elif len(set(np.round(ratios, 12))) == 1:
            out.append(f"yours is the reference times {ratios[0]:.6g} on every flagged case")
    for got, _, kw in outs:
        r = kw.get("rewards")
        if isinstance(r, np.ndarray) and r.ndim == 2 and r.shape[0] > 1 and r.shape[1] > 1:
            moved = {**kw, "rewards": np.vstack([r[:1], r[1:] * 3.0 + 1.0])}
            again = oracle._call(fn, moved)[0]
            if again is not None and oracle._rel(oracle._leaves(again)[0][:1], oracle._leaves(got)[0][:1]) > rtol:
                out.append(_line("group 0's output moves when only the other groups' rewards move", ("leak",)))
                break
    kw = {**_defaults(reference), **flagged[0]}
    if name == "clip_fraction" and "eps" in kw:
        m, eps = kw["mask"], kw["eps"]
        hi = 1 + (eps if kw.get("eps_high") is None else kw["eps_high"])
        rho = np.exp(np.where(m > 0, kw["logp"] - kw["logp_old"], 0.0))
        wrong = (((rho < 1 - eps) | (rho > hi)) & (m > 0)).sum() / max(m.sum(), 1)
        if np.isclose(oracle._array(outs[0][0]), wrong):
            out.append(
                _line(
                    "yours counts every ratio outside the range, whatever the sign of A", ("sign", "clip_fraction")
                )
            )
    if name == "action_view" and "ep" in flagged[0]:  # the width of the compact rows tells
        ep, got = flagged[0]["ep"], oracle._array(oracle._leaves(outs[0][0])[0])
        if got.ndim == 2 and got.shape[1] == ep.mask.sum(axis=1).max() > ep.action_mask.sum(axis=1).max():
            out.append(_line("yours keeps every token of the episode, the tool outputs too", ("tool tokens",)))
    for got, want, kw in outs[:1]:
        if not isinstance(kw.get("mask"), np.ndarray):
            break  # a per-token output only
        a, b = oracle._leaves(got), oracle._leaves(want)
        same = [
            oracle._array(x).shape == oracle._array(y).shape
            and oracle._array(y).ndim == 2
            and oracle._rel(oracle._array(x).sum(axis=1), oracle._array(y).sum(axis=1)) <= rtol
            for x, y in zip(a, b)
        ]
        if same and all(same):
            out.append(
                _line(
                    "each row sums to the reference's row sum, spread differently over its tokens", ("row sums",)
                )
            )
    return out


@boundary(fn=_FN, reference=_an_exercise, seed=oracle.SEED, rtol=NONNEGATIVE, returns=None)
def grade(fn, reference, seed=0, only=None, rtol=1e-6):
    """The oracle's report of `fn` against `reference`, with the patterns and the known bugs the
    flagged cases show.

    Args:
        fn: your implementation, a function (not a class) taking the reference's arguments by name.
        reference: an exercise's name (a key of `EXERCISES`: its reference function) or a function
            of minirl_lm.
        seed: an int `>= 0`, the seed of the cases (`oracle.cases`).
        only: None, or a dict of the values to keep per argument, as in `oracle.cases`.
        rtol: a float `>= 0`, the tolerance a case is flagged at.

    Returns:
        `(text, agrees)`: the report, a string, and whether no case is flagged.
    """
    rows = oracle.compare.core(fn, reference, seed=seed, only=only, rtol=rtol)
    kwargs = [kw for _, kw in oracle.cases.core(reference, seed, only)]
    flagged = [kw for r, kw in zip(rows, kwargs) if r.flagged.core(r, rtol) and r.outcome == "returns"]
    notes = patterns.core(rows, kwargs, reference, rtol)
    notes += [f"finding: {h}" for h in (_hypotheses(fn, reference, flagged, rtol) if flagged else [])]
    text = oracle.report.core(rows, rtol, notes)
    return text, not any(r.flagged.core(r, rtol) for r in rows)


def _load(path, name):
    """The function `name` defined by the Python file at `path`."""
    spec = importlib.util.spec_from_file_location(f"_graded_{Path(path).stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    fn = getattr(module, name, None)
    if not callable(fn):
        defined = sorted(n for n, v in vars(module).items() if inspect.isfunction(v) and not n.startswith("_"))
        raise LookupError(f"FILE: {path} defines no function {name} (it defines: {', '.join(defined) or 'none'})")
    return fn


def _value(text):
    """A command-line value: True, False, None, a number, else the string."""
    known = {"True": True, "False": False, "None": None}
    return known[text] if text in known else float(text) if text.replace(".", "", 1).isdigit() else text


def _only(items):
    out = {}
    for item in items or ():
        key, _, values = item.partition("=")
        if not key or not values:
            raise ValueError(f"--only: expected ARG=V1,V2, got {item!r}")
        out[key] = [_value(v) for v in values.split(",")]
    return out or None


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m minirl_lm.grade", description=__doc__.splitlines()[0])
    parser.add_argument("name", nargs="?", metavar="NAME", help=f"an exercise: {', '.join(EXERCISES)}")
    parser.add_argument("file", nargs="?", metavar="FILE", help="your Python file")
    parser.add_argument("--list", action="store_true", help="list the exercises and exit")
    parser.add_argument("--only", action="append", metavar="ARG=V1,V2", help="grade these option values only")
    parser.add_argument("--rtol", type=float, default=1e-6, help="relative tolerance (default 1e-6; 0 allowed)")
    parser.add_argument("--seed", type=int, default=0, help="the cases' seed (default 0)")
    args = parser.parse_args(argv)
    if args.list:
        for n, (ref, page) in EXERCISES.items():
            print(f"{n:11} {_name(ref)}{inspect.signature(ref)}  (docs/{page})")
        return 0
    if args.name not in EXERCISES:
        parser.error(f"NAME: expected one of {', '.join(EXERCISES)}, got {args.name!r}")
    if not args.file or not Path(args.file).is_file() or Path(args.file).suffix != ".py":
        parser.error(f"FILE: expected a Python file, got {args.file!r}")
    if not args.rtol >= 0 or args.seed < 0:
        parser.error(f"--rtol and --seed: expected numbers >= 0, got {args.rtol} and {args.seed}")
    reference = EXERCISES[args.name][0]
    try:
        fn = _load(args.file, _name(reference))
    except LookupError as e:
        parser.error(str(e))
    except Exception as e:  # the file itself fails to run: a usage error, named
        parser.error(f"FILE: {args.file} fails to load: {type(e).__name__}: {e}")
    try:
        text, agrees = grade(fn, reference, seed=args.seed, only=_only(args.only), rtol=args.rtol)
    except (ValueError, TypeError) as e:  # --only's values
        parser.error(str(e))
    print(text)
    verdict = f"your {_name(reference)} agrees with the reference" if agrees else "flagged (see above)"
    print(f"{args.name}: {verdict}")
    return 0 if agrees else 1


if __name__ == "__main__":
    sys.exit(main())
