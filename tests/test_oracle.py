"""The oracle: seeded cases from a reference's signature, outcomes compared case by case."""

import functools
import hashlib
import inspect
import sys

import numpy as np
import pytest

from minirl_lm import oracle
from minirl_lm.core.ops import AGGS
from minirl_lm.direct.preferences import orpo_loss
from minirl_lm.distill.samples import reverse_kl_reward
from minirl_lm.multiturn.env import action_view
from minirl_lm.pg.advantages import standardized
from minirl_lm.pg.clip import clipped_surrogate
from minirl_lm.pg.entropy_knobs import entropy_mask
from minirl_lm.pg.kl import kl_per_token
from minirl_lm.pg.offpolicy import is_weights
from minirl_lm.pg.seqclip import dual_clip_surrogate
from quiet import raises, silent


def test_cases_run_every_option_and_are_seeded():
    a, b = oracle.cases(clipped_surrogate, seed=3), oracle.cases(clipped_surrogate, seed=3)
    assert [n for n, _ in a] == [n for n, _ in b]
    assert all(np.array_equal(x["logp"], y["logp"]) for (_, x), (_, y) in zip(a, b))
    assert {kw["agg"] for _, kw in a} == set(AGGS)
    assert {kw["estimator"] for _, kw in oracle.cases(kl_per_token)} == {"k1", "k2", "k3"}
    assert not np.array_equal(a[0][1]["logp"], oracle.cases(clipped_surrogate, seed=4)[0][1]["logp"])


def test_each_token_array_gets_garbage_of_its_own_that_overflows_where_its_mask_is_zero():
    for _, kw in oracle.cases(clipped_surrogate):
        pad = kw["mask"] == 0
        if pad.any():
            assert np.abs(kw["logp"][pad]).min() >= 300.0 and not np.array_equal(
                kw["logp"][pad], kw["logp_old"][pad]
            )
            with np.errstate(over="ignore"):
                assert np.isinf(np.exp(kw["logp"] - kw["logp_old"])[pad]).any()  # an exp before the mask shows
        rho = np.exp(kw["logp"][~pad] - kw["logp_old"][~pad])
        assert rho.max() > 3.0 and rho.min() < 0.5  # past the dual-clip c = 3 and below 1 - eps
        assert ((rho > 1.2) & (rho < 1.28)).any() and (
            (rho > 0.72) & (rho < 0.8)
        ).any()  # between eps and eps_high
    masks = [kw["mask"] for _, kw in oracle.cases(clipped_surrogate)]
    assert any((m.sum(axis=1) == 0).any() for m in masks)  # an empty row
    assert any((np.diff(m, axis=1) > 0).any() for m in masks)  # a hole: a 0 then a 1


def test_each_token_array_gets_garbage_where_its_own_mask_is_zero():
    from minirl_lm.direct.preferences import ipo_loss

    for _, kw in oracle.cases(ipo_loss):
        for lp, m in (("logp_c", "mask_c"), ("logp_r", "mask_r")):
            real, pad = kw[lp][kw[m] > 0], kw[lp][kw[m] == 0]
            assert (real < 0).all() and np.abs(pad).min() >= 300.0  # log-probs where trained, garbage elsewhere


def test_knobs_run_over_a_grid_one_at_a_time_and_bound_keywords_stay():
    names = [n for n, _ in oracle.cases(clipped_surrogate)]
    assert any("eps_high 0.28" in n for n in names) and any("eps 0.1" in n for n in names)
    assert not any("eps_high 0.28" in n and "eps 0.1" in n for n in names)  # one at a time
    ddof = {kw["ddof"] for _, kw in oracle.cases(standardized)}
    assert ddof == {0, 1} and {kw["std_eps"] for _, kw in oracle.cases(standardized)} == {1e-8, 0.1}
    bound = functools.partial(standardized, std_eps=1e-4, ddof=1)
    assert all("ddof" not in kw and "std_eps" not in kw for _, kw in oracle.cases(bound))


def test_only_keeps_the_listed_values_and_names_bad_ones():
    kept = oracle.cases(clipped_surrogate, only={"agg": ["token_mean", "seq_sum"]})
    assert {kw["agg"] for _, kw in kept} == {"token_mean", "seq_sum"}
    assert "only: agg takes" in raises(ValueError, lambda: oracle.cases(clipped_surrogate, only={"agg": ["mean"]}))
    assert "no varied argument 'nope'" in raises(
        ValueError, lambda: oracle.cases(clipped_surrogate, only={"nope": [1]})
    )


def test_the_reference_against_itself_agrees_everywhere():
    rows = oracle.compare(dual_clip_surrogate, dual_clip_surrogate)
    assert rows and all(r.rel == 0.0 for r in rows)
    assert any(r.outcome.startswith("both raise (ours ValueError: c:") for r in rows)  # c = 0.9 refused by both


def test_a_small_error_is_flagged_and_measured_per_output():
    def off(**kw):
        loss, d = clipped_surrogate(**kw)
        return loss, d * (1 + 1e-4)

    rows = oracle.compare(off, clipped_surrogate)
    ok = [r for r in rows if r.outcome == "returns"]
    assert ok and all(1e-5 < r.rel < 2e-4 for r in ok)
    assert all(r.flagged(1e-6) for r in ok) and not any(r.flagged(1e-3) for r in ok)
    assert all(dict(r.diffs)["loss"] == 0.0 and dict(r.diffs)["dloss_dlogp"] > 1e-5 for r in ok)
    assert "differs: dloss_dlogp 1.0e-04" in oracle.report(rows)


def test_the_outputs_are_named_by_the_declaration_before_the_docstring():
    @functools.wraps(clipped_surrogate)
    def reference(**kw):  # the library's declaration, a docstring naming the results otherwise
        return clipped_surrogate(**kw)

    reference.__doc__ = "Returns:\n    `(value, grad)`."
    off = lambda **kw: (clipped_surrogate(**kw)[0] + 1.0, clipped_surrogate(**kw)[1])  # noqa: E731
    assert clipped_surrogate.returns == ["loss", "dloss_dlogp"] == reference.returns
    assert all(dict(r.diffs)["loss"] > 0 for r in oracle.compare(off, reference) if r.outcome == "returns")
    del reference.returns  # undeclared: the docstring's names
    assert all(dict(r.diffs)["value"] > 0 for r in oracle.compare(off, reference) if r.outcome == "returns")


