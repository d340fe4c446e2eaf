"""Input checks at the public boundary.

Every public function of minirl_lm validates its arguments with these helpers and
then trusts them inside. A bad argument raises a ``TypeError`` (wrong kind of
object or dtype) or a ``ValueError`` (right kind, wrong shape, range or value)
whose message names the argument, what was expected and what came.

This file needs NumPy only. A reader who copies an estimator file copies this
one beside it (the estimator imports ``from minirl_lm.core.checks import ...``;
change that line to ``from checks import ...``).
"""

import inspect
import numbers

import numpy as np


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


def float_array(x, name, ndim=None, shape=None, finite=True, allow_neginf=False):
    """Return ``x`` as a float64 array after checking it.

    ndim:  required number of dimensions (None: any).
    shape: required shape; a None entry matches any length.
    finite: reject NaN and +-inf; with ``allow_neginf`` a -inf entry is allowed
        (log-probabilities of impossible tokens), NaN and +inf never are.
    """
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name}: expected a real-valued array, got {_describe(x)}")
    arr = _asarray(x, name)
    if arr.dtype.kind not in "fiub":                          # float, int, uint, bool
        raise TypeError(f"{name}: expected a real-valued array, got {_describe(arr)}")
    arr = arr.astype(np.float64, copy=False)
    _check_shape(arr, name, ndim, shape)
    if finite and not np.isfinite(arr).all():
        if np.isnan(arr).any():
            raise ValueError(f"{name}: expected no NaN, got {int(np.isnan(arr).sum())} NaN entries")
        bad = np.isposinf(arr) if allow_neginf else np.isinf(arr)
        if bad.any():
            what = "+inf" if allow_neginf else "+-inf"
            raise ValueError(f"{name}: expected finite values (no {what}), got {int(bad.sum())} such entries")
    return arr


def int_array(x, name, ndim=None, shape=None, low=None, high=None):
    """Return ``x`` as an int64 array of ids in ``[low, high)`` after checking it."""
    arr = _asarray(x, name)
    if arr.dtype.kind not in "iu":                            # signed or unsigned integers
        raise TypeError(f"{name}: expected an integer array of ids, got {_describe(arr)}")
    arr = arr.astype(np.int64, copy=False)
    _check_shape(arr, name, ndim, shape)
    if arr.size:
        if low is not None and arr.min() < low:
            raise ValueError(f"{name}: expected ids >= {low}, got min {arr.min()}")
        if high is not None and arr.max() >= high:
            raise ValueError(f"{name}: expected ids < {high}, got max {arr.max()}")
    return arr


def mask_array(x, name, shape=None):
    """Return a (B, T) float64 mask of 0.0/1.0, right-padded (no 1 after a 0 in a row)."""
    arr = float_array(x, name, ndim=2, shape=shape)
    nonempty(arr, name)                                  # B >= 1 responses, T >= 1 positions
    binary = (arr == 0.0) | (arr == 1.0)
    if not binary.all():
        bad = arr[~binary]
        raise ValueError(f"{name}: expected only 0 and 1, got value {float(bad.flat[0])!r}")
    rises = arr[:, 1:] > arr[:, :-1]                           # (B, T - 1): a 1 after a 0
    if rises.any():
        row = int(np.nonzero(rises.any(axis=1))[0][0])
        raise ValueError(f"{name}: expected right padding (1s then 0s in each row), "
                         f"row {row} is {arr[row].astype(int).tolist()}")
    return arr


def same_shape(name_a, a, name_b, b):
    """Raise unless arrays ``a`` and ``b`` have the same shape (no broadcasting)."""
    for nm, x in ((name_a, a), (name_b, b)):
        if not isinstance(getattr(x, "shape", None), tuple):
            raise TypeError(f"{nm}: expected an array, got {_describe(x)}")
    if a.shape != b.shape:
        raise ValueError(f"{name_b}: expected the shape of {name_a} {a.shape}, got {b.shape}")


def rng_check(rng, name):
    """Raise unless ``rng`` is a ``np.random.Generator``."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{name}: expected a numpy.random.Generator (np.random.default_rng(seed)), "
                        f"got {_describe(rng)}")
    return rng


def int_scalar(x, name, low=None, high=None):
    """Return ``x`` as a Python int in ``[low, high]`` (bounds inclusive)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise TypeError(f"{name}: expected an integer, got {_describe(x)}")
    x = int(x)
    if low is not None and x < low:
        raise ValueError(f"{name}: expected an integer >= {low}, got {x}")
    if high is not None and x > high:
        raise ValueError(f"{name}: expected an integer <= {high}, got {x}")
    return x


