"""The grader: every bug of the bug zoo flagged and named, the six planted failures, the exercises."""

import functools
import inspect
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from minirl_lm import grade
from minirl_lm.pg.advantages import standardized
from minirl_lm.pg.grpo import grpo_loss

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
import bug_effects  # noqa: E402  (loads a mutant of the zoo in memory)

# the public function each mutant breaks, and the section of the bugs page that tells of it
ZOO = {
    "clip_fraction_sign": ("clip_fraction", "the-clip-fraction-counted-with-the-wrong-sign"),
    "singleton_raw_reward": ("advantages", "a-group-of-one-keeps-its-raw-reward"),
    "equal_rewards_residue": ("advantages", "equal-rewards-and-floating-point-residue"),
    "batch_not_group_statistics": ("standardized", "batch-statistics-instead-of-group-statistics"),
    "kl_estimator_fallthrough": ("kl_per_token", "a-kl-estimator-falls-through-to-k3"),
    "kl_coefficient_ignored": ("grpo_loss", "the-kl-coefficient-silently-ignored"),
    "kl_loss_maximized": ("grpo_loss", "the-kl-loss-maximized"),
    "token_kl_summed_at_the_end": ("per_token_rewards", "the-token-level-kl-paid-as-a-sequence-kl-at-the-end"),
    "gae_reads_masked_values": ("td_errors", "gae-reads-the-critics-value-at-padding"),
    "dual_clip_positive_advantage": ("dual_clip_surrogate", "dual-clip-on-positive-advantages"),
    "dual_clip_constant_below_one": ("dual_clip_surrogate", "a-dual-clip-constant-below-one"),
    "accumulation_divides_twice": ("accumulation_weights", "the-accumulation-normalizer-divided-twice"),
    "ipo_summed_not_averaged": ("ipo_loss", "ipo-on-summed-log-ratios-where-averaged-ones-were-meant"),
    "gae_reset_at_observations": ("gae_actions", "returns-and-gae-reset-at-every-observation-token"),
    "observation_tokens_trained": ("action_view", "observation-tokens-trained-on"),
}


