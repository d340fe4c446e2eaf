"""Sampler corrections, masks and normalizers of offpolicy.py, and the exact measurement.

Gradients against central finite differences in float64 (tests/gradcheck.py; atol 1e-8 on O(1)
losses: truncation ~1e-12, rounding ~1e-10 |f|). Weights and masks against the frameworks'
formulas as their sources state them, re-derived below in NumPy:
TRL trl/trainer/grpo_trainer.py @ f2cd57710a (2026-07-24): vllm_importance_sampling_mode
(token/sequence, truncate/mask), get_off_policy_mask, the loss normalizers of _compute_loss;
verl verl/trainer/ppo/rollout_corr_helper.py @ 1dda039b9c (2026-08-22):
compute_rollout_correction_weights (TIS, IcePop), compute_rollout_rejection_mask.
The exact claims (unbiased sequence IS, biased token IS, truncation trading bias for variance,
the identity at mu = pi_old) are checked by enumerating every response of the example's task."""

import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from gradcheck import fd_grad
from minirl_lm.core import ops
from minirl_lm.pg import offpolicy
from minirl_lm.pg.clip import clipped_surrogate
from minirl_lm.pg.offpolicy import (
    ACCUM,
    REJECTION,
    accumulation_weights,
    corrected_pg_loss,
    is_weights,
    minibatch_rows,
    off_policy_sequence_mask,
    rejection_mask,
)
from minirl_lm.pg.reinforce import AGGS, reinforce_loss, token_weights
from quiet import names, silent

ROOT = Path(__file__).resolve().parents[2]
ATOL = 1e-8


def batch(rng, B=12, T=5, spread=0.5):
    lengths = rng.integers(1, T + 1, size=B)
    lengths[0], lengths[-1] = 0, T
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(float)
    logp_old = -rng.uniform(0.1, 3.0, size=(B, T)) * mask
    logp_mu = (logp_old + rng.uniform(-spread, spread, size=(B, T))) * mask
    return logp_old, logp_mu, rng.normal(size=B), mask


# ---- the weights against TRL and verl -----------------------------------------------------------
def trl_is(logp_old, logp_mu, mask, mode, clip_min, clip_max):
    """TRL's vllm_importance_sampling_ratio, as _generate_and_score_completions states it."""
    diff = (logp_old - logp_mu) * mask
    if mode.startswith("sequence"):
        diff = diff.sum(-1, keepdims=True)
    r = np.exp(diff)
    if mode.endswith("truncate"):
        return np.clip(r, clip_min, clip_max)
    lo = -np.inf if clip_min is None else clip_min
    hi = np.inf if clip_max is None else clip_max
    return np.where((r < lo) | (r > hi), 0.0, r)


def verl_is(log_ratio, mask, level, threshold):
    """compute_rollout_correction_weights: TIS for a float threshold, IcePop for "lo_hi"."""
    if level == "token":
        raw = np.exp(np.clip(log_ratio, -20, 20))
    else:
        raw = np.broadcast_to(np.exp(np.clip((log_ratio * mask).sum(-1, keepdims=True), -20, 20)), log_ratio.shape)
    raw = raw * mask
    if isinstance(threshold, str):
        lo, hi = (float(x) for x in threshold.split("_"))
        return np.where((raw >= lo) & (raw <= hi), raw, 0.0)
    return np.minimum(raw, threshold)


@pytest.mark.parametrize("level", ["token", "sequence"])
def test_is_weights_are_trls_vllm_importance_sampling(level):
    logp_old, logp_mu, _, mask = batch(np.random.default_rng(0), spread=1.3)
    for mode, lo, hi in (("truncate", None, 3.0), ("truncate", 0.5, 2.0), ("mask", None, 3.0), ("mask", 0.5, 2.0)):
        ours = is_weights(logp_old, logp_mu, mask, level=level, mode=mode, c_max=hi, c_min=lo)
        theirs = trl_is(logp_old, logp_mu, mask, f"{level}_{mode}", lo, hi) * mask
        np.testing.assert_allclose(ours, theirs, rtol=1e-14, atol=0)
        assert (ours[mask > 0] == 0).any() == (mode == "mask")