def test_accepting_what_the_reference_refuses_is_flagged():
    rows = oracle.compare(lambda **kw: (0.0, np.zeros((6, 5))), dual_clip_surrogate)
    refused = [r for r in rows if r.outcome.startswith("accepts what the reference refuses")]
    assert refused and all(r.rel == np.inf and "c 0.9" in r.case for r in refused)


def test_raising_where_the_reference_returns_is_flagged_with_its_message():
    def boom(**kw):
        raise RuntimeError("shapes do not broadcast")

    rows = oracle.compare(boom, kl_per_token)
    assert any(r.outcome == "raises RuntimeError: shapes do not broadcast" and r.flagged(1.0) for r in rows)


def test_not_implemented_is_skipped_and_listed_apart():
    def k3_only(logp, logp_ref, mask, estimator="k3"):
        if estimator != "k3":
            raise NotImplementedError(f"{estimator} is not ported")
        return kl_per_token(logp, logp_ref, mask, estimator)

    rows = oracle.compare(k3_only, kl_per_token)
    skipped = [r for r in rows if r.outcome.startswith("skipped")]
    assert len(skipped) == 6 and not any(r.flagged(0.0) for r in rows)
    text = oracle.report(rows)
    assert "skipped: 6 cases yours does not implement" in text and text.endswith(
        "flagged: 0 of 3 cases (max rel err 0.00e+00)"
    )


def test_nan_is_reported_as_nan_and_torch_like_tensors_are_accepted():
    class Tensor:  # a stand-in for a torch tensor that still requires grad
        def __init__(self, x):
            self.x = np.asarray(x)

        def __array__(self, dtype=None, copy=None):
            raise TypeError("can't call numpy() on Tensor that requires grad")

        def detach(self):
            return self

        def numpy(self):
            return self.x

    rows = oracle.compare(lambda **kw: tuple(Tensor(x) for x in kl_per_token(**kw)), kl_per_token)
    assert all(r.rel == 0.0 for r in rows)
    nan = oracle.compare(lambda **kw: (kl_per_token(**kw)[0] * np.nan, kl_per_token(**kw)[1]), kl_per_token)
    assert all(np.isnan(r.rel) and r.flagged(1.0) for r in nan)
    assert "FLAGGED       nan" in oracle.report(nan) and "max rel err nan" in oracle.report(nan)


def test_each_side_sees_fresh_inputs():
    def writes(**kw):
        kw["logp"][:] = 0.0
        return clipped_surrogate(**kw)

    assert all(r.rel == 0.0 for r in oracle.compare(clipped_surrogate, clipped_surrogate))
    assert any(r.rel > 0 for r in oracle.compare(writes, clipped_surrogate))


def test_report_lists_every_case_takes_rtol_zero_and_ends_with_the_count():
    rows = oracle.compare(clipped_surrogate, clipped_surrogate)
    text = oracle.report(rows, rtol=0, notes=("a note",)).splitlines()
    assert len(text) == len(rows) + 2 and text[-2] == "a note"
    assert text[-1] == f"flagged: 0 of {len(rows)} cases (max rel err 0.00e+00)"
    assert oracle.Row("c", np.inf, "x").flagged(1e-6) and not oracle.Row("c", 0.0, "x").flagged(0.0)
    assert not oracle.Row("c", np.inf, "skipped: yours raises NotImplementedError").flagged(0.0)


def test_positions_that_differ_are_kept():
    def off(**kw):
        loss, d = clipped_surrogate(**kw)
        d = d.copy()
        d[0, 0] += 1.0
        return loss, d

    rows = oracle.compare(off, clipped_surrogate)
    assert all(r.where == ((0, 0),) for r in rows if r.outcome == "returns")


@pytest.mark.parametrize(
    "call, arg, fragment",
    [
        (lambda: oracle.cases("clip"), "reference", "expected a function of minirl_lm, got str"),
        (lambda: oracle.cases(clipped_surrogate, seed=-1), "seed", "expected an integer >= 0, got -1"),
        (lambda: oracle.cases(clipped_surrogate, seed=True), "seed", "expected an integer, got bool"),
        (lambda: oracle.cases(lambda unknown: 0), "reference", "takes 'unknown', which the grader does not draw"),
        (
            lambda: oracle.cases(clipped_surrogate, only=[1]),
            "only",
            "expected a dict of argument -> values, got list",
        ),
        (lambda: oracle.compare(None, clipped_surrogate), "fn", "expected a function"),
        (lambda: oracle.report([], rtol=float("nan")), "rtol", "expected a finite number"),
        (lambda: oracle.report([], rtol=-1), "rtol", "expected a number >= 0"),
        (lambda: oracle.report(None), "rows", "expected a list of oracle.Row"),
        (lambda: oracle.report([1.0]), "rows", "expected a list of oracle.Row"),
        (lambda: oracle.report([], notes="a line"), "notes", "expected a list of lines"),
        (lambda: oracle.compare(clipped_surrogate, 1.5), "reference", "expected a function of minirl_lm"),
        (lambda: oracle.compare(clipped_surrogate, clipped_surrogate, rtol=np.inf), "rtol", "expected a finite"),
        (lambda: oracle.compare(clipped_surrogate, clipped_surrogate, seed=0.5), "seed", "expected an integer"),
        (lambda: oracle.Row("c", 0.0, "returns").flagged(float("nan")), "rtol", "expected a finite number"),
        (lambda: oracle.Row("c", 0.0, "returns").flagged(np.inf), "rtol", "expected a finite number"),
        (lambda: oracle.Row("c", 0.0, "returns").flagged(True), "rtol", "expected a real number, got bool"),
        (lambda: oracle.Row("c", 0.0, "returns").flagged(-1), "rtol", "expected a number >= 0"),
    ],
)
def test_bad_arguments_are_named(call, arg, fragment):
    msg = raises((TypeError, ValueError), call)
    assert msg.startswith(f"{arg}: ") and fragment in msg


def test_a_reference_that_takes_an_object_is_refused_with_why():
    from minirl_lm.pg.grpo import grpo_step

    msg = raises(TypeError, lambda: oracle.cases(grpo_step))
    assert "takes 'policy', a policy" in msg and "no input generator" not in msg


