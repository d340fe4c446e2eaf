"""Chunked log-probs from hidden states: against the materialized NumPy reference, central finite
differences, every chunk size, padding, V = 1, bad input; the two chunk kernels against their twins
and against the dense kernels (bit for bit); the benchmark section runs.

Tolerances: float64 relative 1e-12 (norm-wise, max |a - b| / max |b|) against the reference; float32
relative 1e-5 against the reference run in float64 on the same (float32) numbers; finite
differences (tests/gradcheck.py, h = 1e-6): relative 1e-7, far above their O(1e-10) error.
"""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.core.logprob import token_logp, token_logp_backward
from minirl_lm.pg.kl import kl_penalty
from minirl_lm.scale.bigvocab import VBLOCK, add_outer, chunked_logp, chunked_loss_grad

ROOT = Path(__file__).resolve().parents[2]


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.abs(a - b).max(initial=0.0) / max(np.abs(b).max(initial=0.0), 1e-300)


def case(seed, N=37, d=5, V=50, dtype=np.float64):
    rng = np.random.default_rng(seed)
    h = rng.standard_normal((N, d)).astype(dtype)  # (N, d)
    W = rng.standard_normal((V, d)).astype(dtype)  # (V, d)
    y = rng.integers(0, V, N)  # (N,)
    logp_ref = -rng.uniform(0.5, 4.0, N)  # (N,) data
    a = rng.standard_normal(N)  # (N,) data
    return h, W, y, logp_ref, a


def make_loss(logp_ref, a):
    """A per-token loss from the project's objectives: k3 KL to a reference plus a linear term."""

    def loss_fn(lp, rows):
        kl, g = kl_penalty(
            lp[None], logp_ref[rows][None], np.ones((1, rows.size)), "k3", agg="seq_sum"
        )  # weight 1 per token
        return kl + a[rows] @ lp, g[0] + a[rows]

    return loss_fn


def reference(h, W, y, mask, loss_fn):
    """Materialized in float64: logits (1, N, V), logprob's log-softmax and its backward."""
    h, W = h.astype(np.float64), W.astype(np.float64)
    N = h.shape[0]
    m = np.ones(N) if mask is None else np.asarray(mask, np.float64)
    z = (h @ W.T)[None]  # (1, N, V)
    ones = np.ones((1, N))  # the reference's mask must be right-padded
    logp = np.where(m > 0, token_logp(z, y[None], ones)[0][0], 0.0)  # (N,)
    real = np.flatnonzero(m)
    loss, g_real = loss_fn(logp[real], real) if real.size else (0.0, np.zeros(0))
    g = np.zeros(N)
    g[real] = g_real
    G = token_logp_backward(z, y[None], ones, g[None])[0]  # (N, V), 0 at padding
    return loss, logp, G @ W, G.T @ h


@pytest.mark.parametrize("chunk", [1, 7, 37, 100])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_matches_materialized_reference(chunk, dtype):
    h, W, y, logp_ref, a = case(0, dtype=dtype)
    fn = make_loss(logp_ref, a)
    loss, logp, dh, dW = chunked_loss_grad(h, W, y, fn, chunk=chunk)
    r_loss, r_logp, r_dh, r_dW = reference(h, W, y, None, fn)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    assert dh.dtype == dtype and dW.dtype == dtype and logp.dtype == np.float64
    assert rel(logp, r_logp) <= tol and rel(dh, r_dh) <= tol and rel(dW, r_dW) <= tol
    assert abs(loss - r_loss) <= tol * abs(r_loss)
    assert np.array_equal(chunked_logp(h, W, y, chunk=chunk), logp)  # same kernel, same bits


def test_chunk_size_changes_only_rounding():
    """Rows are independent, so the chunk size changes only how BLAS blocks the products."""
    h, W, y, logp_ref, a = case(1)
    outs = [chunked_loss_grad(h, W, y, make_loss(logp_ref, a), chunk=c) for c in (1, 5, 37)]
    for o in outs[1:]:
        assert all(rel(x, x0) <= 1e-14 for x, x0 in zip(o[1:], outs[0][1:]))


