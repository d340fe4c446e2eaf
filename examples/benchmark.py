"""Performance: the Numba core beside NumPy and PyTorch, on the same cores, in one run.

Every section times its methods side by side: each round calls every method once (a small call is
repeated until the round lasts a few milliseconds), rounds are interleaved so that a load spike
hits every column alike, and each column is the median over the rounds. The tables print ratios
within the run (time of a method / time of our kernel on one thread: > 1 means the kernel is
faster) and per-token times; the machine is shared, so absolute times move and ratios much less.
Every method's answer is checked against the kernel's before it is timed.

Sections:
  dense      token log-probs (forward) and dL/dlogits = w * (onehot - softmax) (backward) from
             logits (B, T, V), float64 and float32: NumPy naive (materialized log-softmax), NumPy
             careful (row blocks that stay in cache, gather the target only), our kernel on 1
             thread and on all threads (the opt-in parallel=True kernels), PyTorch (log_softmax +
             gather; autograd for the backward) on 1 and all threads, and the floor: one
             streaming read of the logits. Masks are all ones (every method does the same work).
  tabular    the policy's case, logits = theta[states]: per-state kernels (one softmax per visited
             state), per-token kernels, NumPy naive (theta[states] materialized, np.add.at),
             NumPy per state (np.unique + one softmax per visited state), PyTorch autograd.
  adv        group advantages on rewards (N, K): the Numba kernels of examples/_group_kernels.py
             (not in the library), NumPy naive, minirl_lm.pg.advantages.
  e2e        one grpo_step on a multi-token task (with the share spent in the kernels), and the
             wall time of `python examples/k_sweep.py` in a subprocess.
  jit        compile time with a cold cache (fresh NUMBA_CACHE_DIR, subprocess) and the first call
             of each kernel in a new process with that cache warm.
  main       (opt-in) the main job as whole processes: `python examples/k_sweep.py` beside a plain
             NumPy script of the same experiment (examples/_plain_k_sweep.py), fresh interpreters,
             interleaved, medians of 3 (quick: 1), and what the library's start-up imports cost.
  network    (opt-in) the transformer of examples/network.py beside the same model in PyTorch
             (CPU eager, one thread, float64): one training step and one cached rollout at
             d = 64 and 256, after checking that both agree (examples/bench_network.py; a child
             process, "skipped" without PyTorch).

    $ python examples/benchmark.py                       # the full run (a few minutes)
    $ python examples/benchmark.py --quick               # small shapes (the docs page, CI)
    $ python examples/benchmark.py --sections dense adv
    $ python examples/benchmark.py --sections main      # the K-sweep against plain NumPy (~10 s)
    $ python examples/benchmark.py --quick --sections sweep --plot perf.svg
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np
from numba import njit

from minirl_lm import kernels
from minirl_lm.kernels.rows import _row_max, _row_sum_exp
from minirl_lm.pg.advantages import centred, leave_one_out, standardized

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
import _group_kernels as gk  # noqa: E402
from _cli import integer, plot_path, quiet_pipe, real, record_path, seed  # noqa: E402

try:
    import torch
except ImportError:  # optional: never a dependency
    torch = None

NCPU = os.cpu_count() or 1
MAX_LOGITS, MAX_SHAPES = 2**26, 8  # --shapes: each shape's logits, and how many
FLOOR_GOAL = 2.0  # the dense forward's goal: at most this many times one streaming read of the logits
CACHED_ROWS = 4  # the rows the exponentials alone are timed on (32 KiB at V = 1024 float64: in L1)
SECTIONS = ("dense", "tabular", "adv", "e2e", "jit")
HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------- timing


def bench(methods, rounds, min_time):
    """Median seconds per call of each method; rounds interleave the methods.

    methods: {name: zero-argument callable or None (not available)}. A call shorter than
    min_time is repeated within a round until the round lasts min_time.
    """
    live = {k: f for k, f in methods.items() if f is not None}
    reps = {}
    for name, f in live.items():  # calibrate (the answer checks warmed up)
        t0 = time.perf_counter()
        f()
        dt = max(time.perf_counter() - t0, 1e-7)
        reps[name] = max(1, int(min_time / dt))
    samples = {name: [] for name in live}
    for _ in range(rounds):
        for name, f in live.items():
            n = reps[name]
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            samples[name].append((time.perf_counter() - t0) / n)
    return {name: (float(np.median(samples[name])) if name in live else None) for name in methods}


def torch_threads(n, f):
    """f run by PyTorch on n threads."""

    def call():
        torch.set_num_threads(n)
        return f()

    return call


def fmt_ratio(x):
    if x is None:
        return "n/a"
    return f"{x:.2f}x" if x < 10 else f"{x:.1f}x" if x < 100 else f"{x:.0f}x"


def fmt_time(t):
    if t is None:
        return "n/a"
    for unit, s in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if t >= s:
            return f"{t / s:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


def table(title, header, rows, note=None):
    """Print a plain-text table: first column left-aligned, the others right-aligned."""
    cells = [header] + rows
    width = [max(len(str(r[i])) for r in cells) for i in range(len(header))]
    print(title)
    if note:
        print(note)
    for j, r in enumerate(cells):
        print(
            "  " + "  ".join(str(c).ljust(width[i]) if i == 0 else str(c).rjust(width[i]) for i, c in enumerate(r))
        )
        if j == 0:
            print("  " + "  ".join("-" * w for w in width))
    print()


TARGETS = []  # (what, measured, target, met)


def target(what, value, goal, higher=True):
    """Record one of the project's targets against a value measured in this run."""
    if value is None:
        TARGETS.append((what, "n/a", ("" if higher else "<= ") + fmt_goal(goal, higher), "n/a"))
        return
    met = value >= goal if higher else value <= goal
    shown = fmt_ratio(value) if higher else fmt_time(value)
    TARGETS.append((what, shown, fmt_goal(goal, higher), "met" if met else "NOT met"))


def fmt_goal(goal, higher):
    return f">= {goal:g}x" if higher else f"<= {fmt_time(goal)}"


def ratio(t, name, ref):
    return None if t[name] is None or t[ref] is None else t[name] / t[ref]


# ---------------------------------------------------------------- dense logits (B, T, V)


def numpy_naive_logp(logits, tokens, mask):
    """Materialized log-softmax (B, T, V) and take_along_axis."""
    z = logits - logits.max(axis=-1, keepdims=True)  # (B, T, V)
    lsm = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))  # (B, T, V)
    logp = np.take_along_axis(lsm, tokens[..., None], axis=-1)[..., 0]  # (B, T)
    logp = np.where(mask > 0, logp, 0.0)
    return logp, logp.sum(axis=-1)