@pytest.mark.parametrize("level", ["token", "sequence"])
def test_is_weights_are_verls_rollout_correction(level):
    logp_old, logp_mu, _, mask = batch(np.random.default_rng(1))
    lr = logp_old - logp_mu  # verl: old_log_prob - rollout
    np.testing.assert_allclose(
        is_weights(logp_old, logp_mu, mask, level=level, c_max=2.0),
        verl_is(lr, mask, level, 2.0),
        rtol=1e-14,
        atol=0,
    )
    np.testing.assert_allclose(
        is_weights(logp_old, logp_mu, mask, level=level, mode="mask", c_max=2.0, c_min=0.5),
        verl_is(lr, mask, level, "0.5_2.0"),
        rtol=1e-14,
        atol=0,
    )


def test_plain_weights_are_the_ratios():
    logp_old, logp_mu, _, mask = batch(np.random.default_rng(2))
    r = np.exp(logp_old - logp_mu) * mask
    np.testing.assert_allclose(is_weights(logp_old, logp_mu, mask, level="token"), r, rtol=1e-15)
    W = np.prod(np.where(mask > 0, r, 1.0), axis=1, keepdims=True) * mask
    np.testing.assert_allclose(is_weights(logp_old, logp_mu, mask), W, rtol=1e-13)


def trl_opsm(adv, logp, logp_mu, mask, threshold):
    kl = logp_mu - logp
    avg = (kl * mask).sum(1, keepdims=True) / np.maximum(mask.sum(1, keepdims=True), 1.0)
    return ((adv[:, None] >= 0) | (avg <= threshold)).astype(float)  # (B, 1)


def test_off_policy_sequence_mask_is_trls():
    logp, logp_mu, adv, mask = batch(np.random.default_rng(3), spread=0.6)
    ours = off_policy_sequence_mask(logp, logp_mu, adv, mask, 0.1)
    theirs = trl_opsm(adv, logp, logp_mu, mask, 0.1) * mask
    assert np.array_equal(ours, theirs)
    assert 0 < ours[mask.sum(1) > 0, 0].sum() < (mask.sum(1) > 0).sum()  # some dropped, not all


def verl_rs(log_ratio, mask, option, threshold):
    """compute_rollout_rejection_mask for one option, as verl states it."""
    lr = np.clip(log_ratio, -20, 20)
    k = {"k1": -lr, "k2": 0.5 * lr**2, "k3": np.exp(lr) - 1.0 - lr}[option[-2:]]
    if option.endswith("k1"):
        spec = str(threshold)
        lo, hi = spec.split("_") if "_" in spec else (str(1.0 / float(spec)), spec)
        lo, hi = np.log(float(lo)), np.log(float(hi))
    agg = option[:-3]
    n = np.maximum(mask.sum(-1, keepdims=True), 1)
    if agg == "seq_sum":
        k = np.broadcast_to((k * mask).sum(-1, keepdims=True), mask.shape)
    elif agg == "seq_mean":
        k = np.broadcast_to((k * mask).sum(-1, keepdims=True) / n, mask.shape)
    elif agg == "seq_max":
        mx = np.where(mask > 0, k, -np.inf).max(-1, keepdims=True)
        k = np.broadcast_to(np.where(mx == -np.inf, 0.0, mx), mask.shape)
    keep = (k >= lo) & (k <= hi) if option.endswith("k1") else k <= float(threshold)
    return keep * mask