def test_finite_differences():
    h, W, y, logp_ref, a = case(2, N=6, d=3, V=7)
    mask = np.array([1, 1, 0, 1, 1, 0.0])
    fn = make_loss(logp_ref, a)
    _, _, dh, dW = chunked_loss_grad(h, W, y, fn, mask=mask, chunk=4)
    fd_h = fd_grad(lambda x: chunked_loss_grad(x, W, y, fn, mask=mask, chunk=4)[0], h)
    fd_W = fd_grad(lambda x: chunked_loss_grad(h, x, y, fn, mask=mask, chunk=4)[0], W)
    assert rel(dh, fd_h) <= 1e-7 and rel(dW, fd_W) <= 1e-7
    assert np.all(dh[mask == 0] == 0.0)


def test_mask_drops_padding():
    h, W, y, logp_ref, a = case(3)
    mask = (np.random.default_rng(3).random(37) < 0.6).astype(float)
    fn = make_loss(logp_ref, a)
    loss, logp, dh, dW = chunked_loss_grad(h, W, y, fn, mask=mask, chunk=6)
    r = reference(h, W, y, mask, fn)
    assert rel(logp, r[1]) <= 1e-12 and rel(dh, r[2]) <= 1e-12 and rel(dW, r[3]) <= 1e-12
    assert np.all(logp[mask == 0] == 0.0) and np.all(dh[mask == 0] == 0.0)
    assert abs(loss - r[0]) <= 1e-12 * abs(r[0])


@pytest.mark.parametrize("N", [0, 5])
def test_empty_mask_gives_exact_zeros_and_no_call(N):
    h, W, y, _, _ = case(4, N=N)

    def never(lp, rows):
        raise AssertionError("loss_fn called without a real token")

    loss, logp, dh, dW = chunked_loss_grad(h, W, y, never, mask=np.zeros(N), chunk=3)
    assert loss == 0.0 and logp.shape == (N,) and dh.shape == (N, 5) and dW.shape == (50, 5)
    assert not logp.any() and not dh.any() and not dW.any()
    assert not chunked_logp(h, W, y, mask=np.zeros(N)).any()


def test_vocabulary_of_one():
    h, W, _, logp_ref, a = case(5, V=1)
    y = np.zeros(37, dtype=np.int64)
    loss, logp, dh, dW = chunked_loss_grad(h, W, y, make_loss(logp_ref, a), chunk=8)
    assert np.all(logp == 0.0) and np.all(dh == 0.0) and np.all(dW == 0.0)  # p = 1 exactly


def test_inputs_unchanged_and_contiguity_free():
    h, W, y, logp_ref, a = case(6)
    hF, WF = np.asfortranarray(h), np.asfortranarray(W)
    before = (hF.copy(), WF.copy(), y.copy())
    got = chunked_loss_grad(hF, WF, y, make_loss(logp_ref, a), chunk=5)
    want = chunked_loss_grad(h, W, y, make_loss(logp_ref, a), chunk=5)
    assert all(np.array_equal(x, b) for x, b in zip((hF, WF, y), before))
    assert all(np.array_equal(g, w) for g, w in zip(got[1:], want[1:]))


def _good():
    h, W, y, logp_ref, a = case(7, N=6, d=3, V=4)
    return dict(h=h, W=W, tokens=y, loss_fn=make_loss(logp_ref, a), mask=np.ones(6), chunk=2)


