"""The oracle: seeded cases from a reference's signature, outcomes compared case by case."""

import numpy as np
import pytest

from minirl_lm import oracle
from minirl_lm.core.ops import AGGS
from minirl_lm.pg.clip import clipped_surrogate
from minirl_lm.pg.kl import kl_per_token
from minirl_lm.pg.seqclip import dual_clip_surrogate
from quiet import raises


def test_cases_run_every_option_and_are_seeded():
    a, b = oracle.cases(clipped_surrogate, seed=3), oracle.cases(clipped_surrogate, seed=3)
    assert [n for n, _ in a] == [n for n, _ in b]
    assert all(np.array_equal(x["logp"], y["logp"]) for (_, x), (_, y) in zip(a, b))
    assert {kw["agg"] for _, kw in a} == set(AGGS)
    assert {kw["estimator"] for _, kw in oracle.cases(kl_per_token)} == {"k1", "k2", "k3"}
    assert not np.array_equal(a[0][1]["logp"], oracle.cases(clipped_surrogate, seed=4)[0][1]["logp"])


def test_cases_put_garbage_at_the_padding_and_ratios_beyond_the_clip():
    for _, kw in oracle.cases(clipped_surrogate):
        pad = kw["mask"] == 0
        assert np.abs(kw["logp"][pad]).max() > 5.0  # garbage, not log-probs
        rho = np.exp(kw["logp"] - kw["logp_old"])[~pad]
        assert rho.max() > 3.0 and rho.min() < 0.5  # past the dual-clip c = 3 and below 1 - eps
    masks = [kw["mask"] for _, kw in oracle.cases(clipped_surrogate)]
    assert any((m.sum(axis=1) == 0).any() for m in masks)  # an empty row
    assert any((np.diff(m, axis=1) > 0).any() for m in masks)  # a hole: a 0 then a 1


def test_the_reference_against_itself_agrees_everywhere():
    rows = oracle.compare(dual_clip_surrogate, dual_clip_surrogate)
    assert rows and all(r.rel == 0.0 for r in rows)
    assert {r.outcome for r in rows} >= {"returns", "both raise"}  # c = 0.9 is refused by both


def test_a_small_error_is_flagged_and_measured():
    def off(**kw):
        loss, d = clipped_surrogate(**kw)
        return loss, d * (1 + 1e-4)

    rows = oracle.compare(off, clipped_surrogate)
    ok = [r for r in rows if r.outcome == "returns"]
    assert ok and all(1e-5 < r.rel < 2e-4 for r in ok)
    assert all(r.flagged(1e-6) for r in ok) and not any(r.flagged(1e-3) for r in ok)


def test_accepting_what_the_reference_refuses_is_flagged():
    rows = oracle.compare(lambda **kw: (0.0, np.zeros((6, 5))), dual_clip_surrogate)
    refused = [r for r in rows if r.outcome == "accepts what the reference refuses"]
    assert refused and all(r.rel == np.inf for r in refused)


def test_raising_where_the_reference_returns_is_flagged():
    def boom(**kw):
        raise RuntimeError("not implemented")

    rows = oracle.compare(boom, kl_per_token)
    assert any(r.outcome == "raises RuntimeError" and r.flagged(1.0) for r in rows)


def test_each_side_sees_fresh_inputs():
    def writes(**kw):
        kw["logp"][:] = 0.0
        return clipped_surrogate(**kw)

    def reads(**kw):
        return clipped_surrogate(**kw)

    assert all(r.rel == 0.0 for r in oracle.compare(reads, clipped_surrogate))
    assert any(r.rel > 0 for r in oracle.compare(writes, clipped_surrogate))


def test_report_lists_every_case_and_ends_with_the_count():
    rows = oracle.compare(clipped_surrogate, clipped_surrogate)
    text = oracle.report(rows).splitlines()
    assert len(text) == len(rows) + 1 and text[-1] == f"flagged: 0 of {len(rows)} cases (max rel err 0.00e+00)"
    assert oracle.Row("c", np.inf, "x").flagged(1e-6) and not oracle.Row("c", 0.0, "x").flagged(0.0)


@pytest.mark.parametrize(
    "call, arg, fragment",
    [
        (lambda: oracle.cases("clip"), "reference", "expected a function of minirl_lm, got str"),
        (lambda: oracle.cases(clipped_surrogate, seed=-1), "seed", "expected an integer >= 0, got -1"),
        (lambda: oracle.cases(clipped_surrogate, seed=True), "seed", "expected an integer >= 0"),
        (lambda: oracle.cases(lambda unknown: 0), "reference", "no input generator for its argument 'unknown'"),
        (lambda: oracle.compare(None, clipped_surrogate), "fn", "expected a function"),
        (lambda: oracle.report([], rtol=float("nan")), "rtol", "expected a float >= 0"),
    ],
)
def test_bad_arguments_are_named(call, arg, fragment):
    msg = raises((TypeError, ValueError), call)
    assert msg.startswith(f"{arg}: ") and fragment in msg


def test_each_token_array_gets_garbage_where_its_own_mask_is_zero():
    from minirl_lm.direct.preferences import ipo_loss

    for _, kw in oracle.cases(ipo_loss):
        for lp, m in (("logp_c", "mask_c"), ("logp_r", "mask_r")):
            real, pad = kw[lp][kw[m] > 0], kw[lp][kw[m] == 0]
            assert (real < 0).all() and np.abs(pad).max() > 5.0  # log-probs where trained, garbage elsewhere