# the public functions of the package the oracle draws cases for (tested below), and those it
# refuses: objects (policies, MDPs, graders, networks, trees), sampling loops, the exact engine
ACCEPTED = (
    "pg.advantages: advantages standardized leave_one_out centred no_baseline reinforce_pp remax opo batch_std",
    "pg.clip: clipped_surrogate clip_fraction",
    "pg.kl: kl_per_token kl_penalty kl_in_reward kl_penalty_is exact_kl kl_penalty_straight_through",
    "pg.seqclip: dual_clip_surrogate gspo_surrogate luspo_surrogate cispo_loss sequence_ratio",
    "pg.trust: sapo_loss dppo_loss gmpo_loss vespo_loss",
    "pg.offpolicy: is_weights rejection_mask corrected_pg_loss accumulation_weights",
    "pg.grpo: grpo_loss",
    "pg.multireward: gdpo",
    "pg.targets: maxrl passk_advantages",
    "pg.shaping: overlong_penalty filter_groups",
    "pg.entropy: entropy_bonus",
    "pg.entropy_knobs: clip_cov_loss kl_cov_loss entropy_masked_loss",
    "direct.dpo: dpo_loss bradley_terry_loss token_grad",
    "direct.family: dpo_family_loss",
    "direct.preferences: ipo_loss simpo_loss orpo_loss kto_loss",
    "distill.objectives: forward_kl reverse_kl generalized_jsd",
    "distill.samples: teacher_nll reverse_kl_reward",
    "values.critic: per_token_rewards td_errors gae monte_carlo_returns value_loss clipped_value_loss",
    "values.optimum: tilted_optimum kl_objective optimal_value",
    "select.bestofn: best_of_n best_of_n_reward win_rate",
    "select.rejection: accepted rejection_loss",
    "reward.bt: bt_margin_loss outcome_loss",
    "multiturn.values: gae_actions returns_actions",
    "multiturn.env: action_view",
)


@pytest.mark.parametrize("line", ACCEPTED)
def test_every_public_estimator_has_cases(line):
    import importlib

    module, names = line.split(": ")
    mod = importlib.import_module(f"minirl_lm.{module}")
    for name in names.split():
        got = oracle.cases(getattr(mod, name))
        assert got, name


def test_the_kinds_grade_shares_read_what_they_say():
    assert oracle.a_function("a function")(len, "f", {}) is len
    assert (
        raises(TypeError, lambda: oracle.a_function("a function")(int, "f", {}))
        == "f: expected a function, got type"
    )
    row = oracle.Row("c", 0.0, "returns")
    assert oracle.rows_of((row,), "rows", {}) == [row]
    assert oracle.lines_of(("a", "b"), "notes", {}) == ["a", "b"]
    assert raises(TypeError, lambda: oracle.lines_of(["a", 1], "notes", {})).startswith(
        "notes: expected a list of lines"
    )


def test_the_three_masks_are_the_documented_ones():
    right = np.array(
        [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [1, 1, 1, 1, 0], [1, 1, 0, 0, 0], [1, 1, 1, 1, 1]]
    )
    holes = right.copy()
    holes[0, 2] = holes[3, 1] = holes[5, 1] = holes[5, 3] = 0  # tool outputs inside responses
    empty = right.copy()
    empty[2] = 0
    masks = {}
    for name, kw in oracle.cases(clipped_surrogate):
        masks.setdefault(name.split(", ")[0], kw["mask"])
    assert list(masks) == ["right-padded", "holes", "an empty row"]
    for got, want in zip(masks.values(), (right, holes, empty)):
        assert got.dtype == np.float64 and np.array_equal(got, want)


def test_report_prints_each_row_the_skipped_apart_the_notes_and_the_count_exactly():
    rows = [
        oracle.Row("a", 0.5, "returns", (("loss", 0.5), ("g", 1e-9))),
        oracle.Row("b", 0.0, "returns"),
        oracle.Row("c", np.nan, "returns", (("loss", np.nan),)),
        oracle.Row("s", 0.0, "skipped: yours raises NotImplementedError: x"),
    ]
    assert oracle.report(rows, rtol=1e-6, notes=["n1"]).splitlines() == [
        "FLAGGED  5.00e-01  a: returns; differs: loss 5.0e-01",
        "ok       0.00e+00  b: returns",
        "FLAGGED       nan  c: returns; differs: loss nan",
        "skipped: 1 cases yours does not implement (NotImplementedError), not graded:",
        "  s: yours raises NotImplementedError: x",
        "n1",
        "flagged: 2 of 3 cases (max rel err nan)",
    ]
    worst = oracle.report([oracle.Row("a", 0.25, "returns"), oracle.Row("b", 0.5, "returns")], rtol=0.5)
    assert worst.splitlines()[-1] == "flagged: 0 of 2 cases (max rel err 5.00e-01)"
    assert oracle.report([oracle.Row("a", 0.5, "returns", (("loss", 0.5),))], rtol=0.5).splitlines()[0] == (
        "ok       5.00e-01  a: returns"
    )


def test_a_wrong_number_of_outputs_is_flagged_on_every_case():
    rows = oracle.compare(lambda **kw: kl_per_token(**kw)[0], kl_per_token)
    assert len(rows) == 9 and rows[0] == oracle.Row(
        "right-padded, estimator k1", np.inf, "returns 1 outputs, the reference 2", (("result", np.inf),)
    )
    assert all(r.outcome == "returns 1 outputs, the reference 2" and r.rel == np.inf for r in rows)


def test_the_kinds_name_what_they_got_exactly():
    assert raises(TypeError, lambda: oracle.rows_of(3, "rows", {})) == (
        "rows: expected a list of oracle.Row (what compare returns), got int"
    )
    assert raises(TypeError, lambda: oracle.rows_of([1], "rows", {})) == (
        "rows: expected a list of oracle.Row (what compare returns), got a sequence holding other objects"
    )
    assert raises(TypeError, lambda: oracle.lines_of("ab", "notes", {})) == (
        "notes: expected a list of lines (strings), got str 'ab'"
    )
    long = raises(TypeError, lambda: oracle.lines_of(["x" * 300, 1], "notes", {}))
    assert len(long) == 200 and long.startswith("notes: expected a list of lines (strings), got list ['xxx")