BAD = [
    (dict(h=[[1.0, 2.0, 3.0]] * 6), TypeError, "h:"),
    (dict(h=np.ones((6, 3), dtype=np.int64)), TypeError, "h:"),
    (dict(h=np.ones(6)), ValueError, "h:"),
    (dict(h=np.full((6, 3), np.nan)), ValueError, "h:"),
    (dict(h=np.full((6, 3), 1e308)), ValueError, "h:"),  # logits would overflow
    (dict(W=np.ones((4, 3), dtype=np.float32)), TypeError, "W:"),  # dtype of h, no cast
    (dict(W=np.ones((4, 2))), ValueError, "W:"),
    (dict(W=np.ones((0, 3))), ValueError, "W:"),
    (dict(W=np.array([[np.inf, 0, 0]] * 4)), ValueError, "W:"),
    (dict(tokens=np.full(6, 4)), ValueError, "tokens:"),
    (dict(tokens=np.full(6, -1)), ValueError, "tokens:"),
    (dict(tokens=np.zeros(6)), TypeError, "tokens:"),
    (dict(tokens=np.zeros(5, dtype=np.int64)), ValueError, "tokens:"),
    (dict(mask=np.full(6, 0.5)), ValueError, "mask:"),
    (dict(mask=np.ones(5)), ValueError, "mask:"),
    (dict(mask=np.array(["1"] * 6)), TypeError, "mask:"),
    (dict(chunk=0), ValueError, "chunk:"),
    (dict(chunk=2.5), TypeError, "chunk:"),
    (dict(chunk=True), TypeError, "chunk:"),
    (dict(loss_fn="k3"), TypeError, "loss_fn:"),
    (dict(loss_fn=lambda lp, rows: lp.sum()), TypeError, "loss_fn:"),
    (dict(loss_fn=lambda lp, rows: (lp.sum(), lp[:-1])), ValueError, "loss_fn:"),
    (dict(loss_fn=lambda lp, rows: (np.nan, lp)), ValueError, "loss_fn:"),
    (dict(loss_fn=lambda lp, rows: (0.0, np.full(lp.shape, np.inf))), ValueError, "loss_fn:"),
    # a finite gradient whose dh overflows: the one overflow error, naming the function
    (
        dict(loss_fn=lambda lp, rows: (0.0, np.full(lp.shape, 1e308))),
        ValueError,
        "chunked_loss_grad: expected a finite dh",
    ),
    # what loss_fn returns: a real loss (no string, None, bool, array), finite, a real gradient
    (dict(loss_fn=lambda lp, rows: ("1.0", lp)), TypeError, "loss_fn: expected a real loss"),
    (dict(loss_fn=lambda lp, rows: (None, lp)), TypeError, "loss_fn: expected a real loss"),
    (dict(loss_fn=lambda lp, rows: (True, lp)), TypeError, "loss_fn: expected a real loss"),
    (dict(loss_fn=lambda lp, rows: (np.array([1.0]), lp)), TypeError, "loss_fn: expected a real"),
    (dict(loss_fn=lambda lp, rows: (np.inf, lp)), ValueError, "loss_fn: expected a finite loss"),
    (dict(loss_fn=lambda lp, rows: (10**400, lp)), ValueError, "loss_fn: expected a finite loss"),
    (dict(loss_fn=lambda lp, rows: (0.0, lp > -1)), TypeError, "loss_fn: expected a real loss"),
    (dict(loss_fn=lambda lp, rows: (0.0, ["x"] * lp.size)), TypeError, "loss_fn: expected a real"),
    (dict(loss_fn=lambda lp, rows: (0.0, lp.astype(complex))), TypeError, "loss_fn: expected a"),
]


@pytest.mark.parametrize("change, exc, name", BAD)
def test_bad_input_names_the_argument(change, exc, name):
    kw = {**_good(), **change}
    with pytest.raises(exc, match="^" + re.escape(name)):
        chunked_loss_grad(**kw)
    if "loss_fn" not in change:
        kw.pop("loss_fn")
        with pytest.raises(exc, match="^" + re.escape(name)):
            chunked_logp(**kw)


# The two chunk kernels against the dense kernels and their NumPy twins: tests/kernels/test_chunk.py.


# ---------------------------------------------------------------- the benchmark section

LINE = re.compile(
    r"^big vocab V=\d+ d=\d+ N=\d+ float(32|64): (.{20}) peak +\d+\.\d MiB "
    r"\(\d+\.\d{3} of logits\), time +\d+\.\d+ s \(\d+\.\d\dx floor\)$"
)