def float_scalar(x, name, low=None, high=None, low_open=False):
    """Return ``x`` as a finite Python float, ``>= low`` (``> low`` if low_open), ``<= high``."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name}: expected a real number, got {_describe(x)}")
    x = _float(x, name, "a finite number")
    if low is not None and (x <= low if low_open else x < low):
        raise ValueError(f"{name}: expected a number {'>' if low_open else '>='} {low}, got {x}")
    if high is not None and x > high:
        raise ValueError(f"{name}: expected a number <= {high}, got {x}")
    return x


def choice(x, name, options):
    """Raise unless ``x`` is one of ``options`` (an unhashable ``x`` is a TypeError naming it)."""
    try:
        hash(x)
    except TypeError:
        raise TypeError(f"{name}: expected one of {sorted(options, key=str)}, got unhashable "
                        f"{_describe(x)}") from None
    if isinstance(x, bool) or x not in options:          # True == 1 must not pick option 1
        raise ValueError(f"{name}: expected one of {sorted(options, key=str)}, got {x!r}")
    return x


def nonempty(arr, name):
    """Raise unless every axis of the checked array ``arr`` has length >= 1 (before a reduction)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name}: expected a checked array, got {_describe(arr)}")
    if arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty array (every axis of length >= 1), "
                         f"got shape {arr.shape}")
    return arr


def prob_table(p, name, shape=None, ndim=None):
    """Return ``p`` as float64 probabilities: entries >= 0, each row (last axis) summing to 1
    within 1e-9 absolutely (stricter than ``Generator.choice``'s ~1.5e-8, so a table that
    passes here is accepted by ``rng.choice``), and non-empty."""
    p = float_array(p, name, ndim=ndim, shape=shape)
    nonempty(p, name)
    if (p < 0).any():
        raise ValueError(f"{name}: expected probabilities >= 0, got min {p.min()}")
    s = p.sum(axis=-1)
    if not np.allclose(s, 1.0, rtol=0.0, atol=1e-9):
        bad = np.abs(s - 1.0).ravel()
        raise ValueError(f"{name}: expected rows summing to 1 (within 1e-9), got a row summing "
                         f"to {float(s.ravel()[int(np.argmax(bad))])!r}")
    return p


def finite_result(value, name, what):
    """Return ``value`` (a number, an array, or a tuple of them, nested) if every entry is finite;
    else raise a ValueError naming ``name``, the argument that drove the overflow.

    Call it on what a public function is about to return, computed under
    ``np.errstate(over="ignore", invalid="ignore", divide="ignore")``: an overflow is never
    returned as inf or NaN. ``name`` and ``what`` are strings (a programming error otherwise).
    """
    if not (isinstance(name, str) and isinstance(what, str)):
        raise TypeError(f"finite_result: expected name and what as strings, got {name!r}, {what!r}")
    parts = [value]
    while parts:
        v = parts.pop()
        if isinstance(v, (tuple, list)):
            parts.extend(v)
            continue
        a = _asarray(v, name)
        if isinstance(v, (str, bytes)) or a.dtype.kind not in "fiub":
            raise TypeError(f"{name}: expected a number or an array of numbers, got {_describe(v)}")
        if not np.isfinite(a.astype(np.float64, copy=False)).all():
            kind = "NaN" if np.isnan(a).any() else "inf"
            raise ValueError(f"{name}: expected a value for which {what} is finite in float64, "
                             f"got one that makes it {kind} (overflow)")
    return value