def test_outputs_without_a_declaration_or_a_docstring_are_numbered_and_a_partial_reads_its_function():
    def bare(logp, logp_ref, mask, estimator="k1"):
        return kl_per_token(logp, logp_ref, mask, estimator)

    def one(logp, logp_ref, mask, estimator="k1"):
        return kl_per_token(logp, logp_ref, mask, estimator)[0]

    def off(**kw):
        return tuple(x + 1.0 for x in kl_per_token(**kw))

    assert [n for n, _ in oracle.compare(off, bare)[0].diffs] == ["output 1", "output 2"]
    assert [n for n, _ in oracle.compare(lambda **kw: one(**kw) + 1.0, one)[0].diffs] == ["result"]
    bound = functools.partial(kl_per_token, estimator="k3")
    assert [n for n, _ in oracle.compare(off, bound)[0].diffs] == kl_per_token.returns


def test_what_yours_raises_is_shown_by_its_first_line_and_a_skipped_case_weighs_nothing():
    def silent(**kw):
        raise RuntimeError()

    def long(**kw):
        raise RuntimeError("x" * 200 + "\nsecond line")

    assert oracle.compare(silent, kl_per_token)[0].outcome == "raises RuntimeError: (no message)"
    assert oracle.compare(long, kl_per_token)[0].outcome == "raises RuntimeError: " + "x" * 120

    def k3_only(logp, logp_ref, mask, estimator="k3"):
        raise NotImplementedError("not ported")

    skipped = oracle.compare(k3_only, kl_per_token)[0]
    assert skipped == oracle.Row(
        "right-padded, estimator k1", 0.0, "skipped: yours raises NotImplementedError: not ported"
    )


# ---- reproducibility: what `cases` draws at a seed is promised -----------------------------------
def _text(v):
    """A drawn value as text: a float to 10 significant digits (robust to a last-bit difference),
    an int, bool, string or None as it is, an array as its dtype, shape and entries, an object (the
    environment and its episodes) as its type and its number and array fields."""
    if v is None or isinstance(v, (str, bool, int, np.integer, np.bool_)):
        return [f"{type(v).__name__}:{v}"]
    if isinstance(v, (float, np.floating)):
        return [f"{type(v).__name__}:{float(v):.9e}"]
    if isinstance(v, np.ndarray):
        return [f"{v.dtype}{v.shape}"] + [
            f"{x:.9e}" if isinstance(x, float) else str(x) for x in v.ravel().tolist()
        ]
    fields = [(k, x) for k, x in sorted(vars(v).items()) if isinstance(x, (int, float, np.ndarray))]
    return [type(v).__name__] + [t for k, x in fields for t in (k, *_text(x))]


def _digest(drawn):
    """The first 12 hex digits of the sha256 of cases: each case's label, argument names and values."""
    text = "\n".join(f"{label}|{k}|{' '.join(_text(v))}" for label, kw in drawn for k, v in kw.items())
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _taking(*names):
    """A reference taking the arguments `names` (no option, no knob) that accepts every input."""

    def reference(**kw):
        return 0.0

    reference.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY) for n in names]
    )
    return reference