def numpy_naive_backward(logits, tokens, mask, w):
    """exp of the materialized log-softmax, times -w, plus w at the target."""
    z = logits - logits.max(axis=-1, keepdims=True)  # (B, T, V)
    p = np.exp(z - np.log(np.exp(z).sum(axis=-1, keepdims=True)))  # (B, T, V)
    wm = (w * mask).astype(logits.dtype)[..., None]  # (B, T, 1)
    d = -wm * p  # (B, T, V)
    np.put_along_axis(d, tokens[..., None], np.take_along_axis(d, tokens[..., None], axis=-1) + wm, axis=-1)
    return d


def _blocks(n, V, itemsize):
    rows = max(1, (256 * 1024) // (V * itemsize))  # a block of ~256 KB stays in L2
    return [(i, min(n, i + rows)) for i in range(0, n, rows)]


def numpy_careful_logp(logits, tokens, mask):
    """Row blocks that stay in cache, one scratch buffer, gather the target only."""
    B, T, V = logits.shape
    z = logits.reshape(B * T, V)
    y = tokens.reshape(-1)
    logp = np.zeros(B * T)
    spans = _blocks(B * T, V, logits.itemsize)
    buf = np.empty((spans[0][1] - spans[0][0], V), logits.dtype)
    for i, j in spans:
        blk, e = z[i:j], buf[: j - i]
        m = blk.max(axis=1)  # (R,)
        np.subtract(blk, m[:, None], out=e)
        np.exp(e, out=e)
        lse = np.log(e.sum(axis=1, dtype=np.float64))  # (R,)
        logp[i:j] = (blk[np.arange(j - i), y[i:j]] - m) - lse
    logp = np.where(mask.reshape(-1) > 0, logp, 0.0).reshape(B, T)
    return logp, logp.sum(axis=-1)


def numpy_careful_backward(logits, tokens, mask, w):
    """Row blocks written straight into the output: exp, scale by -w/sum, add w at the target."""
    B, T, V = logits.shape
    z = logits.reshape(B * T, V)
    y = tokens.reshape(-1)
    wm = (w * mask).reshape(-1)
    out = np.empty_like(z)
    for i, j in _blocks(B * T, V, logits.itemsize):
        blk, o = z[i:j], out[i:j]
        np.subtract(blk, blk.max(axis=1)[:, None], out=o)
        np.exp(o, out=o)
        o *= (-wm[i:j] / o.sum(axis=1, dtype=np.float64))[:, None].astype(o.dtype)
        o[np.arange(j - i), y[i:j]] += wm[i:j].astype(o.dtype)
    return out.reshape(B, T, V)


def torch_logp(lt, yt, mt):
    with torch.no_grad():
        logp = torch.log_softmax(lt, dim=-1).gather(-1, yt[..., None])[..., 0] * mt
        return logp, logp.sum(-1)


def torch_backward(lt, yt, mt, wt):
    x = lt.detach().requires_grad_(True)
    logp = torch.log_softmax(x, dim=-1).gather(-1, yt[..., None])[..., 0]  # (B, T)
    (logp * (wt * mt)).sum().backward()
    return x.grad


def floor_read(logits):
    return logits.sum()  # one streaming (SIMD, pairwise) read


@njit(cache=True)
def max_pass(logits):
    """The forward kernel's first pass alone: each row's max (`rows._row_max`), read from memory."""
    rows = logits.reshape(-1, logits.shape[-1])  # (B*T, V)
    out = np.empty(rows.shape[0])
    for i in range(rows.shape[0]):
        out[i] = _row_max(rows[i])
    return out


@njit(cache=True)
def exps_in_cache(logits, n_rows):
    """The forward kernel's second pass on rows already in cache: as many `exp(z - m)` summed as
    the logits have entries, but over the same `n_rows` rows (32 KiB at V = 1024 float64), so no
    byte comes from memory: the cost of the exponentials alone."""
    rows = logits.reshape(-1, logits.shape[-1])  # (B*T, V)
    n = min(n_rows, rows.shape[0])
    out = np.empty(rows.shape[0])
    for i in range(rows.shape[0]):
        out[i] = _row_sum_exp(rows[i % n], 0.0)
    return out


def dense_case(rng, BT, V, dtype, T=16):
    T = min(T, BT)
    B = BT // T
    logits = (rng.standard_normal((B, T, V)) * 2.0).astype(dtype)  # (B, T, V)
    tokens = rng.integers(0, V, (B, T))  # (B, T)
    mask = np.ones((B, T))  # (B, T)
    w = rng.standard_normal((B, T))  # (B, T)
    return logits, tokens, mask, w


def check(name, got, ref, rtol):
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    err = np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-300)
    if not err <= rtol:
        raise AssertionError(f"{name}: answer differs from the kernel's (relative error {err:.2e})")


def dense_methods(logits, tokens, mask, w, backward):
    lt = yt = mt = wt = None
    if torch is not None:
        lt, yt = torch.from_numpy(logits), torch.from_numpy(tokens)
        mt, wt = torch.from_numpy(mask).to(lt.dtype), torch.from_numpy(w).to(lt.dtype)
    if not backward:
        m = {
            "kernel 1t": lambda: kernels._dense_logp(logits, tokens, mask),
            "NumPy naive": lambda: numpy_naive_logp(logits, tokens, mask),
            "NumPy careful": lambda: numpy_careful_logp(logits, tokens, mask),
            f"kernel {NCPU}t": lambda: kernels._dense_logp_parallel(logits, tokens, mask),
            "torch 1t": None,
            f"torch {NCPU}t": None,
        }
        if torch is not None:
            m["torch 1t"] = torch_threads(1, lambda: torch_logp(lt, yt, mt))
            m[f"torch {NCPU}t"] = torch_threads(NCPU, lambda: torch_logp(lt, yt, mt))
    else:
        buf = np.empty_like(logits)
        m = {
            "kernel 1t": lambda: kernels._dense_backward(logits, tokens, mask, w),
            "kernel 1t out=": lambda: kernels._dense_backward(logits, tokens, mask, w, out=buf),
            "NumPy naive": lambda: numpy_naive_backward(logits, tokens, mask, w),
            "NumPy careful": lambda: numpy_careful_backward(logits, tokens, mask, w),
            f"kernel {NCPU}t": lambda: kernels._dense_backward(logits, tokens, mask, w, parallel=True),
            "torch 1t": None,
            f"torch {NCPU}t": None,
        }
        if torch is not None:
            m["torch 1t"] = torch_threads(1, lambda: torch_backward(lt, yt, mt, wt))
            m[f"torch {NCPU}t"] = torch_threads(NCPU, lambda: torch_backward(lt, yt, mt, wt))
    m["floor"] = lambda: floor_read(logits)
    if not backward:  # the forward's two passes apart: where its time over the floor goes
        m["max pass"] = lambda: max_pass(logits)
        m["exps in cache"] = lambda: exps_in_cache(logits, CACHED_ROWS)
    return m