# started when the session starts (tests/conftest.py), on a core of its own
SECTION = [sys.executable, "examples/benchmark.py", "--quick", "--sections", "big_vocab"]
EXAMPLE_RUNS = [SECTION]


@pytest.fixture(scope="module")
def section():
    import example_runs  # the command once per session, forked warm (tests/conftest.py)

    out = example_runs.run(SECTION, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_section_prints_one_line_per_method(section):
    rows = [m.group(2).strip() for m in map(LINE.match, section.splitlines()) if m]
    torch_row = ["PyTorch naive"] if "PyTorch naive        skipped" not in section else []
    assert rows == ["NumPy materialized"] + torch_row + ["ours chunk=64", "ours chunk=128"]
    peaks = {
        m.group(2).strip(): float(re.search(r"\((\d+\.\d+) of logits", m.group(0))[1])
        for m in map(LINE.match, section.splitlines())
        if m
    }
    assert peaks["ours chunk=64"] < peaks["ours chunk=128"] < peaks["NumPy materialized"]
    assert section.count("goals ours chunk=") == 2 and "Traceback" not in section


@pytest.mark.parametrize("bad", [["--N", "0"], ["--chunks", "3"], ["--dtype", "float16"], ["--V", "x"]])
def test_bad_arguments_exit_2(bad):
    out = subprocess.run(
        [sys.executable, "examples/bench_big_vocab.py", *bad], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr and "usage" in out.stderr


def test_help():
    out = subprocess.run(
        [sys.executable, "examples/bench_big_vocab.py", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and "--quick" in out.stdout and "--plot" in out.stdout


def test_section_without_torch_and_the_goal_lines(monkeypatch):
    """The table logic on synthetic measurements: the torch row is skipped when torch is missing,
    each missed goal prints its cause, and the ratios are the measured ones."""
    sys.path.insert(0, str(ROOT / "examples"))
    import bench_big_vocab as bench

    cfg = dict(V=1000, d=8, N=100, chunks=(10, 50))
    logits = 100 * 1000 * 4
    fake = {
        "floor": {"time": 2.0},
        "products": {"time": 2.2},
        "rows": {"recomputed": 0.4, "kept": 0.2},
        "numpy": {"time": 5.0, "peak": 2.0 * logits, "outputs": 8, "digest": [1.0, 2.0, 3.0]},
    }

    def measure(method, cfg, dtype, seed, chunk=0):
        if method == "ours":  # chunk 10: 0.1 of logits, 2.4 s; 50: 0.5, 2.8 s
            return {
                "time": 2.0 + chunk / 125,
                "peak": chunk / 100 * logits,
                "outputs": 8,
                "digest": [1.0, 2.0, 3.0],
            }
        return fake[method]

    monkeypatch.setattr(bench, "measure", measure)
    monkeypatch.setattr(bench, "have_torch", lambda: False)
    lines = []
    bench.run(cfg, "float32", 0, out=lines.append)
    text = "\n".join(lines)
    assert "PyTorch naive        skipped: torch is not installed" in text
    assert "ours chunk=10        peak    0.0 MiB (0.100 of logits), time  2.08 s (1.04x floor)" in text
    assert "goals ours chunk=10: peak 0.100 of logits (<= 0.125: met); time 1.04x floor" in text
    assert "goals ours chunk=50: peak 0.500 of logits (<= 0.125: NOT met); time 1.20x floor" in text
    assert "chunk/N = 0.500 of the logits" in text and text.count("cause:") == 1
    assert (
        "row kernels alone, chunk=10: 0.200x the floor with the max and the exponentials computed again "
        "for the gradient, 0.100x with the exponentials kept in the buffer (ours): 0.100x of the floor saved"
    ) in text


# ---------------------------------------------------------------- the residue of bad input


def test_a_hidden_size_of_zero_gives_the_uniform_log_probs_and_zero_gradients():
    h, W, y = np.zeros((5, 0)), np.zeros((4, 0)), np.array([0, 1, 2, 3, 0])
    logp = chunked_logp(h, W, y, chunk=2)
    assert np.array_equal(logp, np.full(5, -np.log(4.0)))
    loss, logp2, dh, dW = chunked_loss_grad(h, W, y, lambda lp, rows: (float(lp.sum()), np.ones_like(lp)), chunk=2)
    assert np.array_equal(logp2, logp) and dh.shape == (5, 0) and dW.shape == (4, 0)
    assert loss == float(logp[:2].sum()) + float(logp[2:4].sum()) + float(logp[4:].sum())


def test_a_zero_dimensional_loss_is_accepted_as_a_number():
    h, W, y, logp_ref, a = case(8, N=6, d=3, V=4)
    ref = chunked_loss_grad(h, W, y, lambda lp, rows: (float(lp.sum()), np.ones_like(lp)))
    got = chunked_loss_grad(h, W, y, lambda lp, rows: (np.array(lp.sum()), np.ones(lp.size, int)))
    assert all(np.array_equal(g, r) for g, r in zip(got, ref))


def test_a_chunk_whose_buffer_exceeds_memory_is_refused_before_allocating():
    N = V = 2**16  # inputs of 512 KiB each
    h, W, y = np.zeros((N, 1)), np.zeros((V, 1)), np.zeros(N, np.int64)
    for call in (
        lambda: chunked_logp(h, W, y, chunk=N),
        lambda: chunked_loss_grad(h, W, y, lambda lp, r: (0.0, lp), chunk=N),
    ):
        with pytest.raises(ValueError, match=r"^chunk: expected a \(chunk, V\) buffer of at most"):
            call()


# ---------------------------------------------------------------- each entry exponentiated once


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_exp_kept_pass_equals_the_two_kernel_pass_and_the_reference(dtype):
    """The fused loop keeps exp(z - m) in the buffer (``_chunk_logp_exp``) and scales it into G
    (``_chunk_grad_from_exp``). Against the same loop through ``_chunk_logp`` and
    ``_chunk_grad_inplace`` (max and exponentials recomputed): the same products, so equal to
    rounding (relative 1e-14 float64, 1e-6 float32); against the materialized float64 reference:
    1e-12 (float64), 1e-5 (float32), at a vocabulary of a few thousand."""
    from minirl_lm import kernels

    h, W, y, logp_ref, a = case(11, N=40, d=16, V=3001, dtype=dtype)
    fn = make_loss(logp_ref, a)
    loss, logp, dh, dW = chunked_loss_grad(h, W, y, fn, chunk=16)
    old_logp, old_dh, old_dW, old_loss = np.zeros(40), np.zeros_like(h), np.zeros_like(W), 0.0
    for i in range(0, 40, 16):
        rows = np.arange(i, min(40, i + 16))
        z = h[rows] @ W.T  # (R, V)
        old_logp[rows] = kernels._chunk_logp(z, y[rows], np.empty(rows.size))
        part, g = fn(old_logp[rows].copy(), rows)
        old_loss += part
        kernels._chunk_grad_inplace(z, y[rows], g)
        old_dh[rows] = z @ W
        old_dW += z.T @ h[rows]
    near = 1e-14 if dtype == np.float64 else 1e-6
    assert rel(logp, old_logp) <= near and rel(dh, old_dh) <= near and rel(dW, old_dW) <= near
    assert abs(loss - old_loss) <= near * abs(old_loss)
    r_loss, r_logp, r_dh, r_dW = reference(h, W, y, None, fn)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    assert rel(logp, r_logp) <= tol and rel(dh, r_dh) <= tol and rel(dW, r_dW) <= tol
    assert abs(loss - r_loss) <= tol * abs(r_loss)


def test_add_outer_is_the_block_by_block_product():
    """dW = G^T h (first) or dW += G^T h, a block of VBLOCK rows of dW at a time."""
    rng = np.random.default_rng(12)
    V, R, d = VBLOCK + 3, 4, 2  # two blocks, the last one short
    G, hr = rng.standard_normal((R, V)), rng.standard_normal((R, d))
    dW, scratch = np.full((V, d), np.nan), np.empty((VBLOCK, d))
    add_outer(dW, G, hr, scratch, first=True)
    assert rel(dW, G.T @ hr) <= 1e-15
    add_outer(dW, G, hr, scratch, first=False)
    assert rel(dW, 2 * G.T @ hr) <= 1e-15


def test_bool_tokens_are_not_ids():
    h, W = np.ones((3, 2)), np.ones((4, 2))
    for call in (lambda t: chunked_logp(h, W, t), lambda t: chunked_loss_grad(h, W, t, lambda lp, r: (0.0, lp))):
        with pytest.raises(
            TypeError, match=r"^tokens: expected an integer array of ids, got an array of dtype bool"
        ):
            call(np.array([True, False, True]))


def test_the_big_arrays_are_named_by_their_type_shape_and_count_of_bad_entries():
    h, W, y = np.ones((3, 2)), np.ones((3, 2)), np.array([0, 1, 2])
    bad = h.copy()
    bad[0, 0], bad[2, 1] = np.nan, np.inf
    for change, exc, msg in [
        (dict(h=[[1.0, 1.0]] * 3), TypeError, "h: expected a float32 or float64 numpy array, got list"),
        (dict(h=np.ones((3, 2), int)), TypeError, "h: expected a float32 or float64 numpy array, got int64 array"),
        (dict(h=np.ones(3)), ValueError, "h: expected shape (N, D), got (3,)"),
        (dict(W=np.ones((0, 2))), ValueError, "W: expected shape (V, 2) with V >= 1, got (0, 2)"),
        (dict(W=np.ones((3, 3))), ValueError, "W: expected shape (V, 2) with V >= 1, got (3, 3)"),
        (dict(h=bad), ValueError, "h: expected finite values, got 2 NaN or inf entries"),
    ]:
        kw = dict(h=h, W=W, tokens=y) | change
        with pytest.raises(exc) as err:
            chunked_logp(**kw)
        assert str(err.value) == msg


def test_the_logit_bound_reads_both_signs_and_the_dtype_and_admits_its_edge():
    h, W = np.array([[-2e154, 0.5]]), np.array([[3e153, 0.0]])  # max|h| is the negative entry's
    with pytest.raises(ValueError) as err:
        chunked_logp(h, W, np.array([0]))
    assert (
        str(err.value) == "h: expected d * max|h| * max|W| <= 8.99e+307 (no logit overflows float64), got 1.2e+308"
    )
    big = np.finfo(np.float32).max
    with pytest.raises(ValueError) as err:
        chunked_logp(np.array([[big]], np.float32), np.ones((1, 1), np.float32), np.array([0]))
    assert str(err.value) == "h: expected d * max|h| * max|W| <= 1.7e+38 (no logit overflows float32), got 3.4e+38"
    top = np.finfo(np.float64).max / 2  # d max|h| max|W| = top exactly: accepted, every logit finite
    assert chunked_logp(np.array([[top]]), np.array([[1.0], [0.5]]), np.array([1]))[0] == -top / 2
    # no rows: no logit, whatever W holds
    assert chunked_logp(np.zeros((0, 2)), np.full((3, 2), 1e308), np.zeros(0, int)).shape == (0,)


def test_one_real_token_gets_its_log_prob_and_ids_may_be_a_list():
    h, W, y, _, _ = case(2, N=4, V=6)
    want = np.log(np.exp(h @ W.T)[np.arange(4), y] / np.exp(h @ W.T).sum(axis=1))
    one = chunked_logp(h, W, y, mask=np.array([0.0, 0.0, 1.0, 0.0]))
    assert np.array_equal(one == 0, [True, True, False, True]) and abs(one[2] - want[2]) < 1e-12
    assert np.array_equal(chunked_logp(h, W, list(y)), chunked_logp(h, W, y))


def test_the_buffer_bound_counts_the_real_rows_only():
    W = np.zeros((2**21, 1))  # a (1025, V) buffer would pass 2**31 entries; the one real row's does not
    mask = np.zeros(1025)
    mask[3] = 1.0
    logp = chunked_logp(np.ones((1025, 1)), W, np.zeros(1025, int), mask=mask, chunk=2048)
    assert logp[3] == -np.log(2.0**21) and (np.delete(logp, 3) == 0).all()
    with pytest.raises(ValueError) as err:
        chunked_logp(np.ones((1025, 1)), W, np.zeros(1025, int), chunk=2048)
    assert str(err.value) == f"chunk: expected a (chunk, V) buffer of at most 2**31 entries, got {1025 * 2**21}"


def test_what_loss_fn_returns_is_named_exactly():
    h, W, y = np.ones((3, 2)), np.ones((3, 2)), np.array([0, 1, 2])
    real = "loss_fn: expected a real loss and a real (R,) dloss_dlogp, got"
    for fn, exc, msg in [
        (lambda lp, rows: [0.0, lp], TypeError, "loss_fn: expected it to return (loss, dloss_dlogp), got list"),
        (lambda lp, rows: ("a", lp), TypeError, f"{real} str and ndarray"),
        (lambda lp, rows: (0.0, "abc"), TypeError, f"{real} float and str"),
        (lambda lp, rows: (0.0, b"abc"), TypeError, f"{real} float and bytes"),
        (lambda lp, rows: (0.0, [[1.0], [1.0, 2.0], [3.0]]), TypeError, f"{real} float and list"),  # ragged
        (
            lambda lp, rows: (0.0, np.array([1.0, np.nan, np.inf])),
            ValueError,
            "loss_fn: expected a finite loss and dloss_dlogp, got loss 0.0 and 2 non-finite gradient entries",
        ),
    ]:
        with pytest.raises(exc) as err:
            chunked_loss_grad(h, W, y, fn)
        assert str(err.value) == msg


def test_an_overflow_names_the_result_and_the_ranges_of_h_and_w():
    h, W, y = np.ones((3, 2)), np.ones((3, 2)), np.array([0, 1, 2])
    with pytest.raises(ValueError) as err:
        chunked_loss_grad(h, W, y, lambda lp, rows: (1e308, lp), chunk=1)  # three chunks: the loss 3e308
    assert str(err.value) == (
        "chunked_loss_grad: expected a finite loss, got inf (beyond float64) from h in [1, 1], W in [1, 1]"
    )
    W = np.array([[1e-100], [2e-100], [3e-100]]) * np.ones((1, 2))
    with pytest.raises(ValueError) as err:
        chunked_loss_grad(np.full((3, 2), 1e100), W, y, lambda lp, rows: (0.0, np.full(lp.shape, 1e250)), chunk=1)
    assert str(err.value) == (
        "chunked_loss_grad: expected a finite dW, got NaN (beyond float64) from h in [1e+100, 1e+100], "
        "W in [1e-100, 3e-100]"
    )


def test_an_integer_gradient_is_read_as_float64_and_no_real_token_keeps_the_dtype():
    h, W, y, _, _ = case(3, N=6, V=4)
    ints = chunked_loss_grad(h, W, y, lambda lp, rows: (0, [1, -2, 3][: rows.size]), chunk=3)
    floats = chunked_loss_grad(h, W, y, lambda lp, rows: (0.0, np.array([1.0, -2.0, 3.0])[: rows.size]), chunk=3)
    assert all(np.array_equal(a, b) for a, b in zip(ints[1:], floats[1:])) and ints[0] == 0.0
    for dtype in (np.float16, np.longdouble):  # read as float64 (the row kernel takes neither)
        other = chunked_loss_grad(
            h, W, y, lambda lp, rows: (0.0, np.array([1, -2, 3][: rows.size], dtype)), chunk=3
        )
        assert all(np.array_equal(a, b) for a, b in zip(other[1:], floats[1:]))
    h32, W32 = h.astype(np.float32), W.astype(np.float32)
    out = chunked_loss_grad(h32, W32, y, lambda lp, rows: (0.0, lp), mask=np.zeros(6))
    assert out[2].dtype == out[3].dtype == np.float32 and out[3].shape == (4, 5) and not out[3].any()