# every argument name the grader draws: the labels of its variants, the
# type of the first variant, and the digest of `cases` at seed 0 of a reference taking it alone
DRAWN = {
    "deltas": (("default",), "float64(6, 5)", "02e9596bfc65"),
    "vpreds": (("default",), "float64(6, 5)", "6186c34859fd"),
    "values_old": (("default",), "float64(6, 5)", "c7a003069772"),
    "returns": (("default",), "float64(6, 5)", "f3090778b3d9"),
    "targets": (("default",), "float64(6, 5)", "9ec62b32dad2"),
    "dlogp": (("default",), "float64(6, 5)", "a525fb68b8d5"),
    "x": (("default",), "float64(6, 5)", "2cfc6c919b51"),
    "dseq": (("default",), "float64(6,)", "76089d02c4ce"),
    "r_chosen": (("default",), "float64(6,)", "8f440601b574"),
    "r_rejected": (("default",), "float64(6,)", "e910a2419ce9"),
    "r": (("default",), "float64(6,)", "1bbb7ff7958f"),
    "terminal_reward": (("default",), "float64(6,)", "f08db152bcce"),
    "seq_logp": (("default",), "float64(6,)", "ed709cf12643"),
    "seq_logp_c": (("default",), "float64(6,)", "6af7552cc970"),
    "seq_logp_r": (("default",), "float64(6,)", "4e94e34c35f0"),
    "seq_logp_ref": (("default",), "float64(6,)", "f724b764afd4"),
    "seq_logp_ref_c": (("default",), "float64(6,)", "d5fe483aa60f"),
    "seq_logp_ref_r": (("default",), "float64(6,)", "9d66d554eb6e"),
    "student_logits": (("default",), "float64(6, 5, 4)", "ff1119694665"),
    "teacher_logits": (("default",), "float64(6, 5, 4)", "f3587d3af3a0"),
    "logits": (("default",), "float64(6, 5, 4)", "660703ca9d40"),
    "theta": (("default",), "float64(7, 4)", "2e576cca90ad"),
    "theta_ref": (("default",), "float64(7, 4)", "f352b44c9825"),
    "p": (("default", "p 0.3"), "float64(7, 4)", "4c77831b211c"),
    "q": (("default", "q 0.3"), "float64(7, 4)", "fcb40e7cf234"),
    "pi": (("pi (Y,)", "pi (N, Y)"), "float64(4,)", "cb6de64ffd53"),
    "pi_ref": (("pi_ref (Y,)", "pi_ref (N, Y)"), "float64(4,)", "ef28852f4a42"),
    "clip": (("default",), "float", "9427830caaa0"),
    "delta": (("default",), "float", "05fb0d1df6b7"),
    "kl": (("default",), "float", "8ffc382ea2da"),
    "coef": (("default",), "float", "70b266e17886"),
    "entropy": (("default",), "float", "d149ffa828a5"),
    "current_kl": (("default",), "float", "bab74fc6b386"),
    "target_kl": (("default",), "float", "eac1e1a6d373"),
    "gap": (("default",), "float", "e9cd4792fea3"),
    "horizon": (("default",), "float", "f6dd043c4917"),
    "n_steps": (("default",), "float", "4919770e2ec3"),
    "mixup": (("default",), "float", "2654ac725052"),
    "max_len": (("default",), "int", "0745629d7aa9"),
    "buffer_len": (("default",), "int", "eae602945f13"),
    "eos": (("default",), "int", "51077d04c0c3"),
    "B": (("default",), "int", "f6113eee0c6c"),
    "M": (("default",), "int", "6bcb60070ebb"),
    "loss_type": (("default",), "str", "9d45087fb04a"),
    "G": (("G 2", "G 3"), "int", "429e58aafc8b"),
    "K": (("K 2", "K 4"), "int", "4392feb71675"),
    "N": (("N 1", "N 4"), "int", "6653f01274fd"),
    "k": (("k 1", "k 2"), "int", "ff827f19691b"),
    "mask": (("right-padded", "holes", "an empty row"), "float64(6, 5)", "1d16686f9317"),
    "mask_c": (("chosen right-padded", "chosen holes", "chosen an empty row"), "float64(6, 5)", "be261550b105"),
    "action_mask": (("default",), "float64(6, 5)", "902ed6a82b34"),
    "logp": (("default",), "float64(6, 5)", "d4eaa37baf15"),
    "mask_r": (("rejected right-padded",), "float64(6, 5)", "0564d9042110"),
    "logp_old": (("default",), "float64(6, 5)", "205f30d3b00f"),
    "logp_ref": (("default",), "float64(6, 5)", "70bbeaee3a69"),
    "logp_mu": (("default",), "float64(6, 5)", "4a19f99b9485"),
    "logp_teacher": (("default",), "float64(6, 5)", "5314f03260b5"),
    "logp_c": (("default",), "float64(6, 5)", "1a167de5a1f6"),
    "logp_r": (("default",), "float64(6, 5)", "3b41b9f542b5"),
    "logp_other": (("default",), "float64(6, 5)", "f6e2ef839711"),
    "rewards": (
        (
            "groups (3, 2)",
            "groups (2, 3)",
            "rewards (N, K, R)",
            "equal non-dyadic groups",
            "groups of one",
            "per response (B,)",
            "per token (B, T)",
        ),
        "float64(3, 2)",
        "567ff988ead2",
    ),
    "adv": (("default",), "float64(6,)", "bb0aafd0d2f3"),
    "token_rewards": (("default",), "float64(6, 5)", "ed8b64d61060"),
    "greedy_rewards": (("greedy (3,)", "greedy (2,)", "greedy (6,)"), "float64(3,)", "1e1704e0001e"),
    "lengths": (("lengths (3, 2)", "lengths (2, 3)", "lengths (6,)"), "int64(3, 2)", "25770c0ed2a8"),
    "values": (("table (S,)", "per position (B, T)"), "float64(7,)", "730615d856b8"),
    "states": (("default",), "int64(6, 5)", "ba7e2d3f8117"),
    "entropies": (("default",), "float64(6, 5)", "f3b220b6e564"),
    "sum_pi_sq": (("default",), "float64(6, 5)", "37a75cdbf36d"),
    "weights": (("default",), "float64(6, 5)", "40ff83eefd84"),
    "desirable": (("default",), "bool(6,)", "48f02a0453c2"),
    "accept": (("default",), "bool(6,)", "626535907513"),
    "label": (("default",), "float64(6,)", "0546452639ba"),
    "tokens": (("default",), "int64(6, 5)", "b9480c920b52"),
    "z": (("default",), "float64(6, 4)", "ad9086de08ce"),
    "mu": (("default",), "float64(4,)", "06a2dc2818a7"),
    "r_hat": (("default",), "float64(4,)", "9f083946f954"),
    "reward": (("reward (Y,)", "reward (N, Y)"), "float64(4,)", "857bcf632cfa"),
    "log_odds": (("default",), "float", "41e5e7c89f76"),
    "agg": (
        ("agg seq_sum", "agg token_mean", "agg seq_mean_token_mean", "agg constant", "agg token_sum"),
        "str",
        "c626ce70ef01",
    ),
    "beta": (("beta 0.1", "beta 0.5"), "float", "b6b01a8199aa"),
    "c": (("c 3", "c 0.9"), "float", "a03984a2a901"),
    "env": (("calculator",), "MultiTurnMDP", "91078c7b7120"),
    "ep": (("every episode",), "Episodes", "ba674314850f"),
}
# the names whose draws do not depend on the seed: the masks, the scalars, the counts, the options,
# the advantages with both signs and 0, the environment
FIXED = {
    "clip", "delta", "kl", "coef", "entropy", "current_kl", "target_kl", "gap", "horizon", "n_steps", "mixup",
    "max_len", "buffer_len", "eos", "B", "M", "loss_type", "G", "K", "N", "k", "mask", "mask_c", "action_mask",
    "mask_r", "adv", "desirable", "accept", "log_odds", "agg", "beta", "c", "env", "ep",
}  # fmt: skip


def test_the_inputs_drawn_for_each_argument_name_at_seed_0_are_pinned():
    """The promise: `cases(reference, seed=0)` gives an argument of a given name the same variants
    (labels, in order), of the same type, dtype and shape, holding the same values to 10
    significant digits, in every release, so that a learner's report at a seed (and a report the
    site quotes) can be reproduced. A change of the generators changes this table on purpose."""
    for name, (labels, kind, digest) in DRAWN.items():
        drawn = oracle.cases(_taking(name), seed=0)
        first = drawn[0][1][name]
        got = f"{first.dtype}{first.shape}" if isinstance(first, np.ndarray) else type(first).__name__
        assert tuple(label for label, _ in drawn) == labels, name
        assert (got, _digest(drawn)) == (kind, digest), name


def test_a_few_drawn_entries_at_seed_0_read_as_pinned():
    """The digests above, in a few numbers one can read: exact inputs, the first log-prob drawn, and
    the rewards' shapes in their order."""
    (_, kw), *_ = oracle.cases(_taking("adv"))
    assert kw["adv"].tolist() == [1.0, -1.0, 0.5, -2.0, 0.0, 1.5]
    rewards = oracle.cases(_taking("rewards"))
    assert [kw["rewards"].shape for _, kw in rewards] == [(3, 2), (2, 3), (3, 2, 2), (2, 3), (6, 1), (6,), (6, 5)]
    assert np.array_equal(rewards[3][1]["rewards"], np.full((2, 3), 0.1))
    logp = oracle.cases(_taking("logp"))[0][1]["logp"]
    assert (logp < -0.5).all() and f"{logp[0, 0]:.9e}" == "-2.075438133e+00"