def real_result(value, name, context=""):
    """A callable's return value (a grader's reward) as a finite Python float, else an error
    naming ``name`` (the callable): None, a string, a bool, NaN or inf are rejected."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a real number{context}, got {_describe(value)}")
    return _float(value, name, f"a finite number{context}")


def callable_check(f, name, nargs, call="f(...)"):
    """Raise unless ``f`` is a callable that accepts ``nargs`` positional arguments."""
    if not callable(f) or isinstance(f, type):
        raise TypeError(f"{name}: expected a callable {call}, got {_describe(f)}")
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):                      # builtins without a signature
        return f
    try:
        sig.bind(*range(nargs))
    except TypeError:
        raise TypeError(f"{name}: expected a callable {call} taking {nargs} positional "
                        f"arguments, got one with signature {sig}") from None
    return f


def _asarray(x, name):
    try:
        return np.asarray(x)
    except (ValueError, TypeError, OverflowError) as e:         # ragged nesting, huge ints
        raise TypeError(f"{name}: expected an array, got {_describe(x)} ({e})") from None


def _check_shape(arr, name, ndim, shape):
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimension{'' if ndim == 1 else 's'}, "
                         f"got shape {arr.shape}")
    if shape is not None:
        ok = len(shape) == arr.ndim and all(s is None or s == a for s, a in zip(shape, arr.shape))
        if not ok:
            want = ", ".join("any" if s is None else str(s) for s in shape)
            want = f"({want},)" if len(shape) == 1 else f"({want})"    # as Python prints a tuple
            raise ValueError(f"{name}: expected shape {want}, got {arr.shape}")


# ---- bundles: core, multiturn, scale

def _float(x, name, expected):
    """A checked real number as a finite Python float (an int beyond float64 is not finite)."""
    try:
        x = float(x)
    except OverflowError:
        raise ValueError(f"{name}: expected {expected}, got an integer of {int(x).bit_length()} "
                         f"bits, beyond float64") from None
    if not np.isfinite(x):
        raise ValueError(f"{name}: expected {expected}, got {x}")
    return x


MAX_CELLS = 2**31     # entries of one (B, T) array a call may allocate: 16 GiB of float64


def cells(n, name, what):
    """Raise unless ``n`` entries (the size of an array about to be allocated, driven by the
    argument ``name``) stay within ``MAX_CELLS``: a clear error before any allocation or loop."""
    if n > MAX_CELLS:
        raise ValueError(f"{name}: expected {what} of at most 2**31 entries, got {n}")
    return n


def _id_tuple(x, name, V, what="token ids"):
    """A checked sequence of Python or NumPy integers (no bool) in [0, V), as a tuple of ints."""
    for y in x:
        if isinstance(y, (bool, np.bool_)) or not isinstance(y, numbers.Integral):
            raise TypeError(f"{name}: expected integer {what}, got {y!r} in {x!r}")
        if not 0 <= y < V:
            raise ValueError(f"{name}: expected {what} in [0, {V}), got {y} in {tuple(x)!r}")
    return tuple(int(y) for y in x)


def _duck(obj, name, attrs, what):
    if not all(hasattr(obj, a) for a in attrs):
        raise TypeError(f"{name}: expected {what}, got {type(obj).__name__}")
    return obj


def table_policy(policy, S, V, finite_rows=False, what=""):
    """Raise unless ``policy`` has ``sample`` and a float table ``theta`` of shape (S, V)
    (with ``finite_rows``: a finite entry in every row, no NaN, no +inf)."""
    shape = getattr(getattr(policy, "theta", None), "shape", None)
    if not hasattr(policy, "sample") or shape != (S, V):
        raise ValueError(f"policy: expected a policy with a table of shape (S, V) = ({S}, {V})"
                         f"{what}, got {type(policy).__name__} with shape {shape}")
    th = np.asarray(policy.theta)
    if finite_rows and (th.dtype.kind != "f" or np.isnan(th).any() or np.isposinf(th).any()
                        or not np.isfinite(th).any(axis=1).all()):
        raise ValueError("policy: expected a table theta with a finite entry in every row "
                         "and no NaN or +inf")
    return policy


# -- the token MDP (minirl_lm/core/mdp.py)
def token_mdp_args(prompts, V, eos, max_len, ids, capacity, max_states):
    """TokenMDP's arguments: (prompts list, V, eos, max_len, ids, capacity, max_states)."""
    if isinstance(prompts, (str, bytes)) or not hasattr(prompts, "__len__"):
        raise TypeError(f"prompts: expected a sequence of prompts, got {type(prompts).__name__}")
    if len(prompts) == 0:
        raise ValueError("prompts: expected at least one prompt, got an empty sequence")
    V = int_scalar(V, "V", low=1)
    eos = None if eos is None else int_scalar(eos, "eos", low=0, high=V - 1)
    if eos is not None and V < 2:
        raise ValueError(f"V: expected at least 2 tokens when eos is set, got {V}")
    max_len = int_scalar(max_len, "max_len", low=1)
    ids = choice(ids, "ids", {"enumerate", "lazy"})
    max_states = int_scalar(max_states, "max_states", low=1)
    if capacity is not None or ids == "lazy":            # checked whatever the ids mode
        capacity = int_scalar(capacity, "capacity", low=len(prompts))
    return list(prompts), V, eos, max_len, ids, capacity, max_states


_NOT_GIVEN = object()     # an argument the bundle's caller does not take