@pytest.mark.parametrize("option", REJECTION)
def test_rejection_mask_is_verls(option):
    logp_old, logp_mu, _, mask = batch(np.random.default_rng(4), B=40, spread=0.3)
    thr = {"k1": 1.15, "k2": 0.01, "k3": 0.01}[option[-2:]]
    if option.startswith("seq_sum"):
        thr = {"k1": 1.4, "k2": 0.03, "k3": 0.03}[option[-2:]]
    ours = rejection_mask(logp_old, logp_mu, mask, option=option, hi=thr)
    theirs = verl_rs(logp_old - logp_mu, mask, option, thr)
    assert np.array_equal(ours, theirs)
    real = mask.sum(1) > 0
    assert 0 < ours[real, 0].sum() < real.sum()  # the bound is exercised
    if option.endswith("k1"):  # explicit "lo_hi" bounds
        ours = rejection_mask(logp_old, logp_mu, mask, option=option, hi=1.2, lo=0.9)
        assert np.array_equal(ours, verl_rs(logp_old - logp_mu, mask, option, "0.9_1.2"))


# ---- mu = pi_old: every correction is the identity, bit for bit ---------------------------------
@pytest.mark.parametrize("agg", AGGS)
def test_every_correction_is_the_identity_at_mu_equal_pi_old(agg):
    logp_old, _, adv, mask = batch(np.random.default_rng(5))
    logp = logp_old.copy()  # theta = theta_old, mu = pi_old
    ref_loss, ref_grad = reinforce_loss(logp, adv, mask, agg)
    ref_clip = clipped_surrogate(logp, logp_old, adv[:, None] * mask, mask, agg=agg)
    weights = [
        is_weights(logp_old, logp_old, mask, level=lv, mode=md, c_max=c, c_min=lo)
        for lv in ("token", "sequence")
        for md in ("truncate", "mask")
        for c, lo in ((None, None), (2.0, None), (2.0, 0.5), (1.0, 1.0))
    ]
    weights.append(off_policy_sequence_mask(logp, logp_old, adv, mask, 0.0))
    weights += [
        rejection_mask(logp_old, logp_old, mask, option=o, hi=1.0 if o.endswith("k1") else 1e-300)
        for o in REJECTION
    ]
    for w in weights:
        assert np.array_equal(w, mask)  # exactly 1.0 on real tokens
        loss, grad = corrected_pg_loss(logp, adv, mask, w, agg)
        assert loss == ref_loss and np.array_equal(grad, ref_grad)
        c_loss, c_grad = clipped_surrogate(logp, logp_old, w * adv[:, None], mask, agg=agg)
        assert c_loss == ref_clip[0] and np.array_equal(c_grad, ref_clip[1])


def test_weights_enter_the_clipped_surrogate_as_a_factor():
    logp_old, logp_mu, adv, mask = batch(np.random.default_rng(6))
    rng = np.random.default_rng(7)
    logp = (logp_old + rng.uniform(-0.4, 0.4, size=logp_old.shape)) * mask
    w = is_weights(logp_old, logp_mu, mask, level="token", c_max=2.0)
    A = adv[:, None] * mask
    ours, d = clipped_surrogate(logp, logp_old, w * A, mask, agg="seq_sum")
    # verl/TRL: per-token PPO loss times the weight
    rho = np.exp(logp - logp_old)
    per_token = -np.minimum(rho * A, np.clip(rho, 0.8, 1.2) * A) * w
    assert np.isclose(ours, (per_token * mask).sum() / len(mask), rtol=1e-13)


@pytest.mark.parametrize("agg", AGGS)
def test_corrected_pg_gradient_matches_finite_differences(agg):
    logp_old, logp_mu, adv, mask = batch(np.random.default_rng(8))
    w = is_weights(logp_old, logp_mu, mask, level="sequence", c_max=1.5)
    logp = logp_old + 0.1
    f = lambda x: corrected_pg_loss(x, adv, mask, w, agg)[0]
    _, d = corrected_pg_loss(logp, adv, mask, w, agg)
    np.testing.assert_allclose(d, fd_grad(f, logp), atol=ATOL, rtol=0)