# the cases of public references at seed 0 (the garbage at padding, each token array's own mask,
# string options, bools, int and float knobs, None knobs, the environment): how many, the first
# and last labels, the digest
PUBLIC = {
    clipped_surrogate: (60, "right-padded, agg seq_sum", "an empty row, agg token_sum, max_len 8", "cdf801af6d73"),
    kl_per_token: (9, "right-padded, estimator k1", "an empty row, estimator k3", "9642ba88e1e2"),
    is_weights: (
        36, "right-padded, level token, mode truncate", "an empty row, level sequence, mode mask, c_min 0.5",
        "54ccf97c4589",
    ),
    reverse_kl_reward: (6, "right-padded, to_go False", "an empty row, to_go True", "694a42b2aa5a"),
    orpo_loss: (
        4, "chosen right-padded, rejected right-padded", "chosen holes, rejected right-padded, lam 0.8",
        "93031846d79d",
    ),
    entropy_mask: (6, "right-padded", "an empty row, rho_h 0.4", "6911b80be7e5"),
    standardized: (15, "groups (3, 2)", "per token (B, T), ddof 1", "f9e2f775dfc7"),
    action_view: (1, "calculator, every episode", "calculator, every episode", "7f48a666be3c"),
}  # fmt: skip


def test_the_cases_of_public_references_at_seed_0_are_pinned():
    """The same promise for whole references: every token array's garbage where its own mask is 0,
    the options, the bools and the knobs one at a time, the environment, at seed 0."""
    for reference, (n, first, last, digest) in PUBLIC.items():
        drawn = oracle.cases(reference, seed=0)
        assert (len(drawn), drawn[0][0], drawn[-1][0], _digest(drawn)) == (n, first, last, digest), reference


def test_the_same_seed_draws_the_same_cases_and_another_seed_other_ones():
    for name in DRAWN:
        at = {seed: _digest(oracle.cases(_taking(name), seed=seed)) for seed in (0, 1)}
        assert (at[0] == DRAWN[name][2]) and (at[1] == at[0]) == (name in FIXED), name
    for reference in PUBLIC:
        again, other = _digest(oracle.cases(reference, seed=0)), _digest(oracle.cases(reference, seed=1))
        assert again == PUBLIC[reference][3] and (other == again) == (reference is action_view), reference


def test_a_partial_is_named_by_its_functions_declaration_then_its_functions_docstring():
    def kl(logp, logp_ref, mask, estimator="k1"):
        """Compute `(a, b)` first.

        Returns:
            `(value, grad)`.
        """
        return kl_per_token(logp, logp_ref, mask, estimator)

    def off(**kw):
        return tuple(x + 1.0 for x in kl_per_token(**kw))

    bound = functools.partial(kl, estimator="k3")
    assert [n for n, _ in oracle.compare(off, bound)[0].diffs] == ["value", "grad"]  # the span after `Returns:`
    kl.returns = ["kl", "dkl"]
    assert [n for n, _ in oracle.compare(off, bound)[0].diffs] == ["kl", "dkl"]


def test_the_environment_left_out_of_a_copy_is_refused_with_why(monkeypatch):
    monkeypatch.setitem(sys.modules, "minirl_lm.multiturn.calculator", None)  # its import fails
    assert raises(TypeError, lambda: oracle.cases(action_view)) == (
        "reference: its argument 'env' is the multi-turn environment, which this copy leaves out: "
        "grade it with the package"
    )
    assert "takes 'unknown', which the grader does not draw" in raises(
        TypeError, lambda: oracle.cases(lambda unknown: 0)
    )


def test_report_keeps_the_rows_after_a_skipped_one_joins_the_outputs_that_differ_and_counts_none():
    rows = [
        oracle.Row("s", 0.0, "skipped: yours raises NotImplementedError: x"),
        oracle.Row("a", 0.5, "returns", (("loss", 0.5), ("g", 0.25))),
    ]
    assert oracle.report(rows).splitlines()[:1] == [
        "FLAGGED  5.00e-01  a: returns; differs: loss 5.0e-01, g 2.5e-01"
    ]
    assert oracle.report([]) == "flagged: 0 of 0 cases (max rel err 0.00e+00)"
    assert oracle.report(rows[:1]).splitlines()[-1] == "flagged: 0 of 0 cases (max rel err 0.00e+00)"


def test_lines_of_refuses_what_is_no_list_or_tuple_even_of_strings():
    assert raises(TypeError, lambda: oracle.lines_of({"a"}, "notes", {})) == (
        "notes: expected a list of lines (strings), got set {'a'}"
    )
    assert raises(TypeError, lambda: oracle.lines_of(3, "notes", {})) == (
        "notes: expected a list of lines (strings), got int 3"
    )


@pytest.mark.parametrize(
    "doc, want",
    [
        ("Returns:\n    `(value, grad)`; not the later Returns: `(x, y)`.", ["value", "grad"]),
        ("Returns:\n    the pair (as Returns: `(value, grad)` says).", ["value", "grad"]),
        ("Returns:\n    `value` and `grad`.", ["output 1", "output 2"]),
        ("Returns:\n    the pair `(value, grad.", ["output 1", "output 2"]),
        ("The pair `(value, grad)`.", ["output 1", "output 2"]),
        ("Returns:\n    `value, grad`, not a tuple.", ["output 1", "output 2"]),
        ("Returns:\n    `(value, grad, extra)`: three names for two outputs.", ["output 1", "output 2"]),
    ],
)
def test_outputs_are_named_by_the_first_span_after_the_first_returns_when_it_is_a_tuple(doc, want):
    def kl(logp, logp_ref, mask, estimator="k1"):
        return kl_per_token(logp, logp_ref, mask, estimator)

    kl.__doc__ = doc
    off = lambda **kw: tuple(x + 1.0 for x in kl_per_token(**kw))  # noqa: E731
    assert [n for n, _ in oracle.compare(off, kl)[0].diffs] == want


_SHAPES = ("round", "square")  # a string option's values, in the module of the function that takes it