def token_prefix(mdp, prefix, terminal_ok=True, n=_NOT_GIVEN, y=_NOT_GIVEN):
    """A prefix of ``mdp`` as a tuple of ints: ids in [0, V), no EOS before its last position,
    at most max_len long, non-terminal unless ``terminal_ok``; with ``n`` a prompt index in
    [0, N) and with ``y`` a next token in [0, V) (both checked too). Returns (n, prefix, y)."""
    n = n if n is _NOT_GIVEN else int_scalar(n, "n", low=0, high=mdp.N - 1)
    if isinstance(prefix, (str, bytes)) or not hasattr(prefix, "__len__"):
        raise TypeError(f"prefix: expected a tuple of token ids, got {type(prefix).__name__}")
    if len(prefix) > mdp.max_len:
        raise ValueError(f"prefix: expected at most max_len={mdp.max_len} tokens, got "
                         f"{len(prefix)}")
    out = _id_tuple(prefix, "prefix", mdp.V)
    eos = mdp.eos
    if eos is not None and eos in out[:-1]:
        raise ValueError(f"prefix: expected no token after EOS ({eos}), got {out}")
    ended = len(out) >= mdp.max_len or (eos is not None and len(out) > 0 and out[-1] == eos)
    if not terminal_ok and ended:
        raise ValueError(f"prefix: expected a non-terminal prefix, got {out} "
                         f"(eos={eos}, max_len={mdp.max_len})")
    y = y if y is _NOT_GIVEN else int_scalar(y, "y", low=0, high=mdp.V - 1)
    return n, out, y


def token_rollout_args(mdp, policy, K, rng, prompts):
    """TokenMDP.rollout's arguments: returns (K, prompt indices (n,) int64); the (B, T) arrays
    (B = n K, T = max_len) within MAX_CELLS."""
    K = int_scalar(K, "K", low=1)
    rng_check(rng, "rng")
    table_policy(policy, mdp.S, mdp.V, finite_rows=True, what=" for this MDP")
    _no_bool_ids(prompts, "prompts", "prompt indices")
    idx = np.arange(mdp.N) if prompts is None else int_array(
        prompts, "prompts", ndim=1, low=0, high=mdp.N)
    if idx.size == 0:
        raise ValueError("prompts: expected at least one prompt index, got shape (0,)")
    cells(idx.size * mdp.max_len, "max_len", "a length cap whose (B, T) rollout arrays are")
    cells(idx.size * K * mdp.max_len, "K", "responses per prompt whose (B, T) rollout arrays are")
    return K, idx


def token_score_args(mdp, grader, rollout, rollout_type):
    """TokenMDP.score's arguments: returns the (B,) prompt indices of the rollout."""
    callable_check(grader, "grader", 2, "grader(prompt, response)")
    if not isinstance(rollout, rollout_type):
        raise TypeError(f"rollout: expected a Rollout, got {type(rollout).__name__}")
    prompt = int_array(rollout.prompt, "rollout", ndim=1, low=0, high=mdp.N)
    B = prompt.size
    int_array(rollout.tokens, "rollout", shape=(B, None), low=0, high=mdp.V)
    int_array(rollout.lengths, "rollout", shape=(B,), low=0, high=mdp.max_len + 1)
    return prompt


# -- multi-turn episodes (minirl_lm/multiturn/)
MT_ATTRS = ("children", "is_policy", "loglik", "p_obs", "S", "V")      # what a MultiTurnMDP has


def _no_bool_ids(x, name, what="token ids"):
    """Raise if a sequence (not an array) of ids holds a bool (NumPy would read True as 1)."""
    if not isinstance(x, (np.ndarray, str, bytes)) and hasattr(x, "__iter__"):
        for v in x:
            if isinstance(v, (bool, np.bool_)):
                raise TypeError(f"{name}: expected integer {what}, got {v!r} in {tuple(x)!r}")


def _tree_size(c, calls, M, L, max_turns, turn_len, cap):
    """An upper bound on the states of a multi-turn tree (c continuing tokens, calls call
    tokens, M spans of at most L tokens), or None above cap: O(log cap) steps."""
    P, level, j = 0, 1, 0                                 # policy prefixes within one turn
    while j < turn_len and P <= cap:
        P, level, j = P + level, level * c, j + 1
    roots, level, k = 0, 1, 0                             # turn roots: g^k of them at turn k
    while k < max_turns and roots * P <= cap:
        roots, level, k = roots + level, level * P * calls * M, k + 1
    size = P * roots * (1 + calls * M * L)
    return size if size <= cap else None


def _mt_spans(spans, V):
    """The observation spans as a list of non-empty tuples of int ids in [0, V), none a prefix
    of another."""
    if isinstance(spans, (str, bytes)) or not hasattr(spans, "__iter__"):
        raise TypeError(f"spans: expected a sequence of tuples of token ids, got "
                        f"{type(spans).__name__}")
    out = []
    for span in spans:
        if isinstance(span, (str, bytes)) or not hasattr(span, "__iter__"):
            raise TypeError(f"spans: expected each span a tuple of token ids, got {span!r}")
        span = tuple(span)
        _no_bool_ids(span, "spans")
        a = int_array(np.asarray(span) if span else np.zeros(0, np.int64), "spans", ndim=1)
        if a.size == 0 or a.min() < 0 or a.max() >= V:
            raise ValueError(f"spans: expected non-empty spans of token ids in [0, {V}), "
                             f"got {span}")
        out.append(tuple(int(o) for o in a))
    for i, a in enumerate(out):
        for j, b in enumerate(out):
            if i != j and b[:len(a)] == a:
                raise ValueError(f"spans: expected no span to be a prefix of another, got "
                                 f"{a} and {b}")
    return out