def check_dense(methods, backward, dtype):
    """Every method's answer against the kernel's (logp for the forward, dlogits backward)."""
    rtol = 1e-9 if dtype == np.float64 else 2e-4
    ref = methods["kernel 1t"]()
    ref = ref if backward else ref[0]
    for name, f in methods.items():
        if f is None or name in ("kernel 1t", "floor", "max pass", "exps in cache"):
            continue
        got = f()
        got = got if backward else got[0]
        check(name, got.numpy() if hasattr(got, "numpy") else got, ref, rtol)
        del got


def run_dense(args, rng):
    shapes = args.shapes or (
        [(4096, 16), (2048, 1024)] if args.quick else [(4096, 16), (4096, 1024), (65536, 1024), (2048, 32768)]
    )
    note = (
        "  columns: time / our kernel on 1 thread (> 1: our 1-thread kernel is faster);\n"
        f"  'threads': our 1-thread time / our {NCPU}-thread time (> 1: the threads help); "
        f"{NCPU}t = all {NCPU} threads;\n"
        "  'floor': one streaming read of the logits; 'per token': the kernel's time per (b, t) row."
        + ("" if torch is not None else "\n  PyTorch: not installed.")
    )
    for backward in (False, True):
        order = ["NumPy naive", "NumPy careful", "threads", "torch 1t", f"torch {NCPU}t"]
        if backward:
            order.insert(2, "kernel 1t out=")
        for dtype in (np.float64, np.float32):
            rows, notes = [], []
            for BT, V in shapes:
                logits, tokens, mask, w = dense_case(rng, BT, V, dtype)
                methods = dense_methods(logits, tokens, mask, w, backward)
                check_dense(methods, backward, dtype)
                t = bench(methods, args.rounds, args.min_time)
                k = t["kernel 1t"]
                rows.append(
                    [f"({BT}, {V})", fmt_time(k / BT)]
                    + [
                        fmt_ratio(
                            ratio(t, "kernel 1t", f"kernel {NCPU}t")
                            if name == "threads"
                            else ratio(t, name, "kernel 1t")
                        )
                        for name in order
                    ]
                    + [fmt_ratio(k / t["floor"])]
                )
                record_dense_targets(t, BT, V, dtype, backward)
                if not backward and dtype == np.float64 and (BT, V) == (65536, 1024):
                    notes.append((t, BT, V))
                del logits, methods
            kind = (
                "backward, dL/dlogits ('out=': the output buffer reused)"
                if backward
                else "forward, token log-probs"
            )
            table(
                f"Dense {kind}, {np.dtype(dtype).name} logits (B*T, V), B*T = rows",
                ["(B*T, V)", "per token"] + order + ["kernel/floor"],
                rows,
                note,
            )
            for t, BT, V in notes:
                floor_note(t, BT, V)


def _met(ok):
    return "met" if ok else "NOT met"


def floor_note(t, BT, V):
    """Where the forward's time over the floor goes, from the two passes timed apart."""
    r, mx, ex = (t[k] / t["floor"] for k in ("kernel 1t", "max pass", "exps in cache"))
    if r <= FLOOR_GOAL:
        verdict = f"within the {FLOOR_GOAL:g}x goal"
    elif mx >= FLOOR_GOAL:
        verdict = (
            f"so here the forward cannot come within {FLOOR_GOAL:g}x of the floor: the max pass alone, one read "
            f"of the logits, is already {mx:.2f}x"
        )
    elif ex >= FLOOR_GOAL:
        verdict = (
            f"so here the forward cannot come within {FLOOR_GOAL:g}x of the floor: one exponential per logit "
            f"is already {ex:.2f}x, and overlapping the passes could hide at most the max pass's {mx:.2f}x"
        )
    elif mx + ex > FLOOR_GOAL:
        verdict = (
            f"the two passes add up to {mx + ex:.2f}x (the kernel: {r:.2f}x); within {FLOOR_GOAL:g}x needs them "
            f"to overlap, {(mx + ex - FLOOR_GOAL) / mx:.0%} of the max pass hidden behind the exponentials of "
            f"another row (the exponentials themselves cannot hide: they are {ex:.2f}x with no byte from memory); "
            + (
                "this kernel runs the passes one after the other"
                if r >= mx + ex
                else f"this kernel's {r:.2f}x hides {(mx + ex - r) / mx:.0%} of it"
            )
        )
    else:
        verdict = (
            f"the two passes add up to {mx + ex:.2f}x, so the rest of the kernel's {r:.2f}x is its own overhead"
        )
    print(
        textwrap.fill(
            f"Where the dense forward {BT, V} float64 spends its {r:.2f}x the floor: it reads each row twice, a "
            f"max pass (from memory: {mx:.2f}x the floor alone) and a pass of exponentials summed (from L1 "
            f"cache). The exponentials alone, the same number as the logits but computed on {CACHED_ROWS} rows "
            f"that stay in cache (no byte from memory), take {ex:.2f}x the time of one streaming read of the "
            f"logits: {verdict}.",
            width=100,
            initial_indent="  ",
            subsequent_indent="  ",
        )
        + "\n"
    )


def record_dense_targets(t, BT, V, dtype, backward):
    f64 = dtype == np.float64
    nt = f"kernel {NCPU}t"
    if not backward and f64 and (BT, V) in ((4096, 1024), (65536, 1024)):
        target(f"dense fwd f64 {BT, V}: kernel 1t vs NumPy naive", ratio(t, "NumPy naive", "kernel 1t"), 4)
        target(f"dense fwd f64 {BT, V}: kernel 1t vs torch 1t", ratio(t, "torch 1t", "kernel 1t"), 2)
        target(f"dense fwd f64 {BT, V}: kernel {NCPU}t vs kernel 1t", ratio(t, "kernel 1t", nt), 1.6)
    if not backward and f64 and (BT, V) == (65536, 1024):
        r, bound = t["kernel 1t"] / t["floor"], t["exps in cache"] / t["floor"]
        TARGETS.append(
            (
                f"dense fwd f64 {BT, V}: kernel 1t / floor",
                fmt_ratio(r),
                f"<= {FLOOR_GOAL:g}x",
                _met(r <= FLOOR_GOAL),
            )
        )
        TARGETS.append(("  its exponentials alone (rows in cache) / floor", fmt_ratio(bound), "", "a bound"))
    if not backward and not f64 and (BT, V) == (65536, 1024):
        target(f"dense fwd f32 {BT, V}: kernel 1t vs torch 1t", ratio(t, "torch 1t", "kernel 1t"), 1)
        target(f"dense fwd f32 {BT, V}: kernel {NCPU}t vs torch {NCPU}t", ratio(t, f"torch {NCPU}t", nt), 1)
    if backward and f64 and (BT, V) == (4096, 1024):
        target(f"dense bwd f64 {BT, V}: kernel 1t vs NumPy naive", ratio(t, "NumPy naive", "kernel 1t"), 4)
        target(f"dense bwd f64 {BT, V}: kernel 1t vs torch autograd 1t", ratio(t, "torch 1t", "kernel 1t"), 3)