def test_a_string_option_runs_over_the_tuple_of_its_module_then_the_packages_else_keeps_its_default():
    def shaped(adv, shape="round"):
        return adv

    def free(adv, note="free"):
        return adv

    assert [n for n, _ in oracle.cases(shaped)] == ["shape round", "shape square"]
    assert [n for n, _ in oracle.cases(free)] == ["default"]
    elsewhere = {"__name__": "a_module_nobody_imported"}  # a function whose module cannot be found
    exec("def aggregated(adv, agg='token_mean'):\n    return adv", elsewhere)
    assert [kw["agg"] for _, kw in oracle.cases(elsewhere["aggregated"])] == list(AGGS)


def test_a_knob_off_the_grid_takes_twice_its_default_or_half_an_int_knob_none_and_ddof_the_other():
    def knobs(adv, w=0.0, s=0.25, n=3, ddof=1):
        return adv

    assert [n for n, _ in oracle.cases(knobs)] == ["default", "w 0.5", "s 0.5", "ddof 0"]


def test_compare_names_each_outcome_by_its_case_and_says_what_was_refused():
    def scaled(adv, c=3.0):
        if c < 1.0:
            raise ValueError("c: expected a value >= 1\nsecond line")
        return adv * c

    def yours(adv, c=3.0):
        if c == 2.0:
            raise RuntimeError("no c = 2")
        return adv * c

    assert [n for n, _ in oracle.cases(scaled)] == ["default", "c 2.0", "c 0.9"]
    assert oracle.compare(yours, scaled) == [
        oracle.Row("default", 0.0, "returns", (("result", 0.0),), ()),
        oracle.Row("c 2.0", np.inf, "raises RuntimeError: no c = 2"),
        oracle.Row("c 0.9", np.inf, "accepts what the reference refuses (ValueError: c: expected a value >= 1)"),
    ]
    rows = oracle.compare(lambda adv, c=3.0: scaled(adv, 2.0 if c == 2.0 else 0.5), scaled)
    assert [(r.case, r.outcome) for r in rows[1:]] == [
        ("c 2.0", "returns"),
        ("c 0.9", "both raise (ours ValueError: c: expected a value >= 1)"),
    ]


def test_compare_is_seeded_by_its_seed():
    def same(adv, logp, mask):
        return logp

    drawn = oracle.cases(same, seed=5)
    at_5 = lambda adv, logp, mask: next(kw["logp"] for _, kw in drawn if np.array_equal(kw["mask"], mask))  # noqa: E731
    assert all(r.rel == 0.0 for r in oracle.compare(at_5, same, seed=5))
    assert all(r.rel > 0.0 for r in oracle.compare(at_5, same, seed=6))


def test_bool_outputs_are_compared_as_numbers():
    def signs(adv):
        return adv, adv > 0

    assert oracle.compare(signs, signs)[0].diffs == (("output 1", 0.0), ("output 2", 0.0))
    other = oracle.compare(lambda adv: (adv, adv >= 0), signs)[0]
    assert other.diffs == (("output 1", 0.0), ("output 2", 1.0)) and other.where == ()


def test_non_finite_entries_compare_by_position_and_value():
    def out(x):
        return lambda adv: np.array(x)

    def rel(got, want):
        return oracle.compare(out(got), out(want))[0].rel

    nan, inf = np.nan, np.inf
    assert rel([nan, 1.0], [nan, 1.0]) == 0.0 and rel([inf, 1.5], [inf, 1.0]) == 0.5  # NaN where ours is NaN
    assert rel([inf], [inf]) == 0.0 and rel([-inf, nan], [-inf, nan]) == 0.0  # nothing finite to measure
    assert rel([inf, 1.0], [1.0, 1.0]) == inf and rel([-inf], [inf]) == inf
    assert np.isnan(rel([nan, 1.0], [1.0, 1.0])) and np.isnan(rel([nan], [inf]))
    assert np.isnan(rel([nan, inf, 1.0], [nan, 1.0, inf]))  # yours has NaN: NaN, whatever the rest
    assert rel([1.0, 5.0], [1.0, nan]) == inf  # ours is NaN where yours is finite


def test_the_largest_difference_of_a_case_is_nan_when_any_output_is_and_zero_without_outputs():
    def two(adv):
        return adv, adv

    rows = oracle.compare(lambda adv: (adv * 1.5, adv * np.nan), two)
    assert [d for _, d in rows[0].diffs][0] == 0.5 and np.isnan(rows[0].rel)
    assert oracle.compare(lambda adv: (), lambda adv: ())[0] == oracle.Row("default", 0.0, "returns", (), ())


def test_leaves_of_a_dict_are_compared_in_the_order_of_its_keys():
    def ref(adv):
        return {"b": adv, "a": (adv, {"c": 2.0 * adv})}

    def yours(adv):
        return {"a": (adv, {"c": 2.0 * adv}), "b": 1.5 * adv}

    assert [d for _, d in oracle.compare(yours, ref)[0].diffs] == [0.0, 0.0, 0.5]


def test_a_tensor_is_detached_and_moved_to_the_cpu_before_it_is_read():
    class Tensor:  # torch's rules: numpy() refuses a tensor that requires grad or lives on a device
        def __init__(self, x, grad=True, device="cuda"):
            self.x, self.grad, self.device = np.asarray(x), grad, device

        def __array__(self, dtype=None, copy=None):
            raise TypeError("use .numpy()")

        def detach(self):
            return Tensor(self.x, False, self.device)

        def cpu(self):
            return Tensor(self.x, self.grad, "cpu")

        def numpy(self):
            if self.grad or self.device != "cpu":
                raise TypeError("can't convert a tensor that requires grad or lives on cuda")
            return self.x

    rows = oracle.compare(lambda **kw: tuple(Tensor(x) for x in kl_per_token(**kw)), kl_per_token)
    assert rows and all(r.outcome == "returns" and r.rel == 0.0 for r in rows)


def _token_output(scale, off=()):
    """A reference of `(adv, mask)` returning `scale * mask` (and yours: `off` added at positions)."""

    def f(adv, mask):
        out = scale * mask
        for (i, j), d in off:
            out[i, j] += d
        return out

    return f