def multiturn_args(V, eos, calls, spans, p_obs, prior, turn_reward, max_turns, turn_len):
    """MultiTurnMDP's arguments: (V, eos, calls, spans, p_obs, prior, max_turns, turn_len)."""
    V = int_scalar(V, "V", low=2)
    eos = int_scalar(eos, "eos", low=0, high=V - 1)
    _no_bool_ids(calls, "calls")
    calls = tuple(int(c) for c in int_array(np.asarray(calls), "calls", ndim=1, low=0, high=V))
    if eos in calls:
        raise ValueError(f"calls: expected call tokens other than eos={eos}, got {calls}")
    max_turns = int_scalar(max_turns, "max_turns", low=1)
    turn_len = int_scalar(turn_len, "turn_len", low=1)
    spans = _mt_spans(spans, V)
    L, M = max(len(o) for o in spans) if spans else 0, len(spans)
    for name, turns in (("turn_len", 1), ("max_turns", max_turns)):   # turn_len alone, then both
        if turns * (turn_len + L) > 900:                  # the tree is grown recursively
            raise ValueError(f"{name}: expected max_turns * (turn_len + the longest span) <= 900 "
                             f"tokens per episode, got {turns} * ({turn_len} + {L})")
        if _tree_size(V - 1 - len(calls), len(calls), M, L, turns, turn_len, 2**24) is None:
            raise ValueError(f"{name}: expected a tree of at most 2**24 states, got a bound above "
                             f"it (max_turns={max_turns}, turn_len={turn_len}); the tree is "
                             f"enumerated in full")
    prior = prob_table(prior, "prior", ndim=1)           # rows summing to 1 within 1e-9
    p_obs = prob_table(p_obs, "p_obs", shape=(prior.size, len(spans)), ndim=2)
    callable_check(turn_reward, "turn_reward", 3, "turn_reward(w, turns, done)")
    return V, eos, calls, spans, p_obs, prior, max_turns, turn_len


def multiturn_rollout_args(env, policy, K, rng):
    """MultiTurnMDP.rollout's arguments: returns K, bounded so that the (K, T) arrays stay
    within MAX_CELLS (a clear error before the first episode, not a loop without end)."""
    K = int_scalar(K, "K", low=1)
    rng_check(rng, "rng")
    table_policy(policy, env.S, env.V)
    cells(K * env.T, "K", "episodes whose (K, T) arrays are")
    return K


def _episode_row(env, b, tokens, states, n):
    """Parse row b (its n real tokens) as a trajectory of env: the (T,) policy-token mask."""
    want, s, t = np.zeros(tokens.size), 0, 0
    while t < n:
        a = int(tokens[t])
        if states[t] != s:
            raise ValueError(f"states: row {b}, position {t}: expected state {s}, got {states[t]}")
        want[t] = 1.0
        _, kind, nxt = env.children[s][a]
        t += 1
        if kind == "end":
            break
        if kind == "turn":
            s = nxt
            continue
        hit = [(chance, s2) for m, chance, s2 in nxt
               if tuple(tokens[t:t + len(chance)]) == env.spans[m]]
        if not hit or t + len(hit[0][0]) > n:
            raise ValueError(f"tokens: row {b}, position {t}: expected an observation "
                             f"span {env.spans} after the call, got {tokens[t:n].tolist()}")
        (chance, s), got = hit[0], states[t:t + len(hit[0][0])]
        for i in np.flatnonzero(got != np.array(chance)):   # the chance nodes' ids
            raise ValueError(f"states: row {b}, position {t + i}: expected state {chance[i]}, "
                             f"got {got[i]}")
        t += len(chance)
    if t != n:
        raise ValueError(f"mask: row {b}: the episode ends at position {t}, but the mask "
                         f"has {n} real tokens")
    return want