def test_aggregation_weights_and_shared_pieces_are_core_ops():
    assert offpolicy.agg_weights is ops.agg_weights  # eq. (pg_agg), once
    assert offpolicy.log_ratio is ops.log_ratio


# ---- bad input ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kw, msg",
    [
        ({"c_max": 0.9}, r"^c_max: expected a number >= 1"),
        ({"c_min": 1.5}, r"^c_min: expected a number >= 0 and <= 1"),
        ({"c_min": 0.0, "mode": "mask"}, r"^c_min: expected a number > 0"),
        ({"level": "tok"}, r"^level: expected one of"),
        ({"mode": "clip"}, r"^mode: expected one of"),
    ],
)
def test_is_weights_bad_arguments(kw, msg):
    logp_old, logp_mu, _, mask = batch(np.random.default_rng(10))
    with pytest.raises(ValueError, match=msg):
        is_weights(logp_old, logp_mu, mask, **kw)


def test_untruncated_overflow_raises_truncated_does_not():
    logp_old = np.zeros((1, 3))
    logp_mu = np.full((1, 3), -300.0)  # W = e^900
    mask = np.ones((1, 3))
    with pytest.raises(ValueError, match="^is_weights: expected a finite weight, got inf"):
        is_weights(logp_old, logp_mu, mask)
    assert np.array_equal(is_weights(logp_old, logp_mu, mask, c_max=2.0), np.full((1, 3), 2.0))
    assert np.array_equal(is_weights(logp_old, logp_mu, mask, mode="mask", c_max=2.0), np.zeros((1, 3)))


def test_shapes_and_values_are_checked():
    logp_old, logp_mu, adv, mask = batch(np.random.default_rng(11))
    with pytest.raises(ValueError, match=r"^logp_mu: expected shape \(12, 5\), got \(12, 4\)"):
        is_weights(logp_old, logp_mu[:, :-1], mask)
    with pytest.raises(ValueError, match=r"^adv: expected shape \(12,\), got \(11,\)$"):
        off_policy_sequence_mask(logp_old, logp_mu, adv[:-1], mask, 0.1)
    with pytest.raises(ValueError, match="^delta: expected a number >= 0"):
        off_policy_sequence_mask(logp_old, logp_mu, adv, mask, -0.1)
    with pytest.raises(ValueError, match="^weights: expected entries >= 0"):
        corrected_pg_loss(logp_old, adv, mask, -mask)
    with pytest.raises(ValueError, match="^weights: expected shape"):
        corrected_pg_loss(logp_old, adv, mask, mask[:, :-1])
    with pytest.raises(ValueError, match="^option: expected one of"):
        rejection_mask(logp_old, logp_mu, mask, option="seq_max_k1")
    with pytest.raises(ValueError, match="^hi: expected a number >= 1"):
        rejection_mask(logp_old, logp_mu, mask, option="seq_mean_k1", hi=0.5)
    with pytest.raises(ValueError, match="^lo: expected None"):
        rejection_mask(logp_old, logp_mu, mask, option="token_k3", hi=0.5, lo=0.1)


# ---- mini-batches and normalizers ---------------------------------------------------------------
def test_minibatch_rows_partition_and_draw_once():
    parts = minibatch_rows(10, 3)
    assert [p.tolist() for p in parts] == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    rng, twin = np.random.default_rng(0), np.random.default_rng(0)
    parts = minibatch_rows(10, 3, rng)
    assert np.array_equal(np.concatenate(parts), twin.permutation(10))
    assert rng.random() == twin.random()  # exactly one draw
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="^M: expected an integer <= 10"):
        minibatch_rows(10, 11, rng)
    assert rng.random() == np.random.default_rng(0).random()  # a refused call draws nothing