def test_positions_that_differ_are_measured_against_the_largest_finite_magnitude():
    def at(got, want, rtol=1e-6):
        return {r.where for r in oracle.compare(got, want, rtol=rtol)}

    assert at(_token_output(0.1, [((0, 0), 5e-7)]), _token_output(0.1)) == {((0, 0),)}  # 5e-7 > 1e-6 * 0.1
    assert at(_token_output(1.0, [((0, 0), 0.5)]), _token_output(1.0), rtol=0.5) == {()}  # at the tolerance

    def two(adv, mask):
        return _token_output(1.0, [((0, 0), 1.0)])(adv, mask), _token_output(1.0, [((1, 1), 1.0)])(adv, mask)

    assert at(two, lambda adv, mask: (mask * 1.0, mask * 1.0)) == {((0, 0), (1, 1))}  # over every output
    inf = _token_output(np.inf)  # equal infinities (and NaN where ours is NaN) differ nowhere, silently
    assert silent(lambda: at(inf, inf)) == {()}
    nan = lambda adv, mask: np.where(mask > 0, np.nan, 1.0)  # noqa: E731
    assert silent(lambda: at(nan, nan)) == {()}


def test_each_side_gets_its_own_copy_of_every_input():
    def zeroes(**kw):
        kw["adv"][:] = 0.0  # an input every case holds (the same array)
        return clipped_surrogate(**kw)

    rows = oracle.compare(zeroes, clipped_surrogate)
    assert rows and all(r.rel > 0 for r in rows)


def test_a_callers_numpy_error_state_does_not_reach_either_side():
    def overflows(adv):
        return np.exp(adv * 1000.0)

    with np.errstate(all="raise"):
        rows = oracle.compare(overflows, overflows)
    assert [(r.outcome, r.rel) for r in rows] == [("returns", 0.0)]


def test_old_reference_and_behaviour_log_probs_stay_below_zero_at_every_seed():
    """Each is `logp - log(ratio)`, capped at -1e-3: a log-prob, never 0 or above (the cap is hit at
    seed 2)."""
    names = ("logp_old", "logp_ref", "logp_mu", "logp_teacher", "logp_r")
    reference = _taking(*names)
    top = {seed: max(oracle.cases(reference, seed=seed)[0][1][n].max() for n in names) for seed in range(10)}
    assert all(t <= -1e-3 for t in top.values()) and top[2] == -1e-3


def test_a_reference_is_named_in_what_cases_refuses_by_its_function_and_a_sampler_is_refused():
    def f(unknown, x=1.0):
        return x

    class Nameless:  # a callable object without a __name__
        def __call__(self, unknown, x=1.0):
            return x

    def draw(func, **bound):
        return raises(TypeError, lambda: oracle.cases(functools.partial(func, **bound)))

    assert draw(f, x=2.0) == (
        "reference: f takes 'unknown', which the grader does not draw: bind it, functools.partial(f, unknown=...)"
    )
    assert draw(Nameless(), x=2.0).startswith("reference: the reference takes 'unknown', which")
    assert raises(TypeError, lambda: oracle.cases(Nameless())).startswith("reference: the reference takes")

    def sampler(adv, rng):
        return adv

    def seeded(adv, rng=None):
        return adv

    assert raises(TypeError, lambda: oracle.cases(sampler)) == (
        "reference: sampler takes 'rng', a random generator driving a sampler: the grader compares functions "
        "of arrays; check the estimators it is built from"
    )
    assert [kw["rng"] for _, kw in oracle.cases(seeded)] == [None]


def test_a_keyword_bound_in_the_middle_leaves_the_arguments_after_it_varied():
    bound = functools.partial(clipped_surrogate, eps=0.2)
    names = [n for n, _ in oracle.cases(bound)]
    assert len(names) == 45 and not any("eps 0.1" in n for n in names)
    assert any("eps_high 0.28" in n for n in names) and any("max_len 8" in n for n in names)
    assert {kw["agg"] for _, kw in oracle.cases(bound)} == set(AGGS)


def test_a_reference_that_refuses_garbage_gets_clean_inputs_and_one_that_refuses_all_is_refused():
    def clean_only(logp, mask):
        if np.abs(logp).max() > 100.0:
            raise ValueError("logp: garbage")
        return logp

    drawn = oracle.cases(clean_only)
    assert [n for n, _ in drawn] == ["right-padded", "holes", "an empty row"]
    assert all(np.abs(kw["logp"]).max() < 100.0 for _, kw in drawn)

    def never(adv):
        raise ValueError("adv: no")

    assert raises(TypeError, lambda: oracle.cases(never)) == (
        "reference: refuses every case the grader draws for it (bind its arguments: partial)"
    )


def test_an_output_that_is_not_numbers_is_flagged_not_a_crash():
    """Yours returning strings where the reference returns arrays: every case differs (inf), none
    raises, and no position is named (there are no numbers to place)."""

    def words(logp, logp_old, adv, mask, eps=0.2, eps_high=None, agg="token_mean", max_len=None):
        return "loss", "grad"

    rows = oracle.compare(words, clipped_surrogate, only={"agg": ["token_mean"]})
    assert rows and all(r.rel == np.inf and r.outcome == "returns" and r.where == () for r in rows)
    assert rows[0].diffs == (("loss", np.inf), ("dloss_dlogp", np.inf))

    def word_then_zeros(logp, logp_old, adv, mask, eps=0.2, eps_high=None, agg="token_mean", max_len=None):
        return "loss", np.zeros_like(logp)  # the gradient read after the word: its positions named

    row = oracle.compare(word_then_zeros, clipped_surrogate, only={"agg": ["token_mean"]})[0]
    case = dict(oracle.cases(clipped_surrogate, only={"agg": ["token_mean"]}))[row.case]
    grad = clipped_surrogate(**case)[1]
    assert row.where == tuple((int(b), int(t)) for b, t in zip(*np.nonzero(grad))) != ()


def test_outputs_that_are_not_numbers_are_equal_by_value_and_unequal_when_they_cannot_be_compared():
    class Touchy:  # comparing it raises
        def __eq__(self, other):
            raise RuntimeError("no")

        __hash__ = None

    def words(adv):
        return np.array(["a", "b"])

    def touchy(adv):
        return Touchy()

    assert [r.rel for r in oracle.compare(words, words)] == [0.0] * len(oracle.cases(words))
    assert all(r.rel == np.inf for r in oracle.compare(touchy, touchy))