def episodes(env, ep, attrs=("states", "tokens", "mask", "action_mask", "rewards")):
    """Validate a batch of episodes against the environment (MultiTurnMDP.check): every row
    parses as a trajectory (tokens and states, chance nodes included), and action_mask is 1
    exactly on the policy's tokens. Returns ep unchanged."""
    if not all(hasattr(ep, a) for a in attrs):            # an Episodes (duck-typed: copies)
        raise TypeError(f"ep: expected an Episodes batch (from rollout or all_episodes), got "
                        f"{type(ep).__name__}")
    mask = mask_array(ep.mask, "mask")
    B, T = mask.shape
    tokens = int_array(ep.tokens, "tokens", shape=(B, T), low=0, high=env.V)
    states = int_array(ep.states, "states", shape=(B, T), low=0, high=env.S)
    act = float_array(ep.action_mask, "action_mask", shape=(B, T))
    float_array(ep.rewards, "rewards", shape=(B, T))
    for b in range(B):
        n = int(mask[b].sum())
        if n == 0:
            raise ValueError(f"mask: row {b} is empty; every episode has at least one token")
        want = _episode_row(env, b, tokens[b], states[b], n)
        bad = np.flatnonzero(act[b] != want)
        if bad.size:
            t = int(bad[0])
            what = ("holds an observation token (written by the environment)" if mask[b, t]
                    and not want[t] else "holds a policy token" if want[t] else "is padding")
            raise ValueError(f"action_mask: row {b}, position {t} {what}, expected "
                             f"{int(want[t])}, got {float(act[b, t])!r}")
    return ep


def action_view_args(env, ep):
    """action_view's arguments: a MultiTurnMDP (duck-typed) and a batch that parses in it."""
    _duck(env, "env", MT_ATTRS + ("check", "spans"), "a MultiTurnMDP")
    return episodes(env, ep)


def scatter_args(x, pos, mask, T):
    """scatter's arguments: x (B, Ta), pos and mask of its shape, T >= 1 with (B, T) cells
    within MAX_CELLS. Returns (x, pos, mask, T)."""
    x = float_array(x, "x", ndim=2)
    T = int_scalar(T, "T", low=1)
    cells(x.shape[0] * T, "T", "a width whose (B, T) output is")
    pos = int_array(pos, "pos", shape=x.shape, low=0, high=T)
    mask = mask_array(mask, "mask", shape=x.shape)
    return x, pos, mask, T


def mt_table(env, p, name):
    """An (S, V) probability table of a MultiTurnMDP (duck-typed), rows summing to 1."""
    _duck(env, "env", MT_ATTRS, "a MultiTurnMDP")
    return prob_table(p, name, shape=(env.S, env.V))     # rows summing to 1 within 1e-9


def mt_kl_args(env, probs, pi_ref, beta):
    """(probs, pi_ref, beta >= 0) of the multi-turn KL objective."""
    probs = mt_table(env, probs, "probs")
    return probs, mt_table(env, pi_ref, "pi_ref"), float_scalar(beta, "beta", low=0.0)


def mt_soft_args(env, pi_ref, beta):
    """(pi_ref, beta > 0) of the multi-turn soft optimum."""
    pi_ref = mt_table(env, pi_ref, "pi_ref")
    return pi_ref, float_scalar(beta, "beta", low=0.0, low_open=True)


def _bool_arg(x, name):
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name}: expected True or False, got {type(x).__name__} {x!r}")
    return bool(x)


def _action_mask(action_mask, mask):
    act = float_array(action_mask, "action_mask", shape=mask.shape)
    if ((act != 0) & (act != 1)).any() or (act > mask).any():
        raise ValueError("action_mask: expected 0/1 entries, 1 only where mask is 1")
    return act


def _action_rewards(rewards, mask, action_mask):
    mask = mask_array(mask, "mask")
    act = _action_mask(action_mask, mask)
    rewards = float_array(rewards, "rewards", shape=mask.shape)
    if (rewards * (1 - act) != 0).any():
        raise ValueError("rewards: expected rewards on policy tokens only (0 where action_mask "
                         "is 0)")
    return rewards, mask, act


def action_returns_args(rewards, mask, action_mask, gamma, carry):
    """returns_actions' arguments: (rewards, act, gamma, carry), rewards 0 off the action mask."""
    rewards, mask, act = _action_rewards(rewards, mask, action_mask)
    gamma = float_scalar(gamma, "gamma", low=0.0, high=1.0)
    return rewards, act, gamma, _bool_arg(carry, "carry")


def action_gae_args(values, rewards, mask, action_mask, gamma, lam, carry):
    """gae_actions' arguments: (values, rewards, act, gamma, lam, carry)."""
    rewards, mask, act = _action_rewards(rewards, mask, action_mask)
    values = float_array(values, "values", shape=mask.shape)
    gamma = float_scalar(gamma, "gamma", low=0.0, high=1.0)
    lam = float_scalar(lam, "lam", low=0.0, high=1.0)
    return values, rewards, act, gamma, lam, _bool_arg(carry, "carry")


def turn_values_args(values, states, mask, action_mask):
    """turn_values' arguments: values (S,), states, mask, action_mask (B, T)."""
    values = float_array(values, "values", ndim=1)
    mask = mask_array(mask, "mask")
    states = int_array(states, "states", shape=mask.shape, low=0, high=values.size)
    return values, states, mask, _action_mask(action_mask, mask)