def _slugs(page):
    heads = re.findall(r"^#+ (.+)$", (ROOT / "docs" / page).read_text(), re.M)
    return {re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", h).strip().lower()) for h in heads}  # the toc's slugs


def test_the_zoo_table_and_the_anchors_are_current():
    assert set(ZOO) == {m.name for m in bug_effects.bugzoo.MUTANTS}
    assert {a for _, a in ZOO.values()} <= _slugs("bugs.md")
    for value in grade.NAMED.values():
        page, _, anchor = value.partition("#")
        assert not anchor or anchor in _slugs(page), value


@pytest.mark.parametrize("mutant", bug_effects.bugzoo.MUTANTS, ids=lambda m: m.name)
def test_every_bug_of_the_zoo_is_flagged_and_named(mutant):
    f, anchor = ZOO[mutant.name]
    ref = getattr(bug_effects.REAL[mutant.file], f)
    text, agrees = grade.grade(getattr(bug_effects.load(mutant), f), ref)
    assert not agrees and f"bugs.md#{anchor}" in text, text[-1500:]
    clean, agrees = grade.grade(getattr(bug_effects.load(mutant, pristine=True), f), ref)
    assert agrees and "bugs.md#" not in clean


# ---- the six failures a user planted in a TRL-style GRPO loss ------------------------------------
def trl_grpo(logp, logp_old, logp_ref, adv, mask, eps=0.2, eps_high=None, beta=0.04, kl_estimator="k3",
             agg="token_mean", max_len=None, bug=None):  # fmt: skip
    """k3 and three aggregations only; `bug` plants one mistake."""
    if kl_estimator != "k3" or agg not in ("token_mean", "seq_mean_token_mean", "seq_sum"):
        raise NotImplementedError(f"not ported: {kl_estimator}, {agg}")
    eh = eps if eps_high is None else eps_high
    lo, hi = (1 - eh, 1 + eps) if bug == "swapped bounds" else (1 - eps, 1 + eh)
    with np.errstate(all="ignore"):
        u = logp - logp_old if bug == "exp before the mask" else np.where(mask > 0, logp - logp_old, 0.0)
        rho = np.exp(u) * mask if bug == "exp before the mask" else np.exp(u)
        B, n = mask.shape[0], np.maximum(mask.sum(axis=1, keepdims=True), 1.0)
        w = {
            "token_mean": mask / max(mask.sum(), 1.0),
            "seq_mean_token_mean": mask / (B * n),
            "seq_sum": mask / B,
        }[agg]
        A = adv[:, None]
        unclipped = rho * A <= np.clip(rho, lo, hi) * A
        loss = -np.sum(w * np.minimum(rho * A, np.clip(rho, lo, hi) * A))
        grad = -w * np.where(unclipped, rho * A, 0.0)
        d = logp_ref - logp if bug == "unmasked KL" else np.where(mask > 0, logp_ref - logp, 0.0)
        k3, dk3 = np.exp(d) - d - 1.0, 1.0 - np.exp(d)
        loss = loss + beta * np.sum(w * k3)
    return loss, grad + beta * w * dk3


@pytest.mark.parametrize(
    "bug, line",
    [
        ("unmasked KL", "pattern: the differences sit only at [padding]"),
        ("exp before the mask", "pattern: yours is NaN where the reference is finite (0 * inf)"),
        ("swapped bounds", "finding: yours equals the reference with eps and eps_high swapped"),
    ],
)
def test_the_planted_grpo_bugs_are_flagged_and_explained(bug, line):
    text, agrees = grade.grade(functools.partial(trl_grpo, bug=bug), grpo_loss)
    assert not agrees and line in text, text[-2000:]


def test_unsupported_options_are_skipped_not_flagged():
    text, agrees = grade.grade(trl_grpo, grpo_loss)
    assert agrees and "FLAGGED" not in text
    n = int(re.search(r"skipped: (\d+) cases yours does not implement", text).group(1))
    graded = int(re.search(r"flagged: 0 of (\d+) cases", text).group(1))
    assert n > graded > 0 and "NotImplementedError: not ported: k1, token_mean" in text
    text, agrees = grade.grade(trl_grpo, grpo_loss, only={"kl_estimator": ["k3"], "agg": ["token_mean"]})
    assert agrees and "skipped" not in text


def trl_advantage(rewards, std_eps=1e-8, ddof=0):
    """TRL's group advantage: Bessel's std and + 1e-4, whatever the arguments say."""
    r = np.asarray(rewards, float)
    return (r - r.mean(axis=1, keepdims=True)) / (r.std(axis=1, ddof=1, keepdims=True) + 1e-4)


def test_trl_knobs_unbound_are_named_and_bound_pass():
    text, agrees = grade.grade(trl_advantage, standardized)
    assert not agrees and "yours computes TRL's knobs, std_eps=1e-4 and ddof=1" in text, text[-1500:]
    text, agrees = grade.grade(trl_advantage, functools.partial(standardized, std_eps=1e-4, ddof=1))
    flagged = [line for line in text.splitlines() if line.startswith("FLAGGED")]
    # left: TRL's std of one reward is NaN, and its equal groups divide rounding residue
    assert flagged and all("groups of one" in line or "equal non-dyadic groups" in line for line in flagged)
    assert "bugs.md#a-group-of-one-keeps-its-raw-reward" in text
    assert "bugs.md#equal-rewards-and-floating-point-residue" in text


def test_a_torch_tensor_that_requires_grad_is_accepted():
    class Tensor:  # torch's refusal: np.asarray on a tensor that requires grad raises
        def __init__(self, x):
            self.x = np.asarray(x)

        def __array__(self, dtype=None, copy=None):
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy()")

        def detach(self):
            return self

        def numpy(self):
            return self.x

    def wrapped(**kw):
        loss, grad = trl_grpo(**kw)
        return Tensor(loss), Tensor(grad)

    text, agrees = grade.grade(wrapped, grpo_loss, only={"kl_estimator": ["k3"], "agg": ["token_mean"]})
    assert agrees, text[-1000:]


def test_patterns_read_the_flagged_cases():
    from minirl_lm import oracle

    rows = [
        oracle.Row("right-padded", 0.0, "returns"),
        oracle.Row("groups of one", 1.0, "returns", (("result", 1.0),)),
    ]
    lines = grade.patterns(rows, [{}, {}], standardized)
    assert lines == ["pattern: flagged only on cases with [groups of one]: a group of one keeps its raw reward "
                     "(bugs.md#a-group-of-one-keeps-its-raw-reward)"]  # fmt: skip


# ---- the exercises: a right and a wrong solution each ---------------------------------------------
@pytest.mark.parametrize("name", list(grade.EXERCISES))
def test_each_exercise_grades_a_right_and_a_wrong_solution(name, tmp_path, capsys):
    reference, page = grade.EXERCISES[name]
    text = (ROOT / "docs" / page).read_text()
    src = Path(inspect.unwrap(reference).__code__.co_filename).relative_to(ROOT)
    assert "## Exercise" in text and f"python -m minirl_lm.grade {name} " in text
    assert f'--8<-- "{src}"' in text[text.index("## Exercise") :]  # the solution: the library's own file
    assert grade.main([name, str(src)]) == 0
    wrong = tmp_path / "mine.py"
    f = reference.__name__
    wrong.write_text(
        f"from {reference.__module__} import {f} as _ref\n\n\n"
        f"def {f}(**kw):\n"
        "    out = _ref(**kw)\n"
        "    return tuple(x * 1.001 if not isinstance(x, tuple) else x for x in out) if isinstance(out, tuple) "
        "else out * 1.001\n"
    )
    assert grade.main([name, str(wrong)]) == 1
    assert f"{name}: flagged" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["nope", "x.py"], "NAME: expected one of"),
        (["clip", "missing.py"], "FILE: expected a Python file"),
        (["clip", "README.md"], "FILE: README.md fails to load"),
        (["clip", "minirl_lm/pg/kl.py"], "defines no function clipped_surrogate"),
        (["clip", "minirl_lm/pg/clip.py", "--only", "agg"], "--only: expected ARG=V1,V2"),
        (["clip", "minirl_lm/pg/clip.py", "--rtol", "-1"], "expected numbers >= 0"),
    ],
)
def test_cli_bad_arguments_are_usage_errors(argv, fragment):
    out = subprocess.run(
        [sys.executable, "-m", "minirl_lm.grade", *argv], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr and fragment in out.stderr, out.stderr


def test_cli_exits_0_on_agreement_with_rtol_0_and_lists_the_exercises(capsys):
    assert grade.main(["clip", "minirl_lm/pg/clip.py", "--rtol", "0", "--only", "agg=token_mean,seq_sum"]) == 0
    assert "clip: your clipped_surrogate agrees with the reference" in capsys.readouterr().out
    assert grade.main(["--list"]) == 0 and "clipped_surrogate(logp, logp_old" in capsys.readouterr().out


_LEVELS = ("plain", "odd")  # a string option's values, in the module of the reference that takes it


class _Same:
    """Equal to everything, and nothing NumPy reads as a number."""

    def __eq__(self, other):
        return True

    __hash__ = None


@pytest.mark.parametrize("odd, found", [(_Same(), True), ("odd", False)])
def test_a_hypothesis_compares_an_output_numpy_cannot_read_by_equality(odd, found):
    def reference(adv, level="plain"):
        return float(adv.sum()) if level == "plain" else odd

    def yours(adv, level="plain"):
        return float(adv.sum()) + 1.0

    text, agrees = grade.grade(yours, reference, only={"level": ["plain"]})
    assert not agrees and ("finding: your level='plain' computes the reference's level='odd'" in text) == found