def trl_micro_loss(logp, adv, mask, mode, G, N, L):
    """TRL's per-micro-batch loss (per_token_loss = -A logp), one process."""
    per_token = -adv[:, None] * logp
    if mode == "grpo":
        return ((per_token * mask).sum(-1) / np.maximum(mask.sum(-1), 1.0)).mean() / G
    if mode == "bnpo":
        return (per_token * mask).sum() / max(mask.sum(), 1.0) / G
    if mode == "dr_grpo":
        return (per_token * mask).sum() / (len(mask) * L) / G
    if mode == "dapo":
        return (per_token * mask).sum() / N  # num_items_in_batch, no / G
    return (per_token * mask).sum() / max(mask.sum(), 1.0)  # "sum": local mean, / G forgotten


@pytest.mark.parametrize("mode", ACCUM)
def test_accumulation_weights_are_the_summed_micro_batch_gradients(mode):
    _, logp, adv, mask = batch(np.random.default_rng(12), B=12, T=5)
    G, N, L = 3, mask.sum(), 5
    blocks = np.split(np.arange(12), G)
    total = lambda x: sum(trl_micro_loss(x[b], adv[b], mask[b], mode, G, N, L) for b in blocks)
    g = fd_grad(total, logp)  # d total / d logp = -w A
    w = accumulation_weights(mask, G, mode, max_len=L)
    np.testing.assert_allclose(g, -w * adv[:, None], atol=ATOL, rtol=0)


def test_only_dapo_matches_one_big_batch():
    mask = batch(np.random.default_rng(13), B=12)[3]
    big = token_weights(mask, "token_mean")
    assert np.array_equal(accumulation_weights(mask, 4, "dapo"), big)
    bnpo = accumulation_weights(mask, 4, "bnpo")
    assert not np.allclose(bnpo, big)
    assert accumulation_weights(mask, 4, "sum").sum() == pytest.approx(4.0, rel=1e-14)
    assert accumulation_weights(mask, 1, "bnpo").sum() == pytest.approx(1.0, rel=1e-14)
    with pytest.raises(ValueError, match="^G: expected a divisor"):
        accumulation_weights(mask, 5)