# ---------------------------------------------------------------- tabular theta (S, V)


def numpy_tab_naive_logp(theta, states, tokens, mask):
    return numpy_naive_logp(theta[states], tokens, mask)  # (B, T, V) gathered


def numpy_tab_naive_backward(theta, states, tokens, mask, w):
    d = numpy_naive_backward(theta[states], tokens, mask, w)  # (B, T, V)
    dtheta = np.zeros_like(theta)  # (S, V)
    np.add.at(dtheta, states, d)
    return dtheta


def _softmax_rows(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def numpy_tab_state_logp(theta, states, tokens, mask):
    """One log-softmax per visited state (np.unique), then a gather."""
    real = mask > 0
    visited, inv = np.unique(states[real], return_inverse=True)
    z = theta[visited]  # (S_vis, V)
    lsm = z - z.max(axis=1, keepdims=True)
    lsm -= np.log(np.exp(lsm).sum(axis=1, keepdims=True))
    logp = np.zeros(states.shape)
    logp[real] = lsm[inv, tokens[real]]
    return logp, logp.sum(axis=-1)


def numpy_tab_state_backward(theta, states, tokens, mask, w):
    """c[s] = sum of w over the tokens in s; dtheta = scatter(w at y) - c[:, None] * softmax."""
    real = mask > 0
    s, y, ws = states[real], tokens[real], w[real]
    dtheta = np.zeros_like(theta)  # (S, V)
    np.add.at(dtheta, (s, y), ws)
    visited = np.unique(s)
    c = np.bincount(s, ws, minlength=theta.shape[0])[visited]  # (S_vis,)
    dtheta[visited] -= c[:, None] * _softmax_rows(theta[visited])
    return dtheta


def torch_tab_backward(tht, st, yt, mt, wt):
    x = tht.detach().requires_grad_(True)
    logp = torch.log_softmax(x[st], dim=-1).gather(-1, yt[..., None])[..., 0]
    (logp * (wt * mt)).sum().backward()
    return x.grad


def torch_tab_logp(tht, st, yt, mt):
    return torch_logp(tht[st], yt, mt)


def run_tabular(args, rng):
    n_tok, S, V = (4096, 256, 256) if args.quick else (65536, 1024, 1024)
    T = 16
    B = n_tok // T
    theta = rng.standard_normal((S, V)) * 2.0  # (S, V)
    states = rng.integers(0, S, (B, T))  # (B, T)
    tokens = rng.integers(0, V, (B, T))
    mask = np.ones((B, T))
    w = rng.standard_normal((B, T))
    a = (theta, states, tokens, mask)
    fwd = {
        "per-state kernel": lambda: kernels._tabular_logp(*a),
        "per-token kernel": lambda: kernels._tabular_logp_per_token(*a),
        "NumPy naive": lambda: numpy_tab_naive_logp(*a),
        "NumPy per state": lambda: numpy_tab_state_logp(*a),
        "torch 1t": None,
    }
    bwd = {
        "per-state kernel": lambda: kernels._tabular_backward(*a, w),
        "per-token kernel": lambda: kernels._tabular_backward_per_token(*a, w),
        "NumPy naive (np.add.at)": lambda: numpy_tab_naive_backward(*a, w),
        "NumPy per state": lambda: numpy_tab_state_backward(*a, w),
        "torch 1t": None,
    }
    if torch is not None:
        tt = (torch.from_numpy(theta), torch.from_numpy(states), torch.from_numpy(tokens), torch.from_numpy(mask))
        wt = torch.from_numpy(w)
        fwd["torch 1t"] = torch_threads(1, lambda: torch_tab_logp(*tt))
        bwd["torch 1t"] = torch_threads(1, lambda: torch_tab_backward(*tt, wt))
    as_np = lambda x: x.numpy() if hasattr(x, "numpy") else x  # noqa: E731
    ref_fwd, ref_bwd = fwd["per-state kernel"]()[0], bwd["per-state kernel"]()
    for name, f in list(fwd.items())[1:]:
        if f is not None:
            check(name, as_np(f()[0]), ref_fwd, 1e-9)
    for name, f in list(bwd.items())[1:]:
        if f is not None:
            check(name, as_np(f()), ref_bwd, 1e-9)
    rows = []
    for label, methods in (("forward (logp)", fwd), ("backward (dtheta)", bwd)):
        t = bench(methods, args.rounds, args.min_time)
        k = t["per-state kernel"]
        rows.append(
            [label, fmt_time(k / n_tok)]
            + [fmt_ratio(ratio(t, name, "per-state kernel")) for name in list(methods)[1:]]
        )
        what = f"tabular {label.split()[0]} ({n_tok} tokens, S={S}, V={V}): per-state kernel"
        if not args.quick:  # the targets are for the full shapes
            target(f"{what} vs per-token kernel", ratio(t, "per-token kernel", "per-state kernel"), 20)
        if not args.quick and label.startswith("backward"):
            target(f"{what} vs torch", ratio(t, "torch 1t", "per-state kernel"), 100)
    table(
        f"Tabular policy, logits = theta[states]: {n_tok} tokens (B = {B}, T = {T}),\n"
        f"  S = {S} states (all visited), V = {V}, float64",
        ["", "per token", "per-token kernel", "NumPy naive", "NumPy per state", "torch 1t"],
        rows,
        "  columns: time / the per-state kernel (> 1: the per-state kernel is faster);\n"
        "  'per token': the per-state kernel's time per token."
        + ("" if torch is not None else "\n  PyTorch: not installed."),
    )


# ---------------------------------------------------------------- advantages on r (N, K)


def run_adv(args, rng):
    rows = []
    for NK in (1000, 100_000) if args.quick else (1000, 1_000_000):
        for K in (8, 64):
            r = rng.standard_normal((NK // K, K))  # (N, K)
            for name, kern, naive, lib in (
                ("centred", lambda: gk._group_centred(r), lambda: gk.np_centred(r), lambda: centred(r)),
                (
                    "standardized",
                    lambda: gk._group_standardized(r, 1e-8, 0),
                    lambda: gk.np_standardized(r),
                    lambda: standardized(r),
                ),
                ("leave-one-out", lambda: gk._group_loo(r), lambda: gk.np_loo(r), lambda: leave_one_out(r)),
            ):
                check(name, naive(), kern(), 1e-9)
                t = bench({"kernel": kern, "naive": naive, "lib": lib}, args.rounds, args.min_time)
                rows.append(
                    [
                        f"{r.size:>7d}",
                        K,
                        name,
                        fmt_time(t["kernel"] / r.size),
                        fmt_ratio(t["naive"] / t["kernel"]),
                        fmt_ratio(t["lib"] / t["kernel"]),
                    ]
                )
                if NK == 1_000_000:
                    target(
                        f"advantages N*K={r.size}, K={K}, {name}: kernel vs NumPy naive",
                        t["naive"] / t["kernel"],
                        4,
                    )
    table(
        "Group advantages on rewards (N, K), float64",
        ["N*K", "K", "baseline", "per reward", "NumPy naive", "advantages.py"],
        rows,
        "  columns: time / the kernel (examples/_group_kernels.py, not in the library);\n"
        "  advantages.py is the library's validated NumPy code.",
    )


# ---------------------------------------------------------------- end to end


def run_e2e(args, rng):
    from minirl_lm.core.mdp import TokenMDP
    from minirl_lm.core.policy import TabularPolicy
    from minirl_lm.pg.grpo import grpo_step

    # a multi-token task: N prompts, V tokens (0 is EOS), answers of 3 tokens; lazy state ids
    N, V, max_len, K = (8, 64, 6, 16) if args.quick else (32, 256, 8, 32)
    steps = 3 if args.quick else 6
    capacity = N + (steps + 2) * N * K * max_len
    mdp = TokenMDP(list(range(N)), V=V, eos=0, max_len=max_len, ids="lazy", capacity=capacity)
    answers = {n: tuple(int(x) for x in np.random.default_rng(n).integers(1, V, 3)) + (0,) for n in range(N)}

    def grader(prompt, response):
        return float(tuple(response) == answers[prompt])

    theta = np.zeros((capacity, V))
    policy, ref = TabularPolicy(theta), TabularPolicy(theta)
    spent = {"kernels": 0.0}
    originals = {name: getattr(kernels, name) for name in ("_tabular_logp", "_tabular_backward")}

    def timed(f):
        def call(*a):
            t0 = time.perf_counter()
            out = f(*a)
            spent["kernels"] += time.perf_counter() - t0
            return out

        return call

    step_rng = np.random.default_rng(args.seed)
    grpo_step(policy, ref, mdp, grader, step_rng, K=K, mu=2, lr=0.5)  # warm-up
    times, shares, n_tok = [], [], []
    try:
        for name, f in originals.items():
            setattr(kernels, name, timed(f))
        for _ in range(steps):
            spent["kernels"] = 0.0
            t0 = time.perf_counter()
            d = grpo_step(policy, ref, mdp, grader, step_rng, K=K, mu=2, lr=0.5)
            times.append(time.perf_counter() - t0)
            shares.append(spent["kernels"] / times[-1])
            n_tok.append(d["rollout"].mask.sum())
    finally:
        for name, f in originals.items():
            setattr(kernels, name, f)
    t_step = float(np.median(times))
    rows = [
        [
            "one grpo_step (mu = 2 epochs)",
            fmt_time(t_step),
            fmt_time(t_step / np.median(n_tok)),
            f"{100 * np.median(shares):.0f}%",
        ]
    ]

    # examples/k_sweep.py, warm (a first run fills the cache), in a subprocess
    cmd = [sys.executable, os.path.join(HERE, "k_sweep.py")]
    if args.quick:
        cmd += ["--K", "1", "2", "--responses", "320"]
    subprocess.run(cmd, check=True, capture_output=True)
    walls = []
    for _ in range(1 if args.quick else 3):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        walls.append(time.perf_counter() - t0)
    wall = float(np.median(walls))
    label = "python examples/k_sweep.py" + (" --K 1 2 --responses 320" if args.quick else "")
    rows.append([label, fmt_time(wall), "", ""])
    if not args.quick:
        target("python examples/k_sweep.py, warm cache (wall)", wall, 3.0, higher=False)
    table(
        f"End to end: GRPO on a multi-token task (N = {N} prompts, V = {V}, answers of 4 "
        f"tokens,\n  max_len = {max_len}, K = {K}, lazy state ids, table {capacity} x {V})",
        ["", "wall time", "per token", "in kernels"],
        rows,
        "  'in kernels': share of the step spent in tabular_logp and tabular_backward;\n"
        "  the rest is rollout, grading, objectives and validation.",
    )


# ---------------------------------------------------------------- JIT and the disk cache

JIT_CHILD = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    import numpy as np
    from minirl_lm import kernels as K
    t_import = time.perf_counter() - t0
    import _group_kernels as G                        # examples/, on PYTHONPATH
    th = np.zeros((2, 3)); st = np.zeros((1, 2), np.int64); m = np.ones((1, 2))
    lg = np.zeros((1, 2, 3)); w = np.ones((1, 2)); r = np.ones((2, 2)); f4 = np.float32
    calls = {"exp_array (first dispatch)": (K.exp_array, (np.zeros(3),)),
             "tabular_logp": (K.tabular_logp, (th, st, st, m)),
             "tabular_backward": (K.tabular_backward, (th, st, st, m, w)),
             "dense_logp": (K.dense_logp, (lg, st, m)),
             "dense_backward": (K.dense_backward, (lg, st, m, w)),
             "dense_logp float32": (K.dense_logp, (lg.astype(f4), st, m)),
             "dense_backward float32": (K.dense_backward, (lg.astype(f4), st, m, w)),
             "dense_logp parallel": (lambda *a: K.dense_logp(*a, parallel=True), (lg, st, m)),
             "dense_backward parallel": (lambda *a: K.dense_backward(*a, parallel=True),
                                         (lg, st, m, w)),
             "_group_centred (examples)": (G._group_centred, (r,)),
             "_group_standardized (examples)": (G._group_standardized, (r, 1e-8, 0)),
             "_group_loo (examples)": (G._group_loo, (r,))}
    names = sys.argv[1:] or list(calls)
    out = {"import minirl_lm.kernels": t_import}
    for name in names:
        f, args = calls[name]
        t0 = time.perf_counter()
        f(*args)
        out[name] = time.perf_counter() - t0
    print(json.dumps(out))
""")

QUICK_JIT = ["exp_array (first dispatch)", "dense_logp", "tabular_backward"]


def run_jit(args, rng):
    import json

    names = QUICK_JIT if args.quick else []
    with tempfile.TemporaryDirectory() as cache:
        path = os.pathsep.join([HERE] + [p for p in [os.environ.get("PYTHONPATH")] if p])
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=path)
        env.pop("NUMBA_DISABLE_JIT", None)
        runs = []
        for _ in range(2):  # cold (empty cache), then warm
            out = subprocess.run(
                [sys.executable, "-c", JIT_CHILD] + names, env=env, check=True, capture_output=True, text=True
            )
            runs.append(json.loads(out.stdout))
    cold, warm = runs
    rows = [[name, fmt_time(cold[name]), fmt_time(warm[name])] for name in cold]
    kern = [k for k in warm if k not in ("import minirl_lm.kernels", "exp_array (first dispatch)")]
    calls = [k for k in cold if k != "import minirl_lm.kernels"]
    rows.append(
        [
            "all kernels (sum of the calls)",
            fmt_time(sum(cold[k] for k in calls)),
            fmt_time(sum(warm[k] for k in calls)),
        ]
    )
    if not args.quick:
        target(
            "warm cache, new process: slowest first call of a kernel (after the first dispatch)",
            max(warm[k] for k in kern),
            0.05,
            higher=False,
        )
    table(
        "JIT: first call of each kernel in a new process (cache=True)"
        + (" (quick: three kernels)" if args.quick else ""),
        ["", "cold cache (compile)", "warm cache (load)"],
        rows,
        "  the first dispatch of any kernel also pays numba's one-time start-up (its typing and\n"
        "  lowering registries); every later first call only loads its own cached binary.",
    )


# ---------------------------------------------------------------- the main job, whole processes

IMPORT_CHILD = textwrap.dedent("""
    import sys, time
    t0 = time.perf_counter()
    import numpy
    t1 = time.perf_counter()
    import minirl_lm.tasks
    t2 = time.perf_counter()
    numba = "numba" in sys.modules                    # did the toy's imports pull it in?
    import minirl_lm.kernels
    t3 = time.perf_counter()
    print(t1 - t0, t2 - t1, t3 - t2, numba)
""")


def run_main(args, rng):
    """`python examples/k_sweep.py` (the chapter's K-sweep, 12,200 GRPO steps on the toy) and
    examples/_plain_k_sweep.py (the same experiment in plain NumPy, the same printed lines), each
    timed as a whole process: interpreter start, imports, the run. Rounds interleave the two and
    swap their order; each time is the median over the rounds. Their K-sweep lines are compared."""
    cmds = {
        "library": [sys.executable, os.path.join(HERE, "k_sweep.py")],
        "plain": [sys.executable, os.path.join(HERE, "_plain_k_sweep.py")],
    }
    walls, outs, imports = {name: [] for name in cmds}, {}, []
    rounds = 1 if args.quick else 3
    for i in range(rounds):
        for name in list(cmds)[:: 1 if i % 2 == 0 else -1]:
            t0 = time.perf_counter()
            outs[name] = subprocess.run(cmds[name], check=True, capture_output=True, text=True).stdout
            walls[name].append(time.perf_counter() - t0)
        out = subprocess.run([sys.executable, "-c", IMPORT_CHILD], check=True, capture_output=True, text=True)
        imports.append(out.stdout.split())
    lib, plain = (float(np.median(walls[name])) for name in cmds)
    same = outs["library"].split("\n\n")[1] == outs["plain"].rstrip("\n")  # the K-sweep lines
    print(
        f"main job k_sweep: library {lib:.2f} s, plain NumPy {plain:.2f} s ({plain / lib:.2f}x), "
        f"output {'identical' if same else 'DIFFERENT'}"
    )
    t_np, t_tasks, t_kernels = (float(np.median([float(r[k]) for r in imports])) for k in range(3))
    numba = imports[-1][3] == "True"
    print(
        f"  whole processes, {'1 round (quick)' if rounds == 1 else f'medians of {rounds} rounds'}; "
        f"start-up: import numpy {t_np:.3f} s, then minirl_lm.tasks {t_tasks:.3f} s "
        f"(numba {'imported' if numba else 'not imported'}; the kernels would add {t_kernels:.3f} s)\n"
    )


# ---------------------------------------------------------------- the V sweep (figure)


def run_sweep(args, rng):
    """Dense forward, float64: time per token against V at a fixed number of logits."""
    Vs = [16, 128, 1024, 8192, 32768] if args.quick else [16, 64, 256, 1024, 4096, 16384, 32768]
    elems = 1 << (20 if args.quick else 24)
    names = ["NumPy naive", "NumPy careful", "kernel 1t", f"kernel {NCPU}t", "torch 1t", f"torch {NCPU}t", "floor"]
    per_tok = {name: [] for name in names}
    for V in Vs:
        BT = max(16, elems // V)
        logits, tokens, mask, w = dense_case(rng, BT, V, np.float64)
        methods = dense_methods(logits, tokens, mask, w, False)
        check_dense(methods, False, np.float64)  # also the warm-up
        t = bench(methods, max(3, args.rounds // 2), args.min_time)
        for name in names:
            per_tok[name].append(None if t[name] is None else t[name] / BT)
    rows = [[name] + [fmt_time(x) for x in per_tok[name]] for name in names]
    table(
        f"Dense forward, float64: time per token against V ({elems} logits a call)",
        ["method"] + [f"V={V}" for V in Vs],
        rows,
    )
    return Vs, per_tok


def plot(path, Vs, per_tok):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.4, 4.4))  # narrow: legible at phone width
    for name, ys in per_tok.items():
        if any(y is None for y in ys):
            continue
        style = dict(ls="--", color="gray") if name == "floor" else {}
        ax.loglog(Vs, np.array(ys) * 1e9, marker="o", ms=3, label=name, **style)
    ax.set_xlabel("vocabulary size V")
    ax.set_ylabel("time per token (ns), float64 forward")
    ax.legend(fontsize=8.5, ncol=2)
    ax.grid(True, which="major", lw=0.3)
    fig.tight_layout()
    fig.savefig(path)


# ---------------------------------------------------------------- big vocabulary (opt-in)


def run_big_vocab(args, rng):
    """Hidden states and unembedding at V = 151936: see examples/bench_big_vocab.py."""
    sys.path.insert(0, HERE)
    import bench_big_vocab

    bench_big_vocab.run_section(args)


def run_network(args, rng):
    """The network (examples/network.py's model) beside PyTorch: see examples/bench_network.py."""
    sys.path.insert(0, HERE)
    import bench_network

    bench_network.run_section(args)


def run_exact(args, rng):
    """The exact engine against the examples' enumeration before it: see examples/bench_exact.py."""
    sys.path.insert(0, HERE)
    import bench_exact

    bench_exact.run_section(args)


# ---------------------------------------------------------------- validation overhead


def overhead(entry, core, rounds, min_time, clock=time.thread_time):
    """(time of entry / time of core, time of core): the median over ``rounds`` of the ratio
    within a round, each round timed A B B A so that a drift hits both alike (a call repeated to
    last min_time); the core's time is its fastest. The clock is the thread's CPU time (wall
    time for the threaded kernels, whose idle workers spin): the time a neighbour's load takes
    the core away is not counted, only what it slows while we run."""
    entry(), core()  # warm-up: first calls load the checks
    t0 = clock()
    core()
    n = max(1, int(min_time / max(clock() - t0, 1e-7)))

    def timed(f):
        t0 = clock()
        for _ in range(n):
            f()
        return (clock() - t0) / n

    ratios, cores = [], []
    for _ in range(rounds):
        a1, b1, b2, a2 = timed(entry), timed(core), timed(core), timed(entry)
        ratios.append((a1 + a2) / (b1 + b2))
        cores += [b1, b2]
    return float(np.median(ratios)), min(cores)


def run_overhead(args, rng):
    """Each validated kernel entry's time over its trusted core's (the cores are what the tables
    above time and what the library's inner loops call), and the policy's methods over theirs."""
    from minirl_lm.core.policy import TabularPolicy

    BT, V = (2048, 1024) if args.quick else (4096, 1024)
    logits, tokens, mask, w = dense_case(rng, BT, V, np.float64)
    lg32, buf = logits.astype(np.float32), np.empty_like(logits)
    (B, T), S, Vt = (16, 1024), 512, 512
    if not args.quick:
        (B, T), S, Vt = (64, 1024), 1024, 1024
    theta = rng.standard_normal((S, Vt))  # (S, V)
    st, yt = rng.integers(0, S, (B, T)), rng.integers(0, Vt, (B, T))  # (B, T)
    mt, wt = np.ones((B, T)), rng.standard_normal((B, T))
    small = (slice(0, 4),)  # per-token: B T V work
    pt = (theta, st[small], yt[small], mt[small])
    x = rng.uniform(-700.0, 700.0, 1 << (16 if args.quick else 20))
    x32 = x.astype(np.float32)
    pol = TabularPolicy(theta)
    K = kernels
    dense = f"({BT}, {V})"
    tab = f"{B * T} tok, S = V = {S}"
    cases = [
        ("exp_array", f"({x.size},)", lambda: K.exp_array(x), lambda: K._exp_array(x)),
        ("exp32_array", f"({x.size},)", lambda: K.exp32_array(x32), lambda: K._exp32_array(x32)),
        (
            "dense_logp",
            dense,
            lambda: K.dense_logp(logits, tokens, mask),
            lambda: K._dense_logp(logits, tokens, mask),
        ),
        (
            "dense_logp float32",
            dense,
            lambda: K.dense_logp(lg32, tokens, mask),
            lambda: K._dense_logp(lg32, tokens, mask),
        ),
        (
            "dense_logp parallel",
            dense,
            lambda: K.dense_logp(logits, tokens, mask, parallel=True),
            lambda: K._dense_logp_parallel(logits, tokens, mask),
        ),
        (
            "dense_backward",
            dense,
            lambda: K.dense_backward(logits, tokens, mask, w),
            lambda: K._dense_backward(logits, tokens, mask, w),
        ),
        (
            "dense_backward out=",
            dense,
            lambda: K.dense_backward(logits, tokens, mask, w, out=buf),
            lambda: K._dense_backward(logits, tokens, mask, w, out=buf),
        ),
        (
            "dense_backward parallel",
            dense,
            lambda: K.dense_backward(logits, tokens, mask, w, parallel=True),
            lambda: K._dense_backward(logits, tokens, mask, w, parallel=True),
        ),
        (
            "tabular_logp",
            tab,
            lambda: K.tabular_logp(theta, st, yt, mt),
            lambda: K._tabular_logp(theta, st, yt, mt),
        ),
        (
            "tabular_backward",
            tab,
            lambda: K.tabular_backward(theta, st, yt, mt, wt),
            lambda: K._tabular_backward(theta, st, yt, mt, wt),
        ),
        (
            "tabular_logp_per_token",
            f"{pt[1].size} tok, S = V = {S}",
            lambda: K.tabular_logp_per_token(*pt),
            lambda: K._tabular_logp_per_token(*pt),
        ),
        (
            "tabular_backward_per_token",
            f"{pt[1].size} tok, S = V = {S}",
            lambda: K.tabular_backward_per_token(*pt, wt[small]),
            lambda: K._tabular_backward_per_token(*pt, wt[small]),
        ),
        ("TabularPolicy.logp", tab, lambda: pol.logp(st, yt, mt), lambda: pol._logp(st, yt, mt)),
        (
            "TabularPolicy.backward",
            tab,
            lambda: pol.backward(st, yt, mt, wt),
            lambda: pol._backward(st, yt, mt, wt),
        ),
    ]
    rows = []
    for name, shape, entry, core in cases:
        clock = time.perf_counter if "parallel" in name else time.thread_time  # OpenMP spins
        r, t_core = overhead(entry, core, max(3 * args.rounds, 9), max(args.min_time, 0.005), clock)
        rows.append([name, shape, fmt_time(t_core), fmt_ratio(r)])
        if not args.quick and not name.startswith("TabularPolicy"):
            TARGETS.append(
                (f"validated {name} / its core", fmt_ratio(r), "<= 1.1x", "met" if r <= 1.1 else "NOT met")
            )
    table(
        "Validation overhead: each validated entry's time / its trusted core's (median of A B B A rounds)",
        ["entry", "shape", "core", "entry / core"],
        rows,
        "  the core is the jitted `_name` the entry calls after its checks (for the policy: its\n"
        "  `_logp` / `_backward`); 1.00x: the checks cost nothing measurable beside it; 'core':\n"
        "  the core's CPU time per call (wall time for the parallel kernels).",
    )


# ---------------------------------------------------------------- main


def shape(text):
    """'65536x1024' -> (65536, 1024)."""
    try:
        BT, V = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected B*T x V like 65536x1024, got {text!r}") from None
    if BT < 1 or V < 1:
        raise argparse.ArgumentTypeError(f"expected B*T >= 1 and V >= 1, got {text!r}")
    if BT * V > MAX_LOGITS:
        raise argparse.ArgumentTypeError(f"expected B*T x V <= 2^26 = {MAX_LOGITS} logits, got {text!r}")
    return BT, V


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--quick",
        action="store_true",
        help="small shapes and few rounds (the docs page and CI, well under a minute)",
    )
    p.add_argument(
        "--sections",
        nargs="+",
        choices=SECTIONS + ("sweep", "big_vocab", "main", "exact", "network"),
        default=None,
        help=f"what to run (default: {' '.join(SECTIONS)}; 'sweep' is the V sweep of the figure, added by --plot; "
        "'main' the K-sweep against plain NumPy, whole processes; "
        "'exact' the exact engine against the code before it; "
        "'network' the transformer of examples/network.py beside PyTorch)",
    )
    p.add_argument(
        "--rounds",
        type=integer(1, 20),
        default=None,
        help="timing rounds per method, the median is reported (default 5, quick 3; at most 20: every "
        "section times each method in every round, so the run grows with it)",
    )
    p.add_argument(
        "--min-time",
        type=real(0, 0.1, low_open=True),
        default=None,
        help="seconds a round of one method lasts at least (default 0.02, quick 0.005; at most 0.1: a "
        "section's run is about rounds x methods x shapes x this)",
    )
    p.add_argument(
        "--shapes",
        nargs="+",
        type=shape,
        metavar="BTxV",
        default=None,
        help=f"dense shapes (B*T, V), e.g. 65536x1024 (default: the four of the project's targets; at most "
        f"{MAX_SHAPES} shapes of at most 2^26 logits each, the largest default's size: each is timed forward "
        "and backward, in float64 and in float32)",
    )
    p.add_argument("--seed", type=seed, default=0, help="np.random.default_rng(seed) for the inputs")
    p.add_argument("--plot", metavar="PATH", type=plot_path, help="draw time per token against V (dense forward)")
    p.add_argument(
        "--record",
        metavar="PATH",
        type=record_path,
        help="also write the run (its output, the V sweep, the machine) to a JSON record",
    )
    p.add_argument(
        "--show",
        action="store_true",
        help="print the kept record (docs/records/benchmark.json) instead of measuring; with --plot, its V sweep",
    )
    args = p.parse_args(argv)
    if args.shapes and len(args.shapes) > MAX_SHAPES:
        p.error(f"--shapes: expected at most {MAX_SHAPES} shapes, got {len(args.shapes)}")
    if args.show:
        given = [k for k in ("quick", "sections", "rounds", "min_time", "shapes", "record") if getattr(args, k)]
        if given:
            p.error(f"--show: prints the kept record and measures nothing, got --{given[0].replace('_', '-')} too")
        if not os.path.isfile(RECORD):
            p.error(f"--show: expected a record at {RECORD} (write one with --record)")
    return args


RECORD = os.path.join(os.path.dirname(HERE), "docs", "records", "benchmark.json")


class _Tee:
    """Standard output that also keeps what is written (for --record)."""

    def __init__(self, stream):
        self.stream, self.parts = stream, []

    def write(self, text):
        self.parts.append(text)
        return self.stream.write(text)

    def flush(self):
        self.stream.flush()


def show(path, plot_to=None):
    """Print a kept run: where and when it was taken, its command, its output; draw its V sweep."""
    with open(path) as f:
        rec = json.load(f)
    import _record

    print(_record.describe(rec["machine"]))
    print(f"reproduces: {rec.get('reproduces', _record.TIMING)}")
    print(f"$ {rec['command']}")
    print(rec["stdout"], end="")
    if plot_to:
        if rec["sweep"] is None:
            raise SystemExit(f"{path}: the record holds no V sweep to draw (record a run with --plot)")
        plot(plot_to, rec["sweep"]["V"], rec["sweep"]["per_token"])


def main(argv=None):
    quiet_pipe()
    args = parse_args(argv)
    if args.show:
        return show(RECORD, args.plot)
    if args.record:
        import bench_big_vocab  # the machine's description

        info, tee = bench_big_vocab.machine(), _Tee(sys.stdout)
        sys.stdout = tee
        try:
            sweep = measure(args)
        finally:
            sys.stdout = tee.stream
        argv = sys.argv[1:] if argv is None else list(argv)
        shown = ["FIG.svg" if a == args.plot else a for a in argv if a not in ("--record", args.record)]
        rec = {
            "command": " ".join(["python examples/benchmark.py", *shown]),
            "machine": info,
            "reproduces": bench_big_vocab._record.TIMING,
            "stdout": "".join(tee.parts),
            "sweep": sweep,
        }
        with open(args.record, "w") as f:
            json.dump(rec, f, indent=1)
            f.write("\n")
        return None
    measure(args)


def measure(args):
    """Run the sections of args; return the V sweep ({"V": [...], "per_token": {...}}) if one ran."""
    args.rounds = args.rounds if args.rounds is not None else (3 if args.quick else 5)
    args.min_time = args.min_time if args.min_time is not None else (0.005 if args.quick else 0.02)
    sections = list(args.sections or SECTIONS)
    if args.plot and "sweep" not in sections:
        sections.append("sweep")
    rng = np.random.default_rng(args.seed)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"{NCPU} cores, load average {load:.2f} at the start; numpy {np.__version__}, "
        f"torch {torch.__version__ if torch is not None else 'not installed'}; "
        f"medians of {args.rounds} rounds{' (quick)' if args.quick else ''}\n"
    )
    runners = {"dense": run_dense, "tabular": run_tabular, "adv": run_adv, "e2e": run_e2e, "jit": run_jit}
    runners["big_vocab"] = run_big_vocab  # opt-in: examples/bench_big_vocab.py
    runners["main"] = run_main  # opt-in: whole processes, the library's K-sweep against plain NumPy
    runners["exact"] = run_exact  # opt-in: examples/bench_exact.py
    runners["network"] = run_network  # opt-in: examples/bench_network.py
    for name in sections:
        if name in runners:
            runners[name](args, rng)
    sweep = None
    if "sweep" in sections:
        Vs, per_tok = run_sweep(args, rng)
        sweep = {
            "V": [int(v) for v in Vs],
            "per_token": {k: [None if y is None else float(y) for y in ys] for k, ys in per_tok.items()},
        }
        if args.plot:
            plot(args.plot, Vs, per_tok)
    if not set(sections) <= {"main", "exact", "network", "big_vocab"}:  # sections of their own: their lines only
        run_overhead(args, rng)
    if TARGETS:
        table(
            "The project's targets (ratios from this run)",
            ["target", "measured", "goal", ""],
            [list(t) for t in TARGETS],
        )
    return sweep


if __name__ == "__main__":
    main()