def calculator_args(q, cost):
    return float_scalar(q, "q", low=0.0, high=1.0), float_scalar(cost, "cost", low=0.0)


def calculator_reference_args(env, env_type, eq, stop):
    if not isinstance(env, env_type) or env.V != 5:
        raise TypeError(f"env: expected the calculator's MultiTurnMDP, got {type(env).__name__}")
    return float_scalar(eq, "eq"), float_scalar(stop, "stop")


# -- log-probs from hidden states (minirl_lm/scale/bigvocab.py)
def _float_matrix(x, name, dtype=None):
    """A 2-D float32/float64 NumPy array (no list form, no silent cast), finite, and max|x|:
    read with max and min, so no (N, d) temporary."""
    if not isinstance(x, np.ndarray) or x.dtype not in (np.float32, np.float64):
        got = f"{x.dtype} array" if isinstance(x, np.ndarray) else type(x).__name__
        raise TypeError(f"{name}: expected a float32 or float64 numpy array, got {got}")
    if dtype is not None and x.dtype != dtype:
        raise TypeError(f"{name}: expected the dtype of h ({dtype}), got {x.dtype} "
                        f"(no silent cast: convert one of them)")
    if x.ndim != 2:
        raise ValueError(f"{name}: expected 2 dimensions, got shape {x.shape}")
    hi, lo = (float(x.max()), float(x.min())) if x.size else (0.0, 0.0)  # no temporary
    if not (np.isfinite(hi) and np.isfinite(lo)):
        raise ValueError(f"{name}: expected finite values, got "
                         f"{int((~np.isfinite(x)).sum())} NaN or inf entries")
    return np.ascontiguousarray(x), max(hi, -lo)


def chunked_args(h, W, tokens, mask, chunk, loss_fn=_NOT_GIVEN):
    """chunked_logp's (and with loss_fn, chunked_loss_grad's) arguments: returns (h, W, tokens
    (N,) int64, real (R,) positions of the real tokens, chunk); every logit provably finite."""
    if loss_fn is not _NOT_GIVEN:
        callable_check(loss_fn, "loss_fn", 2, "loss_fn(logp, rows) -> (loss, dloss_dlogp)")
    h, h_max = _float_matrix(h, "h")
    W, W_max = _float_matrix(W, "W", h.dtype)
    N, d = h.shape
    if W.shape[0] < 1 or W.shape[1] != d:
        raise ValueError(f"W: expected shape (V, {d}) with V >= 1 (d from h), got {W.shape}")
    tokens = int_array(tokens, "tokens", ndim=1, shape=(N,), low=0, high=W.shape[0])
    if mask is None:
        real = np.arange(N)
    else:
        m = float_array(mask, "mask", shape=(N,))            # real, finite, (N,)
        if not ((m == 0) | (m == 1)).all():
            raise ValueError(f"mask: expected only 0 and 1, got {float(m[(m != 0) & (m != 1)][0])!r}")
        real = np.flatnonzero(m)
    chunk = int_scalar(chunk, "chunk", low=1)
    cells(min(chunk, real.size) * W.shape[0], "chunk", "a (chunk, V) buffer")
    bound = d * h_max * W_max                                # >= every |logit|
    if bound > np.finfo(h.dtype).max / 2:
        raise ValueError(f"h: expected d * max|h| * max|W| <= {np.finfo(h.dtype).max / 2:.3g} "
                         f"so that no logit can overflow {h.dtype}, got {bound:.3g}")
    return h, W, tokens, real, chunk


def loss_fn_result(out, rows):
    """What a chunk's loss_fn returned, checked: (loss float, dloss_dlogp (R,) float64, C order).
    A loss that is not a real number (None, a string, a bool, an array of any shape but ()) is a
    TypeError, a gradient that is not a real (R,) array a TypeError or ValueError, NaN or inf a
    ValueError; each names loss_fn."""
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError(f"loss_fn: expected it to return (loss, dloss_dlogp), got "
                        f"{type(out).__name__}")
    part, g = out
    part = part[()] if isinstance(part, np.ndarray) and part.ndim == 0 else part
    ga = None if isinstance(g, (str, bytes)) else _asarray(g, "loss_fn")
    if (isinstance(part, (bool, np.bool_)) or not isinstance(part, numbers.Real)
            or ga is None or ga.dtype.kind not in "fiu"):
        raise TypeError(f"loss_fn: expected a real loss and a real (R,) dloss_dlogp, got "
                        f"{type(part).__name__} and {type(g).__name__}")
    part, g = _float(part, "loss_fn", "a finite loss"), ga.astype(np.float64, copy=False)
    if g.shape != rows.shape:
        raise ValueError(f"loss_fn: expected dloss_dlogp of shape {rows.shape} (the chunk's "
                         f"logp), got {g.shape}")
    if not np.isfinite(g).all():
        raise ValueError(f"loss_fn: expected a finite loss and dloss_dlogp, got loss {part} and "
                         f"{int((~np.isfinite(g)).sum())} non-finite gradient entries")
    return part, np.ascontiguousarray(g)