# ---- the exact measurement (enumeration of every response) --------------------------------------
@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("off_policy_example", ROOT / "examples" / "off_policy.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def measured(example):
    args = example.main.__globals__["argparse"].Namespace(
        levels=[0.0, 0.02, 0.05, 0.1, 0.2], c=1.5, delta=0.1, geo=1.1
    )
    mdp = example.make_task()
    pi_old = example.TabularPolicy(np.random.default_rng(0).normal(size=(mdp.S, mdp.V)))
    ex = example.Exact(mdp, pi_old)
    rows = example.measure(ex, args, [ex.tau_for(level) for level in args.levels])
    return ex, rows, args


def test_grad_J_is_the_gradient_of_J(example, measured):
    ex = measured[0]
    theta0 = ex.pi_old.theta.copy()

    def J(theta):
        pol = example.TabularPolicy(theta.reshape(theta0.shape))
        _, seq = pol.logp(ex.ro.states, ex.ro.tokens, ex.ro.mask)
        return float((np.exp(seq) / ex.mdp.N * ex.R).sum())

    np.testing.assert_allclose(ex.grad_J, fd_grad(J, theta0.ravel()), atol=1e-9, rtol=0)


def test_sequence_is_is_unbiased_at_every_mismatch(measured):
    _, rows, args = measured
    assert len(rows["seq_is"]) == len(args.levels) >= 4
    for _kl, bias, cos, _ in rows["seq_is"]:
        assert bias <= 1e-12 and cos >= 1 - 1e-12
    assert rows["seq_is"][-1][0] == pytest.approx(0.2, abs=1e-9)  # the KL levels were hit


def test_token_is_is_biased(measured):
    _, rows, _ = measured
    assert rows["tok_is"][0][1] <= 1e-12  # mu = pi_old
    assert all(bias > 1e-2 for _, bias, _, _ in rows["tok_is"][1:])


def test_truncation_trades_bias_for_variance(measured):
    _, rows, _ = measured
    kl, bias_t, _, var_t = rows["seq_tis"][-1]
    _, bias_u, _, var_u = rows["seq_is"][-1]
    assert var_t < var_u and bias_t > 1e-2 and bias_u <= 1e-12


def test_at_mu_equal_pi_old_every_estimator_is_the_uncorrected_one(example, measured):
    ex, _, args = measured
    logp_mu, _ = ex.sampler(1.0)
    assert np.array_equal(logp_mu, ex.logp_old)
    est = example.estimators(ex, logp_mu, args)
    # GSPO and GMPO weigh a token by 1/|y|; a row at its framework's shipped aggregation (SAPO's
    # per-sequence token mean, ...) weighs it by that aggregation: the rest is the uncorrected loss
    same = [n for n in est if n not in ("gspo_bypass", "gmpo") and example.agg_of(n) == "seq_sum"]
    assert len(same) >= 5 and "none" in same
    for name in same:
        assert np.array_equal(est[name], est["none"]), name


# ---- the program ----------------------------------------------------------------------------------
def run(*args):
    import example_runs  # each example command once per session, forked warm (tests/conftest.py)

    return example_runs.run(
        [sys.executable, str(ROOT / "examples" / "off_policy.py"), *args], cwd=ROOT, timeout=300
    )


HAVE_MPL = importlib.util.find_spec("matplotlib") is not None  # the docs extra installs it
FULL = ["--plot", "{out}/f.svg"] if HAVE_MPL else []
# started when the session starts (tests/conftest.py); the test below then reads its result
EXAMPLE_RUNS = [[sys.executable, str(ROOT / "examples" / "off_policy.py"), *FULL]]


def test_example_prints_the_table_and_the_claims():
    out = run(*FULL)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    line = re.compile(
        r"^estimator (\S+)\s+kl (\d\.\d{3}): bias (\S+), cosine (\S+), "
        r"variance (\S+)$"
    )
    rows = [line.match(s) for s in text.splitlines() if s.startswith("estimator ")]
    assert rows and all(rows)
    assert all(
        len(s.split(" kl ")[0]) == len("estimator ") + 12 for s in text.splitlines() if s.startswith("estimator ")
    )
    kls = [m.group(2) for m in rows if m.group(1) == "seq_is"]
    assert len(kls) >= 4 and kls[0] == "0.000"
    assert all(float(m.group(3)) <= 1e-12 for m in rows if m.group(1) == "seq_is")
    fr = [float(x) for x in re.findall(r"minibatch step \d+: clip fraction (\S+),", text)]
    assert len(fr) == 4 and fr[0] == 0.0 and all(f > 0 for f in fr[1:])
    total = {l.split()[0]: float(l.split()[4]) for l in text.splitlines() if l.split() and l.split()[0] in ACCUM}
    assert total["dapo"] == total["grpo"] == total["dr_grpo"] == 1.0 and total["sum"] == 4.0  # own big batch
    if HAVE_MPL:
        assert out.text("f.svg").lstrip().startswith("<?xml")


@pytest.mark.parametrize(
    "bad",
    [
        ["--levels", "0.1,0.2"],
        ["--levels", "0,x"],
        ["--c", "1"],
        ["--minibatches", "5"],
        ["--seed", "-1"],
        ["--levels", "0,5"],
        ["--lr", "nan"],
    ],
)
def test_bad_arguments_exit_2_without_traceback(bad):
    out = run(*bad)
    assert out.returncode == 2 and "Traceback" not in out.stderr and "error:" in out.stderr


# ---- overflow named at its root, no warning ------------------------------------------------


def test_rejection_mask_beyond_float64_drops_the_row_silently():
    m = np.ones((1, 2))
    # logp_old = 800, token_k3: r - 1 - log r = expm1(800) - 800 overflows (a RuntimeWarning escaped)
    assert silent(
        lambda: rejection_mask(np.full((1, 2), 800.0), np.zeros((1, 2)), m, option="token_k3")
    ).tolist() == [[0.0, 0.0]]
    # the log-ratio itself overflows (inf, and inf - inf = NaN in a sequence statistic): dropped
    a, b = np.array([[1e308, -1e308]]), np.array([[-1e308, 1e308]])
    for option in REJECTION:
        assert silent(lambda: rejection_mask(a, b, m, option=option)).tolist() == [[0.0, 0.0]], option


def test_weights_and_masks_beyond_float64_are_named_and_silent():
    m = np.ones((1, 2))
    a, b = np.array([[1e308, -1e308]]), np.array([[-1e308, 1e308]])
    for level in ("token", "sequence"):
        names("is_weights", "logp_mu in [-1e+308, 1e+308]", lambda: is_weights(a, b, m, level=level))
    # an infinite or NaN mean log-ratio is not <= delta: the A < 0 row is dropped, silently
    assert silent(lambda: off_policy_sequence_mask(a, b, [-1.0], m, 0.1)).tolist() == [[0.0, 0.0]]
    assert silent(lambda: off_policy_sequence_mask(a, b, [1.0], m, 0.1)).tolist() == [[1.0, 1.0]]
    names(
        "corrected_pg_loss",
        "weights in [1e+308, 1e+308]",
        lambda: corrected_pg_loss(np.full((1, 2), -1e308), [1.0], m, np.full((1, 2), 1e308), agg="seq_sum"),
    )


def test_minibatch_rows_rejects_a_batch_beyond_2_to_20():
    # np.arange(2**63) is silently empty: the split was [array([])]; 2**31 rows exhausted memory
    names("B", "expected an integer <= 1048576", lambda: minibatch_rows(2**63, 1))
    names("B", "expected an integer <= 1048576", lambda: minibatch_rows(2**31, 1))
    assert len(minibatch_rows(2**20, 2)) == 2


# ---- public defaults, pinned -------------------------------------------------------------------


def test_offpolicy_defaults_are_the_documented_values():
    rng = np.random.default_rng(31)
    B, T = 8, 5
    mask = (np.arange(T)[None, :] < rng.integers(1, T + 1, (B, 1))).astype(float)
    logp_old = -rng.uniform(0.5, 2.0, (B, T))
    logp_mu = logp_old + rng.uniform(-1.0, 1.0, (B, T))
    w = is_weights(logp_old, logp_mu, mask)
    assert np.array_equal(
        w, is_weights(logp_old, logp_mu, mask, level="sequence", mode="truncate", c_max=None, c_min=None)
    )
    for kw in (dict(level="token"), dict(mode="mask", c_max=1.5), dict(c_max=1.5)):
        assert not np.array_equal(w, is_weights(logp_old, logp_mu, mask, **kw)), kw
    keep = rejection_mask(logp_old, logp_mu, mask)
    assert np.array_equal(keep, rejection_mask(logp_old, logp_mu, mask, option="seq_mean_k1", hi=2.0, lo=0.5))
    for kw in (dict(option="token_k1"), dict(hi=1.2)):
        assert not np.array_equal(keep, rejection_mask(logp_old, logp_mu, mask, **kw)), kw
    adv = rng.normal(size=B)
    loss = corrected_pg_loss(logp_old, adv, mask, w)
    assert loss[0] == corrected_pg_loss(logp_old, adv, mask, w, "token_mean", None)[0]
    assert loss[0] != corrected_pg_loss(logp_old, adv, mask, w, "seq_sum")[0]
    acc = accumulation_weights(mask, 2)
    assert np.array_equal(acc, accumulation_weights(mask, 2, "dapo", None))
    assert np.array_equal(acc, mask / mask.sum())  # dapo: the global token mean
    assert np.array_equal(minibatch_rows(5, 2)[0], [0, 1, 2])  # rng None: in order


@pytest.mark.parametrize("mode", ACCUM)
def test_accumulation_weights_of_rows_with_holes_are_their_compacted_rows(mode):
    # the docstring says holes are allowed: a row's weights are its compacted row's, scattered back
    holes = np.array([[1.0, 0.0, 1.0, 1.0], [0.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 1.0]])
    packed = -np.sort(-holes, axis=1)  # the trained tokens moved left, in order
    w_h, w_c = accumulation_weights(holes, 2, mode), accumulation_weights(packed, 2, mode)
    for b in range(4):
        assert np.array_equal(w_h[b][holes[b] > 0], w_c[b][packed[b] > 0])
    assert (w_h[holes == 0] == 0).all()
    names("max_len", "longest response (4 trained tokens)", lambda: accumulation_weights(holes, 2, max_len=3))


def test_minibatch_rows_messages_edges_and_dtype():
    with pytest.raises(TypeError) as e:
        minibatch_rows(4, 2, rng=3)
    assert str(e.value) == "rng: expected a numpy.random.Generator or None, got int"
    rows = minibatch_rows(4, 4)  # M = B: one row each
    assert [r.tolist() for r in rows] == [[0], [1], [2], [3]] and all(r.dtype == np.int64 for r in rows)


def test_is_weights_mask_floor_alone_and_its_message():
    # mode="mask" with a floor and no cap: r = pi_old / mu = 1 and e^-1, the floor 0.5 drops the second
    w = is_weights(
        np.zeros((1, 2)), np.array([[0.0, 1.0]]), np.ones((1, 2)), level="token", mode="mask", c_min=0.5
    )
    assert w.tolist() == [[1.0, 0.0]]
    with pytest.raises(ValueError) as e:
        is_weights(np.zeros((1, 2)), np.zeros((1, 2)), np.ones((1, 2)), mode="mask", c_min=0.0)
    assert str(e.value) == "c_min: expected a number > 0 and <= 1 for mode='mask' (None: no floor), got 0.0"


def test_off_policy_sequence_mask_reads_the_mean_log_ratio_and_keeps_every_nonnegative_advantage():
    logp = np.full((4, 2), -1.0)
    mask = np.array([[1.0, 1.0], [1.0, 0.0], [1.0, 1.0], [1.0, 1.0]])
    # mean log mu/pi: 0.3 (two tokens, sum 0.6), 0.6 (one token), 0.5, 0.5; delta = 0.4
    logp_mu = logp + np.array([[0.3, 0.3], [0.6, 0.0], [0.5, 0.5], [0.5, 0.5]])
    keep = off_policy_sequence_mask(logp, logp_mu, np.array([-1.0, -1.0, 0.0, 0.5]), mask, 0.4)
    assert keep.tolist() == [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]


def test_rejection_bound_of_k2_is_inclusive():
    # log r = -1 on the token: k2 = 0.5 exactly, at hi = 0.5: kept
    assert rejection_mask(
        np.zeros((1, 1)), -np.ones((1, 1)), np.ones((1, 1)), option="token_k2", hi=0.5
    ).tolist() == [[1.0]]


def test_corrected_pg_loss_and_accumulation_read_max_len_and_their_floors():
    loss, g = corrected_pg_loss([[-1.0, -2.0, 0.0]], [2.0], [[1.0, 1.0, 0.0]], np.ones((1, 3)), "constant", 5)
    assert loss == pytest.approx(1.2, rel=1e-15) and np.array_equal(g, [[-0.4, -0.4, 0.0]])  # w = 1/5
    m = np.array([[1.0, 0.0], [1.0, 1.0]])  # micro-batches of 1 and 2 tokens
    assert accumulation_weights(m, 2, "dr_grpo", 4).tolist() == [[0.125, 0.0], [0.125, 0.125]]  # 1 / (1 * 4) / 2
    assert accumulation_weights(m, 2, "bnpo").tolist() == [[0.5, 0.0], [0.25, 0.25]]
    one = np.array([[1.0, 0.0], [0.0, 0.0]])  # one token in the batch: dapo's weight 1 / 1
    assert accumulation_weights(one, 2, "dapo").tolist() == [[1.0, 0.0], [0.0, 0.0]]