# ---- bundles: kernels (and the policy and log-prob files, their NumPy twins)
# The public Numba entries (minirl_lm.kernels) take arrays as they are: the jitted cores read them
# by pointer, so a wrong dtype or a strided view is refused, never converted.

def exact_array(x, name, ndim, dtypes):
    """Raise unless ``x`` is a non-empty C-contiguous ndarray of ``ndim`` dimensions and one of
    ``dtypes`` (no conversion: a kernel reads the memory as it is); returns ``x``. A few
    attribute reads on the good path: the messages are composed only when one is raised."""
    if not isinstance(x, np.ndarray) or x.dtype not in dtypes:
        want = " or ".join(np.dtype(d).name for d in dtypes)
        if not isinstance(x, np.ndarray):
            raise TypeError(f"{name}: expected a numpy array of dtype {want}, got "
                            f"{type(x).__name__}")
        raise TypeError(f"{name}: expected dtype {want} (convert with "
                        f"np.ascontiguousarray(x, dtype=...)), got {x.dtype}")
    if x.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimension{'' if ndim == 1 else 's'}, "
                         f"got shape {x.shape}")
    if 0 in x.shape:
        raise ValueError(f"{name}: expected every axis of length >= 1, got shape {x.shape}")
    if not x.flags.c_contiguous:
        raise ValueError(f"{name}: expected a C-contiguous array (np.ascontiguousarray), "
                         f"got strides {x.strides}")
    return x


def flag(x, name):
    """Return ``x`` if it is a bool (Python or NumPy), else a TypeError naming ``name``."""
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name}: expected a bool (True or False), got {_describe(x)}")
    return bool(x)


def token_batch(states, tokens, mask, S, V):
    """The (B, T) batch of a tabular policy with S states and V tokens: int ids in [0, S) and
    [0, V) at every position (padding too), the same shape, and a right-padded 0/1 mask; returned
    as C-contiguous int64, int64, float64 (the kernels read them by pointer)."""
    states = int_array(states, "states", ndim=2, low=0, high=S)
    tokens = int_array(tokens, "tokens", ndim=2, low=0, high=V)
    same_shape("states", states, "tokens", tokens)
    mask = mask_array(mask, "mask", shape=states.shape)
    return (np.ascontiguousarray(states), np.ascontiguousarray(tokens),
            np.ascontiguousarray(mask))


_NO_DLOGP = object()


def logit_rows(z, name="logits"):
    """Raise unless the checked float array ``z`` has a last axis of V >= 1 entries and a finite
    entry in every row (a row of -inf only has no softmax)."""
    if z.ndim < 1 or z.shape[-1] == 0:
        raise ValueError(f"{name}: expected a last axis of V >= 1 entries, got shape {z.shape}")
    dead = ~np.isfinite(z).any(axis=-1)
    if dead.any():
        idx = tuple(int(i) for i in np.argwhere(dead)[0])
        raise ValueError(f"{name}: expected a finite entry in every row (-inf everywhere has no "
                         f"softmax), got {int(dead.sum())} all -inf rows, the first at {idx}")
    return z


def logits_any(logits):
    """Logits (..., V) of any shape, non-empty, -inf allowed, a finite entry in every row."""
    z = float_array(logits, "logits", allow_neginf=True)
    if z.size == 0:
        raise ValueError(f"logits: expected a non-empty array, got shape {z.shape}")
    return logit_rows(z)


def logits_batch(logits, tokens, mask, dlogp=_NO_DLOGP):
    """(logits (B, T, V), tokens (B, T) ids in [0, V), right-padded 0/1 mask (B, T)), and with
    ``dlogp`` also the upstream gradient (B, T), finite."""
    logits = logit_rows(float_array(logits, "logits", ndim=3, allow_neginf=True))
    B, T, V = logits.shape
    tokens = int_array(tokens, "tokens", ndim=2, shape=(B, T), low=0, high=V)
    mask = mask_array(mask, "mask", shape=(B, T))
    if dlogp is _NO_DLOGP:
        return logits, tokens, mask
    dlogp = float_array(dlogp, "dlogp", ndim=2)
    same_shape("tokens", tokens, "dlogp", dlogp)
    return logits, tokens, mask, dlogp


def values_mask(x, mask):
    """(x (B, T) float, -inf allowed; a right-padded 0/1 mask of its shape)."""
    x = float_array(x, "x", ndim=2, allow_neginf=True)
    return x, mask_array(mask, "mask", shape=x.shape)
