"""The grader: every bug of the bug zoo flagged and named, the six planted failures, the exercises."""

import functools
import inspect
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from minirl_lm import grade, oracle
from minirl_lm.direct.dpo import dpo_loss
from minirl_lm.multiturn.env import action_view
from minirl_lm.pg.advantages import advantages, standardized
from minirl_lm.pg.clip import clip_fraction, clipped_surrogate
from minirl_lm.pg.grpo import grpo_loss
from minirl_lm.values.critic import gae

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


# what the report says of each bug of the zoo: its last line, then its notes
ZOO_NOTES = {
    "clip_fraction_sign": (
        "flagged: 9 of 9 cases (max rel err 1.75e+00)",
        [
            (
                "finding: yours counts every ratio outside the range, whatever the sign of A: the "
                "clip fraction counted with the wrong sign "
                "(bugs.md#the-clip-fraction-counted-with-the-wrong-sign)"
            ),
        ],
    ),
    "singleton_raw_reward": (
        "flagged: 3 of 57 cases (max rel err 2.37e+08)",
        [
            "pattern: flagged only on cases with [baseline mean]",
            (
                "pattern: flagged only on cases with [groups of one]: a group of one keeps its raw "
                "reward (bugs.md#a-group-of-one-keeps-its-raw-reward)"
            ),
            "finding: your baseline='mean' computes the reference's baseline='none'",
        ],
    ),
    "equal_rewards_residue": (
        "flagged: 2 of 57 cases (max rel err 1.39e-01)",
        [
            "pattern: flagged only on cases with [baseline standardized]",
            (
                "pattern: flagged only on cases with [equal non-dyadic groups]: equal rewards and "
                "floating point residue (bugs.md#equal-rewards-and-floating-point-residue)"
            ),
        ],
    ),
    "batch_not_group_statistics": (
        "flagged: 14 of 15 cases (max rel err 1.00e+08)",
        [
            (
                "finding: group 0's output moves when only the other groups' rewards move: batch "
                "statistics instead of group statistics "
                "(bugs.md#batch-statistics-instead-of-group-statistics)"
            ),
        ],
    ),
    "kl_estimator_fallthrough": (
        "flagged: 3 of 9 cases (max rel err 3.33e+00)",
        [
            "pattern: the differences sit only at [a real token] and [the last real token]",
            "pattern: flagged only on cases with [estimator k1]",
            (
                "finding: your estimator='k1' computes the reference's estimator='k3': a kl "
                "estimator falls through to k3 (bugs.md#a-kl-estimator-falls-through-to-k3)"
            ),
        ],
    ),
    "kl_coefficient_ignored": (
        "flagged: 225 of 225 cases (max rel err 1.33e+00)",
        [
            (
                "finding: yours equals the reference at beta = 0: beta never reaches the result: the "
                "kl coefficient silently ignored (bugs.md#the-kl-coefficient-silently-ignored)"
            ),
        ],
    ),
    "kl_loss_maximized": (
        "flagged: 225 of 225 cases (max rel err 2.66e+00)",
        [
            (
                "finding: yours equals the reference at -beta: the KL enters with the wrong sign: "
                "the kl loss maximized (bugs.md#the-kl-loss-maximized)"
            ),
        ],
    ),
    "token_kl_summed_at_the_end": (
        "flagged: 4 of 4 cases (max rel err 1.07e+00)",
        [
            "pattern: the differences sit only at [a real token] and [the last real token]",
            (
                "finding: each row sums to the reference's row sum, spread differently over its "
                "tokens: the token level kl paid as a sequence kl at the end "
                "(bugs.md#the-token-level-kl-paid-as-a-sequence-kl-at-the-end)"
            ),
        ],
    ),
    "gae_reads_masked_values": (
        "flagged: 4 of 4 cases (max rel err 7.61e-01)",
        [
            (
                "pattern: the differences sit only at [the last real token]: gae reads the critics "
                "value at padding (bugs.md#gae-reads-the-critics-value-at-padding)"
            ),
        ],
    ),
    "dual_clip_positive_advantage": (
        "flagged: 75 of 90 cases (max rel err 3.41e+01)",
        [
            ("pattern: the differences sit only at [rho < 1-eps, A > 0] and [rho inside the clip range, A > 0]"),
            (
                "pattern: the differences sit only at tokens with A > 0: dual clip on positive "
                "advantages (bugs.md#dual-clip-on-positive-advantages)"
            ),
        ],
    ),
    "dual_clip_constant_below_one": (
        "flagged: 15 of 90 cases (max rel err inf)",
        [
            (
                "pattern: flagged only on cases with [c 0.9]: a dual clip constant below one "
                "(bugs.md#a-dual-clip-constant-below-one)"
            ),
            ("pattern: flagged only where the reference refuses its input: yours must raise there too"),
        ],
    ),
    "accumulation_divides_twice": (
        "flagged: 12 of 60 cases (max rel err 6.67e-01)",
        [
            "pattern: the differences sit only at [a real token] and [the last real token]",
            "pattern: flagged only on cases with [mode dapo]",
            (
                "finding: yours is the reference divided by G once more: the accumulation normalizer "
                "divided twice (bugs.md#the-accumulation-normalizer-divided-twice)"
            ),
        ],
    ),
    "ipo_summed_not_averaged": (
        "flagged: 6 of 12 cases (max rel err 2.07e+00)",
        [
            "pattern: flagged only on cases with [average True]",
            (
                "finding: your average=True computes the reference's average=False: ipo on summed "
                "log ratios where averaged ones were meant "
                "(bugs.md#ipo-on-summed-log-ratios-where-averaged-ones-were-meant)"
            ),
        ],
    ),
    "gae_reset_at_observations": (
        "flagged: 3 of 6 cases (max rel err 6.68e-01)",
        [
            "pattern: the differences sit only at [a real token]",
            "pattern: flagged only on cases with [carry True]",
            (
                "finding: your carry=True computes the reference's carry=False: returns and gae "
                "reset at every observation token "
                "(bugs.md#returns-and-gae-reset-at-every-observation-token)"
            ),
        ],
    ),
    "observation_tokens_trained": (
        "flagged: 1 of 1 cases (max rel err inf)",
        [
            (
                "finding: yours keeps every token of the episode, the tool outputs too: observation "
                "tokens trained on (bugs.md#observation-tokens-trained-on)"
            ),
        ],
    ),
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
    last, notes = ZOO_NOTES[mutant.name]
    assert text.splitlines()[-1] == last
    assert [line for line in text.splitlines() if line.startswith(("pattern:", "finding:"))] == notes
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


PROG = "python -m minirl_lm.grade: error: "
EXERCISE_NAMES = "logprob, gae, advantages, clip, kl, grpo, overlong, dpo, ipo, is_weights, entropy"


def _usage_error(argv, capsys):
    """The last line `main(argv)` writes to stderr, after checking it exits 2 with no traceback."""
    with pytest.raises(SystemExit) as e:
        grade.main(argv)
    out, err = capsys.readouterr()
    assert e.value.code == 2 and out == "" and "Traceback" not in err, err
    assert err.startswith("usage: python -m minirl_lm.grade [-h] [--list] [--only ARG=V1,V2]"), err
    return err.splitlines()[-1]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["nope", "x.py"], f"NAME: expected one of {EXERCISE_NAMES}, got 'nope'"),
        ([], f"NAME: expected one of {EXERCISE_NAMES}, got None"),
        (["clip", "missing.py"], "FILE: expected a Python file, got 'missing.py'"),
        (["clip"], "FILE: expected a Python file, got None"),
        (["clip", "minirl_lm"], "FILE: expected a Python file, got 'minirl_lm'"),
        (["clip", "README.md"], "FILE: expected a Python file, got 'README.md'"),  # a file, but not Python
        (["clip", "minirl_lm/pg/clip.py", "--only", "agg"], "--only: expected ARG=V1,V2, got 'agg'"),
        (["clip", "minirl_lm/pg/clip.py", "--only", "=x"], "--only: expected ARG=V1,V2, got '=x'"),
        (["clip", "minirl_lm/pg/clip.py", "--only", "agg="], "--only: expected ARG=V1,V2, got 'agg='"),
        (
            ["clip", "minirl_lm/pg/clip.py", "--only", "agg=seq_sum=x"],
            "only: agg takes [\"'constant'\", \"'seq_mean_token_mean'\", \"'seq_sum'\", \"'token_mean'\", "
            "\"'token_sum'\"], got 'seq_sum=x'",
        ),
        (
            ["clip", "minirl_lm/pg/clip.py", "--rtol", "-1"],
            "--rtol and --seed: expected numbers >= 0, got -1.0 and 0",
        ),
        (
            ["clip", "minirl_lm/pg/clip.py", "--rtol", "nan"],
            "--rtol and --seed: expected numbers >= 0, got nan and 0",
        ),
        (
            ["clip", "minirl_lm/pg/clip.py", "--seed", "-1"],
            "--rtol and --seed: expected numbers >= 0, got 1e-06 and -1",
        ),
        (
            ["clip", "minirl_lm/pg/clip.py", "--only", "nosuch=1"],
            "only: the reference has no varied argument 'nosuch' (it has "
            "['adv', 'agg', 'eps', 'eps_high', 'logp', 'logp_old', 'mask', 'max_len'])",
        ),
    ],
)
def test_cli_bad_arguments_are_usage_errors(argv, message, capsys):
    assert _usage_error(argv, capsys) == PROG + message


@pytest.mark.parametrize(
    "source, message",
    [
        ("x = 1\n\n\ndef other():\n    pass\n\n\ndef _private():\n    pass\n", "(it defines: other)"),
        ("def b():\n    pass\n\n\ndef a():\n    pass\n", "(it defines: a, b)"),
        ("clipped_surrogate = 3\n", "(it defines: none)"),
        ("", "(it defines: none)"),
    ],
)
def test_cli_a_file_without_the_function_names_what_it_defines(source, message, tmp_path, capsys):
    mine = tmp_path / "mine.py"
    mine.write_text(source)
    expected = f"FILE: {mine} defines no function clipped_surrogate {message}"
    assert _usage_error(["clip", str(mine)], capsys) == PROG + expected


def test_cli_a_file_that_fails_to_run_is_a_usage_error(tmp_path, capsys):
    mine = tmp_path / "mine.py"
    mine.write_text("raise RuntimeError('boom')\n")
    assert _usage_error(["clip", str(mine)], capsys) == PROG + f"FILE: {mine} fails to load: RuntimeError: boom"


def test_cli_is_wired_as_a_module():
    out = subprocess.run(
        [sys.executable, "-m", "minirl_lm.grade", "clip", "minirl_lm/pg/clip.py", "--only", "agg=token_mean"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert (
        out.returncode == 0
        and out.stdout.splitlines()[-1] == "clip: your clipped_surrogate agrees with the reference"
    )
    out = subprocess.run(
        [sys.executable, "-m", "minirl_lm.grade", "nope"], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr


def test_cli_exits_0_on_agreement_with_rtol_0_and_lists_the_exercises(capsys):
    assert grade.main(["clip", "minirl_lm/pg/clip.py", "--rtol", "0", "--only", "agg=token_mean,seq_sum"]) == 0
    assert "clip: your clipped_surrogate agrees with the reference" in capsys.readouterr().out
    assert grade.main(["--list"]) == 0 and "clipped_surrogate(logp, logp_old" in capsys.readouterr().out


WRONG_CLIP = """from minirl_lm.pg.clip import clipped_surrogate as _ref

SEEN = []


def clipped_surrogate(**kw):
    SEEN.append(kw)
    loss, grad = _ref(**kw)
    return loss * 1.001, grad
"""


def test_cli_prints_the_report_of_grade_then_the_verdict(tmp_path, capsys):
    mine = tmp_path / "mine.py"
    mine.write_text(WRONG_CLIP)
    assert grade.main(["clip", str(mine), "--only", "agg=token_mean"]) == 1
    out = capsys.readouterr().out
    seen = sys.modules["_graded_mine"].SEEN
    fn = sys.modules["_graded_mine"].clipped_surrogate
    text, agrees = grade.grade(fn, "clip", seed=0, only={"agg": ["token_mean"]}, rtol=1e-6)
    assert not agrees and out == text + "\nclip: flagged (see above)\n"
    assert "flagged: 12 of 12 cases (max rel err 1.00e-03)" in text.splitlines()
    # the default seed is 0: yours saw the cases of seed 0
    from minirl_lm import oracle

    cases = [kw for _, kw in oracle.cases(grade.EXERCISES["clip"][0], 0, {"agg": ["token_mean"]})]
    assert np.array_equal(seen[0]["logp"], cases[0]["logp"])
    assert grade.main(["clip", str(mine), "--only", "agg=token_mean", "--seed", "3", "--rtol", "0.01"]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "flagged: 0 of 12 cases (max rel err 1.00e-03)",
        "clip: your clipped_surrogate agrees with the reference",
    ]
    cases = [kw for _, kw in oracle.cases(grade.EXERCISES["clip"][0], 3, {"agg": ["token_mean"]})]
    assert np.array_equal(sys.modules["_graded_mine"].SEEN[0]["logp"], cases[0]["logp"])  # loaded anew


def test_cli_only_reads_numbers_booleans_and_none(tmp_path, capsys):
    assert grade.main(["clip", "minirl_lm/pg/clip.py", "--only", "eps=0.1", "--only", "agg=seq_sum"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "ok       0.00e+00  right-padded, eps 0.1, agg seq_sum: returns" and len(lines) == 5
    assert grade._only(["a=True,False,None,1,2.5,x.y,1.2.3", "b=v"]) == {
        "a": [True, False, None, 1.0, 2.5, "x.y", "1.2.3"],
        "b": ["v"],
    }
    assert grade._only(None) is None and grade._only([]) is None


def test_cli_lists_the_exercises_one_line_each(capsys):
    assert grade.main(["--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 11 and [line[:12] for line in lines] == [f"{n:11} " for n in grade.EXERCISES]
    assert lines[0] == "logprob     token_logp(logits, tokens, mask)  (docs/primitive.md)"
    assert lines[1] == "gae         gae(deltas, mask, gamma=1.0, lam=1.0)  (docs/token_vs_sequence.md)"


def test_cli_help_names_the_exercises_and_the_options(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit) as e:
        grade.main(["--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0
    assert "Grade your own implementation of an estimator, and name the bug when it is a known one." in out
    for line in (
        f"  NAME              an exercise: {EXERCISE_NAMES}",
        "  FILE              your Python file",
        "  --list            list the exercises and exit",
        "  --only ARG=V1,V2  grade these option values only",
        "  --rtol RTOL       relative tolerance (default 1e-6; 0 allowed)",
        "  --seed SEED       the cases' seed (default 0)",
    ):
        assert line in out.splitlines(), out


# ---- patterns: each position's class, as the report names it --------------------------------------
UP, DOWN, IN = "rho > 1+eps_high, A {}", "rho < 1-eps, A {}", "rho inside the clip range, A {}"
PAD, LAST, REAL = "padding", "the last real token", "a real token"
PAD_LINE = ": something computed at padding before the mask (an exp of garbage, a term left unmasked)"


def _clip_case(**knobs):
    """Four rows: A > 0, A < 0, A = 0 and an empty row; ratios 1.3, 0.7 and one inside; garbage at padding."""
    mask = np.array([[1, 1, 1, 0], [1, 1, 1, 0], [1, 1, 0, 0], [0, 0, 0, 0]], float)
    rho = np.array([[1.3, 0.7, 1.1, 1.0], [1.3, 0.7, 1.0, 1.0], [1.3, 0.7, 1.0, 1.0], [1.0] * 4])
    logp = np.where(mask > 0, np.log(rho), 900.0)  # (B, T)
    return dict(logp=logp, logp_old=np.zeros((4, 4)), adv=np.array([1.0, -1.0, 0.0, 2.0]), mask=mask, **knobs)


def _classes_seen(kw, reference=None):
    """The class `patterns` names for a difference at each single position of the case `kw`."""
    out = []
    for b, t in np.ndindex(kw["mask"].shape):
        row = oracle.Row("c", 1.0, "returns", (("loss", 1.0),), ((b, t),))
        lines = grade.patterns([row], [kw], reference or grpo_loss)
        cls = re.fullmatch(r"pattern: the differences sit only at \[(.+?)\](.*)", lines[0]).group(1)
        sign = [
            f"pattern: the differences sit only at tokens with {s}" for s in ("A > 0", "A < 0") if cls.endswith(s)
        ]
        tail = {
            PAD: PAD_LINE,
            LAST: ": gae reads the critics value at padding (bugs.md#gae-reads-the-critics-value-at-padding)",
        }
        assert lines == [f"pattern: the differences sit only at [{cls}]{tail.get(cls, '')}", *sign], lines
        out.append(cls)
    return np.array(out, dtype=object).reshape(kw["mask"].shape).tolist()


def test_patterns_name_the_clip_region_and_the_sign_of_each_position():
    P, N = "> 0", "< 0"
    assert _classes_seen(_clip_case()) == [
        [UP.format(P), DOWN.format(P), IN.format(P), PAD],
        [UP.format(N), DOWN.format(N), IN.format(N), PAD],
        ["A = 0", "A = 0", PAD, PAD],
        [PAD] * 4,
    ]
    assert _classes_seen(_clip_case(eps=0.2, eps_high=None)) == _classes_seen(_clip_case())
    assert _classes_seen(_clip_case(eps=0.35)) == [  # 0.7 and 1.3 inside [0.65, 1.35]
        [IN.format(P), IN.format(P), IN.format(P), PAD],
        [IN.format(N), IN.format(N), IN.format(N), PAD],
        ["A = 0", "A = 0", PAD, PAD],
        [PAD] * 4,
    ]
    assert _classes_seen(_clip_case(eps=0.35, eps_high=0.25))[:2] == [  # [0.65, 1.25]
        [UP.format(P), IN.format(P), IN.format(P), PAD],
        [UP.format(N), IN.format(N), IN.format(N), PAD],
    ]
    per_token = _clip_case(eps=0.2)
    per_token["adv"] = np.array([[1.0, -1.0, 0.0, 5.0], [-1.0, 1.0, 2.0, 0.0], [0.0, 3.0, 1.0, 1.0], [1.0] * 4])
    assert _classes_seen(per_token)[:3] == [
        [UP.format(P), DOWN.format(N), "A = 0", PAD],
        [UP.format(N), DOWN.format(P), IN.format(P), PAD],
        ["A = 0", DOWN.format(P), PAD, PAD],
    ]


def test_patterns_name_the_last_real_token_without_ratios():
    mask = np.array([[1, 1, 1, 0], [1, 0, 1, 0], [0, 0, 0, 0], [1, 0, 0, 0]], float)
    assert _classes_seen({"mask": mask, "deltas": np.zeros((4, 4))}) == [
        [REAL, REAL, LAST, PAD],
        [REAL, PAD, LAST, PAD],
        [PAD] * 4,
        [LAST, PAD, PAD, PAD],
    ]
    no_old = {"mask": mask, "logp": np.zeros((4, 4)), "adv": np.ones(4)}  # a ratio needs logp_old too
    assert _classes_seen(no_old)[1] == [REAL, PAD, LAST, PAD]


def test_patterns_read_an_overflowing_ratio_and_garbage_at_padding_without_a_warning():
    kw = _clip_case()
    kw["logp"][0, 0] = 800.0  # rho = inf: above the range
    kw["logp"][1, 3] = kw["logp_old"][1, 3] = np.inf  # inf - inf at padding
    assert [row[0] for row in _classes_seen(kw)[:2]] == [UP.format("> 0"), UP.format("< 0")]
    assert _classes_seen(kw)[1][3] == PAD


@pytest.mark.parametrize("kwargs, got", [([{}, 1], "list"), ("ab", "str"), ({"a": 1}, "dict")])
def test_patterns_takes_a_list_of_dicts(kwargs, got):
    rows = [oracle.Row("a", 0.0, "returns"), oracle.Row("b", 0.0, "returns")]
    with pytest.raises(TypeError) as e:
        grade.patterns(rows, kwargs, standardized)
    assert str(e.value) == f"kwargs: expected a list of dicts (each case's arguments), got {got}"


def _notes(text):
    return [line for line in text.splitlines() if line.startswith(("pattern:", "finding:"))]


PADDING_NOTE = f"yours is NaN where the reference is finite (0 * inf){PAD_LINE}"


@pytest.mark.parametrize(
    "bug, notes",
    [
        ("unmasked KL", [f"pattern: the differences sit only at [padding]{PAD_LINE}", f"pattern: {PADDING_NOTE}"]),
        ("exp before the mask", [f"pattern: {PADDING_NOTE}"]),
        (
            "swapped bounds",
            [
                "pattern: the differences sit only at [rho < 1-eps, A < 0]",
                "pattern: the differences sit only at tokens with A < 0",
                "pattern: flagged only on cases with [eps_high 0.28]",
                "finding: yours equals the reference with eps and eps_high swapped: the clip bounds swapped, "
                "1 - eps_high and 1 + eps (clip.md)",
            ],
        ),
    ],
)
def test_the_notes_of_each_planted_grpo_bug_exactly(bug, notes):
    text, agrees = grade.grade(functools.partial(trl_grpo, bug=bug), grpo_loss)
    assert not agrees and _notes(text) == notes, _notes(text)


def test_the_notes_of_trl_s_advantage_exactly():
    text, _ = grade.grade(trl_advantage, standardized)
    assert _notes(text) == [
        f"finding: {grade.TRL} (on 9 of 15 flagged cases): bessel versus population standard deviation at k 2 "
        "(confusions.md#bessel-versus-population-standard-deviation-at-k-2)"
    ]
    text, _ = grade.grade(trl_advantage, functools.partial(standardized, std_eps=1e-4, ddof=1))
    assert _notes(text) == [
        f"pattern: flagged only on cases with [{lab}] or another known input: {title} (bugs.md#{anchor})"
        for lab, title, anchor in [
            ("groups of one", "a group of one keeps its raw reward", "a-group-of-one-keeps-its-raw-reward"),
            (
                "equal non-dyadic groups",
                "equal rewards and floating point residue",
                "equal-rewards-and-floating-point-residue",
            ),
        ]
    ]


REAL_AND_LAST = "pattern: the differences sit only at [a real token] and [the last real token]"
TIMES = "finding: yours is the reference times 1.001 on every flagged case"
OFF_BY_A_FACTOR = {  # exercise: (flagged, cases, notes)
    "logprob": (3, 3, [REAL_AND_LAST, TIMES]),
    "gae": (6, 6, [REAL_AND_LAST, TIMES]),
    "advantages": (42, 57, [TIMES]),
    "clip": (60, 60, [TIMES]),
    "kl": (90, 90, [REAL_AND_LAST, TIMES]),
    "grpo": (225, 225, [TIMES]),
    "overlong": (2, 2, [TIMES]),
    "dpo": (8, 8, []),
    "ipo": (12, 12, []),
    "is_weights": (36, 36, [REAL_AND_LAST, TIMES]),
    "entropy": (30, 30, [TIMES]),
}


@pytest.mark.parametrize("name", list(grade.EXERCISES))
def test_a_solution_off_by_a_constant_factor_is_named_by_it(name):
    ref = grade.EXERCISES[name][0]

    def wrong(**kw):
        out = ref(**kw)
        return (
            tuple(x if isinstance(x, tuple) else x * 1.001 for x in out) if isinstance(out, tuple) else out * 1.001
        )

    text, agrees = grade.grade(wrong, name)
    flagged, cases, notes = OFF_BY_A_FACTOR[name]
    assert not agrees and text.splitlines()[-1] == f"flagged: {flagged} of {cases} cases (max rel err 1.00e-03)"
    assert _notes(text) == notes


def test_a_knob_flipped_or_ignored_is_named():
    def flipped(rewards, std_eps=1e-8, ddof=0):
        return standardized(rewards, std_eps=std_eps, ddof=1 - ddof)

    text, agrees = grade.grade(flipped, standardized)
    assert not agrees and text.splitlines()[-1] == "flagged: 9 of 15 cases (max rel err 4.14e-01)"
    assert _notes(text) == [
        "finding: yours uses ddof=1 (the reference is given ddof=0): bessel versus population standard deviation "
        "at k 2 (confusions.md#bessel-versus-population-standard-deviation-at-k-2)",
        "finding: yours ignores ddof: it computes the default ddof=0",
        "finding: yours uses ddof=0 (the reference is given ddof=1)",
    ]

    def gamma_ignored(deltas, mask, gamma=1.0, lam=1.0):
        return gae(deltas, mask, gamma=1.0, lam=lam)

    text, agrees = grade.grade(gamma_ignored, "gae")
    assert not agrees and _notes(text) == [
        f"pattern: the differences sit only at [{REAL}]",
        "pattern: flagged only on cases with [gamma 0.9]",
        "finding: yours ignores gamma: it computes the default gamma=1.0",
    ]


def test_a_ratio_at_the_edge_of_the_range_is_inside_it():
    kw = _clip_case(eps=0.0, eps_high=0.0)  # the range is [1, 1]: rho = 1 exactly sits on both edges
    assert _classes_seen(kw)[:2] == [
        [UP.format("> 0"), DOWN.format("> 0"), UP.format("> 0"), PAD],
        [UP.format("< 0"), DOWN.format("< 0"), IN.format("< 0"), PAD],
    ]


def test_a_hypothesis_holds_at_rtol_0_when_it_is_exact():
    def gamma_ignored(deltas, mask, gamma=1.0, lam=1.0):
        return gae(deltas, mask, gamma=1.0, lam=lam)

    text, _ = grade.grade(gamma_ignored, "gae", rtol=0.0)
    assert _notes(text)[-1] == "finding: yours ignores gamma: it computes the default gamma=1.0"


GRPO_K3 = {"kl_estimator": ["k3"], "agg": ["token_mean"]}


@pytest.mark.parametrize(
    "change, note",
    [
        (
            lambda kw: {**kw, "beta": 0.0},
            "finding: yours equals the reference at beta = 0: beta never reaches the result: the kl coefficient "
            "silently ignored (bugs.md#the-kl-coefficient-silently-ignored)",
        ),
        (
            lambda kw: {**kw, "beta": -kw.get("beta", 0.04)},
            "finding: yours equals the reference at -beta: the KL enters with the wrong sign: the kl loss "
            "maximized (bugs.md#the-kl-loss-maximized)",
        ),
    ],
)
def test_beta_ignored_or_negated_is_named(change, note):
    text, agrees = grade.grade(lambda **kw: trl_grpo(**change(kw)), grpo_loss, only=GRPO_K3)
    assert not agrees and _notes(text) == [note]


def test_an_option_computing_another_is_named():
    def clip_agg(**kw):
        agg = kw.get("agg", "token_mean")
        return clipped_surrogate(**{**kw, "agg": "seq_sum" if agg == "token_mean" else agg})

    text, agrees = grade.grade(clip_agg, "clip")
    assert not agrees and text.splitlines()[-1] == "flagged: 12 of 60 cases (max rel err 2.33e+00)"
    assert _notes(text) == [
        "pattern: flagged only on cases with [agg token_mean]: per sequence token mean token mean constant "
        "normalizer (confusions.md#per-sequence-token-mean-token-mean-constant-normalizer)",
        "finding: your agg='token_mean' computes the reference's agg='seq_sum'",
    ]

    def dpo_as_ipo(**kw):  # the variants are a tuple of dpo.py only
        variant = kw.get("variant", "dpo")
        return dpo_loss(**{**kw, "variant": "ipo" if variant == "dpo" else variant})

    text, agrees = grade.grade(dpo_as_ipo, "dpo")
    assert not agrees and _notes(text) == [
        "pattern: flagged only on cases with [variant dpo]",
        "finding: your variant='dpo' computes the reference's variant='ipo'",
    ]


def test_patterns_core_reads_an_overflowing_ratio_without_a_warning():
    kw = _clip_case()
    kw["logp"][0, 0] = 800.0  # rho = inf (overflow)
    kw["logp"][1, 0] = kw["logp_old"][1, 0] = np.inf  # rho = nan (inf - inf)
    rows = [oracle.Row("c", 1.0, "returns", (("loss", 1.0),), ((b, 0),)) for b in (0, 1)]
    lines = [grade.patterns.core([r], [kw], grpo_loss, 1e-6)[0] for r in rows]  # the body, without the boundary
    assert lines == [
        "pattern: the differences sit only at [rho > 1+eps_high, A > 0]",
        "pattern: the differences sit only at [rho inside the clip range, A < 0]",  # nan compares False
    ]


def test_the_swap_is_tried_only_on_cases_with_eps_high():
    def swapped(**kw):  # swapped bounds where eps_high is given, and 0.1 % off elsewhere
        if kw.get("eps_high") is None:
            loss, grad = clipped_surrogate(**kw)
            return loss * 1.001, grad
        return clipped_surrogate(**{**kw, "eps": kw["eps_high"], "eps_high": kw.get("eps", 0.2)})

    text, agrees = grade.grade(swapped, "clip", only={"agg": ["token_mean"]})
    assert not agrees and text.splitlines()[-1] == "flagged: 12 of 12 cases (max rel err 1.88e-01)"
    assert _notes(text) == [
        "finding: yours equals the reference with eps and eps_high swapped: the clip bounds swapped, "
        "1 - eps_high and 1 + eps (clip.md)"
    ]


def _flagged_at(*positions):
    return [oracle.Row("c", 1.0, "returns", (("loss", 1.0),), positions)]


def test_patterns_name_two_classes_and_the_swap_of_the_bounds():
    kw = _clip_case()
    lines = grade.patterns(_flagged_at((0, 0), (1, 1)), [kw], grpo_loss)
    assert lines == [
        "pattern: the differences sit only at [rho < 1-eps, A < 0] and [rho > 1+eps_high, A > 0]: the clip bounds "
        "swapped, 1 - eps_high and 1 + eps (clip.md)"
    ]
    assert grade.patterns(_flagged_at((0, 0), (0, 1)), [kw], grpo_loss) == [
        "pattern: the differences sit only at [rho < 1-eps, A > 0] and [rho > 1+eps_high, A > 0]",
        "pattern: the differences sit only at tokens with A > 0",
    ]
    assert grade.patterns(_flagged_at((0, 0), (0, 3)), [kw], grpo_loss) == [
        "pattern: the differences sit only at [padding] and [rho > 1+eps_high, A > 0]",
        "pattern: the differences sit only at tokens with A > 0",
    ]
    assert grade.patterns(_flagged_at((1, 0), (1, 1), (1, 2)), [kw], grpo_loss) == [
        "pattern: the differences sit only at tokens with A < 0"
    ]
    assert grade.patterns(_flagged_at((0, 0), (1, 1), (2, 0)), [kw], grpo_loss) == []


def test_a_bound_knob_is_not_varied_and_the_next_one_still_is():
    text, agrees = grade.grade(trl_advantage, functools.partial(standardized, std_eps=1e-4))
    assert not agrees and text.splitlines()[-1] == "flagged: 7 of 10 cases (max rel err nan)"
    assert _notes(text) == [
        "finding: yours uses ddof=1 (the reference is given ddof=0) (on 3 of 5 flagged cases): bessel versus "
        "population standard deviation at k 2 (confusions.md#bessel-versus-population-standard-deviation-at-k-2)"
    ]
    text, agrees = grade.grade(trl_advantage, functools.partial(standardized, std_eps=1e-8))
    assert not agrees and text.splitlines()[-1] == "flagged: 10 of 10 cases (max rel err nan)"
    assert _notes(text) == []  # std_eps bound: TRL's pair is not tried


def test_the_swap_reads_eps_bound_by_the_reference_at_its_default():
    def swapped(**kw):  # no eps: the reference binds it
        if kw.get("eps_high") is None:
            return clipped_surrogate(**kw)
        return clipped_surrogate(**{**kw, "eps": kw["eps_high"], "eps_high": 0.2})

    reference = functools.partial(clipped_surrogate, eps=0.2)
    text, agrees = grade.grade(swapped, reference, only={"agg": ["token_mean"]})
    assert not agrees and text.splitlines()[-1] == "flagged: 3 of 9 cases (max rel err 1.88e-01)"
    assert _notes(text)[-1] == (
        "finding: yours equals the reference with eps and eps_high swapped: the clip bounds swapped, "
        "1 - eps_high and 1 + eps (clip.md)"
    )


def _eps_ignored_on_token_mean(**kw):
    """eps ignored under agg token_mean, 0.1 % off under the other aggregations (eps off its default only)."""
    if kw.get("eps", 0.2) == 0.2:
        return clipped_surrogate(**kw)
    if kw.get("agg") == "token_mean":
        return clipped_surrogate(**{**kw, "eps": 0.2})
    loss, grad = clipped_surrogate(**kw)
    return loss * 1.001, grad * 1.001


def test_a_hypothesis_is_shown_when_it_explains_at_least_half_the_flagged_cases():
    text, _ = grade.grade(_eps_ignored_on_token_mean, "clip", only={"agg": ["token_mean", "seq_sum"]})
    assert text.splitlines()[-1] == "flagged: 6 of 24 cases (max rel err 1.54e-01)"
    assert _notes(text) == [
        "pattern: flagged only on cases with [eps 0.1]",
        "finding: yours ignores eps: it computes the default eps=0.2 (on 3 of 6 flagged cases)",
    ]
    text, _ = grade.grade(_eps_ignored_on_token_mean, "clip", only={"agg": ["token_mean", "seq_sum", "token_sum"]})
    assert text.splitlines()[-1] == "flagged: 9 of 36 cases (max rel err 1.54e-01)"
    assert _notes(text) == ["pattern: flagged only on cases with [eps 0.1]"]  # 3 of 9: not shown


def test_a_factor_is_named_only_when_it_is_one_constant():
    def almost(**kw):  # the loss 0.1 % off, the gradient 0.1 % and 1e-7 off
        loss, grad = clipped_surrogate(**kw)
        return loss * 1.001, grad * 1.001 * (1 + 1e-7)

    text, _ = grade.grade(almost, "clip", only={"agg": ["token_mean"]})
    assert text.splitlines()[-1] == "flagged: 12 of 12 cases (max rel err 1.00e-03)" and _notes(text) == []

    def one_case(**kw):  # 0.1 % off on the case with holes and max_len 8 only
        loss, grad = clipped_surrogate(**kw)
        holes = (kw["mask"][:, :-1] < kw["mask"][:, 1:]).any()
        return (loss * 1.001, grad * 1.001) if holes and kw.get("max_len") == 8 else (loss, grad)

    text, _ = grade.grade(one_case, "clip", only={"agg": ["token_mean"]})
    assert text.splitlines()[-1] == "flagged: 1 of 12 cases (max rel err 1.00e-03)"
    assert _notes(text) == [
        "pattern: flagged only on cases with [holes]",
        "pattern: flagged only on cases with [max_len 8]",
        "finding: yours is the reference times 1.001 on every flagged case",
    ]


def test_the_clip_fraction_sign_bug_is_read_at_the_case_s_eps():
    def any_side(logp, logp_old, adv, mask, eps=0.2, eps_high=None):  # every ratio outside, whatever A
        hi = eps if eps_high is None else eps_high
        rho = np.exp(np.where(mask > 0, logp - logp_old, 0.0))
        return float((((rho < 1 - eps) | (rho > 1 + hi)) & (mask > 0)).sum() / max(mask.sum(), 1))

    note = (
        "finding: yours counts every ratio outside the range, whatever the sign of A: the clip fraction counted "
        "with the wrong sign (bugs.md#the-clip-fraction-counted-with-the-wrong-sign)"
    )
    for reference, only, last in [
        (clip_fraction, {"eps": [0.1]}, "flagged: 3 of 3 cases (max rel err 1.75e+00)"),
        (clip_fraction, {"eps_high": [0.28]}, "flagged: 3 of 3 cases (max rel err 7.50e-01)"),
        (functools.partial(clip_fraction, eps=0.2), None, "flagged: 6 of 6 cases (max rel err 1.25e+00)"),
    ]:  # the last: eps bound, read at its default
        text, agrees = grade.grade(any_side, reference, only=only)
        assert not agrees and text.splitlines()[-1] == last
        assert _notes(text) == [note]
    text, agrees = grade.grade.core(
        any_side, clip_fraction, 0, None, 1e-6
    )  # the body: padding's garbage stays masked
    assert not agrees and _notes(text) == [note]


def test_no_leak_is_named_at_rtol_0_when_group_0_does_not_move():
    text, _ = grade.grade(trl_advantage, standardized, rtol=0.0)
    assert text.splitlines()[-1] == "flagged: 15 of 15 cases (max rel err nan)"
    assert [line[:40] for line in _notes(text)] == ["finding: yours computes TRL's knobs, std"]


LEAK = (
    "finding: group 0's output moves when only the other groups' rewards move: batch statistics instead of "
    "group statistics (bugs.md#batch-statistics-instead-of-group-statistics)"
)


@pytest.mark.parametrize(
    "shape, last, leak",
    [
        ((2, 3), "flagged: 6 of 15 cases (max rel err 1.00e+07)", True),  # two groups of three
        ((3, 2), "flagged: 3 of 15 cases (max rel err 3.49e-01)", True),  # three groups of two
        ((6, 1), "flagged: 3 of 15 cases (max rel err 4.66e+07)", False),  # groups of one: nothing to leak from
    ],
)
def test_a_leak_across_groups_is_named_where_there_are_groups(shape, last, leak):
    def leaky(rewards, std_eps=1e-8, ddof=0):  # batch statistics on rewards of this shape only
        r = np.asarray(rewards, float)
        out = standardized(r, std_eps=std_eps, ddof=ddof)
        return out + r.mean() if r.shape == shape else out

    text, agrees = grade.grade(leaky, standardized)
    assert not agrees and text.splitlines()[-1] == last
    assert (LEAK in _notes(text)) == leak


def test_no_leak_is_named_when_group_0_reads_only_the_number_of_groups():
    def by_rows(rewards, std_eps=1e-8, ddof=0):  # the others' rewards never reach group 0; their count does
        r = np.asarray(rewards, float)
        return standardized(r, std_eps=std_eps, ddof=ddof) + 0.001 * len(r)

    text, agrees = grade.grade(by_rows, standardized)
    assert not agrees and text.splitlines()[-1] == "flagged: 15 of 15 cases (max rel err 6.00e+05)"
    assert _notes(text) == []


def test_the_other_groups_move_by_3r_plus_1():
    def above(
        rewards, std_eps=1e-8, ddof=0
    ):  # reads how many other rewards exceed -1/2, the fixed point of 3r + 1
        r = np.asarray(rewards, float)
        return standardized(r, std_eps=std_eps, ddof=ddof) + 0.001 * np.sum(r[1:] > -0.5)

    text, agrees = grade.grade(above, standardized)
    assert not agrees and text.splitlines()[-1] == "flagged: 15 of 15 cases (max rel err 4.00e+05)"
    assert _notes(text) == []  # 3r + 1 keeps each reward on its side of -1/2: group 0 does not move

    def scale_free(rewards, std_eps=1e-8, ddof=0):  # reads log_3 |r + 1/2| mod 1 of the others: 3r + 1 keeps it
        r = np.asarray(rewards, float)
        phase = np.round(np.log(np.abs(r[1:] + 0.5)) / np.log(3.0) % 1.0, 6)
        return standardized(r, std_eps=std_eps, ddof=ddof) + 0.001 * phase.sum()

    text, agrees = grade.grade(scale_free, standardized)
    assert not agrees and text.splitlines()[-1] == "flagged: 15 of 15 cases (max rel err 2.95e+05)"
    assert _notes(text) == []


def test_a_compact_view_wrong_in_its_values_is_not_called_one_that_keeps_the_tool_tokens():
    def off_rewards(env, ep):
        states, tokens, mask, rewards, pos = action_view(env, ep)
        return states, tokens, mask, rewards * 1.001 + 0.5, pos

    text, agrees = grade.grade(off_rewards, action_view)
    assert not agrees and text.splitlines()[-1] == "flagged: 1 of 1 cases (max rel err 5.01e-01)"
    assert _notes(text) == []


def _last_real_token(mask):
    last = np.zeros_like(mask)
    for b in np.flatnonzero(mask.sum(axis=1) > 0):
        last[b, np.flatnonzero(mask[b])[-1]] = 1.0
    return last


def test_rtol_decides_the_flagged_cases_and_the_positions_that_differ():
    text, agrees = grade.grade(lambda **kw: gae(**kw) * 1.001, "gae", rtol=0.01)
    assert (
        agrees and text.splitlines()[-1] == "flagged: 0 of 6 cases (max rel err 1.00e-03)" and _notes(text) == []
    )

    def gamma_ignored_and_off(deltas, mask, gamma=1.0, lam=1.0):  # 0.1 % off everywhere: within rtol 1 %
        return gae(deltas, mask, gamma=1.0, lam=lam) * 1.001

    text, agrees = grade.grade(gamma_ignored_and_off, "gae", rtol=0.01)
    assert text.splitlines()[-1] == "flagged: 2 of 6 cases (max rel err 2.13e-01)"
    assert _notes(text) == [  # the patterns read the flagged cases at rtol 1 % too
        f"pattern: the differences sit only at [{REAL}]",
        "pattern: flagged only on cases with [gamma 0.9]",
        "finding: yours ignores gamma: it computes the default gamma=1.0",
    ]

    def tiny_and_last(**kw):  # 1e-9 off at every real token, 0.1 off at the last one
        return gae(**kw) * (1 + 1e-9 * kw["mask"]) + 0.1 * _last_real_token(kw["mask"])

    text, _ = grade.grade(tiny_and_last, "gae")
    assert _notes(text) == [
        f"pattern: the differences sit only at [{LAST}]: gae reads the critics value at padding "
        "(bugs.md#gae-reads-the-critics-value-at-padding)"
    ]
    text, _ = grade.grade(tiny_and_last, "gae", rtol=0.0)
    assert _notes(text) == [REAL_AND_LAST]


def test_row_sums_kept_exactly_are_named_at_rtol_0():
    def rolled(**kw):  # each row's values moved one real token on: the same row sums
        out, m = gae(**kw), kw["mask"]
        moved = out.copy()
        for b in range(m.shape[0]):
            real = np.flatnonzero(m[b])
            moved[b, real] = out[b, np.roll(real, 1)]
        return moved

    text, _ = grade.grade(rolled, "gae", rtol=0.0)
    assert text.splitlines()[-1] == "flagged: 6 of 6 cases (max rel err 6.58e-01)"
    assert _notes(text) == [
        REAL_AND_LAST,
        "finding: each row sums to the reference's row sum, spread differently over its tokens: the token level "
        "kl paid as a sequence kl at the end (bugs.md#the-token-level-kl-paid-as-a-sequence-kl-at-the-end)",
    ]


def test_the_width_of_the_first_output_tells_the_tool_tokens_kept():
    def full_states(env, ep):  # the states of every token, the rest compact
        _, tokens, mask, rewards, pos = action_view(env, ep)
        return ep.states, tokens, mask, rewards, pos

    text, agrees = grade.grade(full_states, action_view)
    assert not agrees and _notes(text) == [
        "finding: yours keeps every token of the episode, the tool outputs too: observation tokens trained on "
        "(bugs.md#observation-tokens-trained-on)"
    ]


def test_grade_names_a_bad_reference():
    with pytest.raises(ValueError) as e:
        grade.grade(standardized, "nope")
    assert (
        str(e.value) == f"reference: expected an exercise ({', '.join(grade.EXERCISES)}) or a function, got 'nope'"
    )
    with pytest.raises(ValueError) as e:
        grade.grade(standardized, "n" * 300)
    message = f"reference: expected an exercise ({', '.join(grade.EXERCISES)}) or a function, got '{'n' * 300}'"
    assert str(e.value) == message[:200]
    with pytest.raises(TypeError) as e:
        grade.grade(standardized, 3)
    assert str(e.value) == "reference: expected a function of minirl_lm, got int"


def test_patterns_without_a_mask_name_no_position():
    rows = [oracle.Row("c", 1.0, "returns", (("result", 1.0),), ((0, 0),))]
    assert grade.patterns(rows, [{"rewards": np.zeros((2, 2))}], standardized) == []


def test_patterns_leave_the_default_label_out():
    rows = [oracle.Row("default", 1.0, "returns", (("result", 1.0),)), oracle.Row("other", 0.0, "returns")]
    assert grade.patterns(rows, [{}, {}], standardized) == []
    mask = np.ones((2, 2))
    rows = [
        oracle.Row("default, groups of one", 1.0, "returns", (("result", 1.0),), ((0, 0),)),
        oracle.Row("default, equal non-dyadic groups", 1.0, "returns", (("result", 1.0),), ((1, 0),)),
        oracle.Row("other", 0.0, "returns"),
    ]
    assert grade.patterns(rows, [{"mask": mask}, {"mask": mask}, {}], standardized) == [
        f"pattern: the differences sit only at [{REAL}]",
        "pattern: flagged only on cases with [groups of one] or another known input: a group of one keeps its raw "
        "reward (bugs.md#a-group-of-one-keeps-its-raw-reward)",
        "pattern: flagged only on cases with [equal non-dyadic groups] or another known input: equal rewards and "
        "floating point residue (bugs.md#equal-rewards-and-floating-point-residue)",
    ]


def test_the_tool_token_check_reads_action_view_only():
    from minirl_lm.reward.prm import prm_data

    ep = oracle.cases(action_view, 0)[0][1]["ep"]  # the episodes the grader draws: rows as wide as the episodes
    outcome = np.ones(ep.mask.shape[0])
    reference = functools.partial(prm_data, outcome=outcome)

    def off(env, ep):  # full-width rows, 0.1 % and 0.5 off
        return tuple(x * 1.001 + 0.5 for x in prm_data(env, ep, outcome))

    text, agrees = grade.grade(off, reference)
    assert not agrees and text.splitlines()[-1] == "flagged: 1 of 1 cases (max rel err 5.01e-01)"
    assert _notes(text) == ["finding: yours is the reference times 1.501 on every flagged case"]  # no tool tokens


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


def test_a_label_with_a_comma_inside_parentheses_is_one_input():
    """`groups (3, 2)` is one input's label: a bug seen only on those rewards is named by it whole."""

    def yours(rewards, baseline="standardized", std_eps=1e-8, ddof=0):
        out = advantages(rewards, baseline=baseline, std_eps=std_eps, ddof=ddof)
        return out * 2.0 if rewards.shape == (3, 2) else out

    text, agrees = grade.grade(yours, advantages, only={"baseline": ["mean"], "std_eps": [1e-8], "ddof": [0]})
    assert not agrees and "pattern: flagged only on cases with [groups (3, 2)]" in text.splitlines()
    assert grade._labels("groups (3, 2), baseline mean, ddof 1") == ["groups (3, 2)", "baseline mean", "ddof 1"]


def test_knobs_a_partial_binds_are_read_at_their_bound_values():
    """The swap hypothesis and the clip-fraction check read eps and eps_high where the reference's
    partial binds them (0.3 and 0.1 here), not at 0.2."""
    ref = functools.partial(clipped_surrogate, eps=0.3, eps_high=0.1)

    def swapped(logp, logp_old, adv, mask, agg="token_mean", max_len=None, eps=0.3, eps_high=0.1):
        return clipped_surrogate(logp, logp_old, adv, mask, eps=eps_high, eps_high=eps, agg=agg, max_len=max_len)

    text, agrees = grade.grade(swapped, ref, only={"agg": ["token_mean"]})
    assert not agrees and any(
        line.startswith("finding: yours equals the reference with eps and eps_high swapped")
        for line in text.splitlines()
    )

    def every_outside(logp, logp_old, adv, mask, eps_high=None, eps=0.3):
        rho = np.exp(np.where(mask > 0, logp - logp_old, 0.0))
        return (((rho < 1 - eps) | (rho > 1 + eps)) & (mask > 0)).sum() / max(mask.sum(), 1)

    text, agrees = grade.grade(every_outside, functools.partial(clip_fraction, eps=0.3))
    assert not agrees and any(
        line.startswith("finding: yours counts every ratio outside the range") for line in text.splitlines()
    )


def test_an_output_that_is_not_numbers_is_flagged_with_no_finding_and_exit_1(tmp_path, capsys):
    """Yours returning a word where the reference returns the loss: flagged (inf), no hypothesis
    tried (nothing to compare a variant with), and the command line exits 1, not 2."""

    def words(logp, logp_old, adv, mask, eps=0.2, eps_high=None, agg="token_mean", max_len=None):
        return "oops", clipped_surrogate(logp, logp_old, adv, mask, eps, eps_high, agg, max_len)[1]

    text, agrees = grade.grade(words, clipped_surrogate, only={"agg": ["token_mean"]})
    assert not agrees and not any(line.startswith("finding:") for line in text.splitlines())
    assert text.splitlines()[-1] == "flagged: 12 of 12 cases (max rel err inf)"
    mine = tmp_path / "mine.py"
    mine.write_text(
        "from minirl_lm.pg.clip import clipped_surrogate as c\n"
        "def clipped_surrogate(**kw):\n    return 'oops', c(**kw)[1]\n"
    )
    assert grade.main(["clip", str(mine), "--only", "agg=token_mean"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "clip: flagged (see above)"


def test_a_callable_object_is_a_reference_and_a_builtin_one_is_read_without_defaults():
    class Clip:  # no __name__, not a partial
        def __call__(self, logp, logp_old, adv, mask, eps=0.2, eps_high=None, agg="token_mean", max_len=None):
            return clipped_surrogate(logp, logp_old, adv, mask, eps, eps_high, agg, max_len)

    def doubled(**kw):
        return tuple(2 * x for x in clipped_surrogate(**kw))

    text, agrees = grade.grade(doubled, Clip(), only={"agg": ["token_mean"]})
    assert not agrees and "finding: yours is the reference times 2 on every flagged case" in text.splitlines()
    row = oracle.Row("c", 1.0, "returns", (("loss", 1.0),), ((0, 0),))
    kw = dict(logp=np.zeros((2, 3)), logp_old=np.zeros((2, 3)), adv=np.ones(2), mask=np.ones((2, 3)))
    assert grade.patterns([row], [kw], max) == ["pattern: the differences sit only at [a real token]"]


def test_the_position_classes_read_the_eps_a_partial_binds():
    """A ratio of 0.7 with A > 0 is below 1 - eps at the default eps 0.2, inside the range at a
    bound eps of 0.35."""
    row = oracle.Row("c", 1.0, "returns", (("loss", 1.0),), ((0, 1),))
    logp = np.zeros((2, 3))
    logp[0, 1] = np.log(0.7)
    kw = dict(logp=logp, logp_old=np.zeros((2, 3)), adv=np.ones(2), mask=np.ones((2, 3)))
    at = lambda ref: grade.patterns([row], [kw], ref)[0]  # noqa: E731
    assert at(clipped_surrogate) == "pattern: the differences sit only at [rho < 1-eps, A > 0]"
    assert at(functools.partial(clipped_surrogate, eps=0.35)) == (
        "pattern: the differences sit only at [rho inside the clip range, A > 0]"
    )

    def unclipped(logp, logp_old, adv, mask):  # no clip range: no clip region either
        return logp

    assert at(unclipped) == "pattern: the differences sit only at [a real token]"


def test_the_clip_fraction_check_reads_the_eps_of_a_reference_named_clip_fraction():
    """Yours counting every ratio outside [1 - eps, 1 + eps] is named against any reference called
    clip_fraction, at that reference's eps; one without an eps gets no such finding."""

    def every_outside(logp, logp_old, adv, mask, eps=0.3):
        rho = np.exp(np.where(mask > 0, logp - logp_old, 0.0))
        return (((rho < 1 - eps) | (rho > 1 + eps)) & (mask > 0)).sum() / max(mask.sum(), 1)

    def clip_fraction(logp, logp_old, adv, mask, eps=0.3):  # noqa: F811 -- a learner's own reference
        return globals()["clip_fraction"](logp, logp_old, adv, mask, eps=eps)

    def no_eps(logp, logp_old, adv, mask):
        return every_outside(logp, logp_old, adv, mask) + 0.5

    no_eps.__name__ = "clip_fraction"
    text = grade.grade(every_outside, clip_fraction)[0]
    assert "finding: yours counts every ratio outside the range" in text
    at_02 = functools.partial(every_outside, eps=0.2)  # what the check once assumed without an eps
    text = grade.grade(lambda logp, logp_old, adv, mask: at_02(logp, logp_old, adv, mask), no_eps)[0]
    assert "finding: yours counts every ratio" not in text and text.splitlines()[-1].startswith("flagged: 3 of 3 ")


@pytest.mark.parametrize("eps, eps_high, edge", [(0.2, 0.25, 1.25), (1 - 0.85, None, 0.85)])
def test_the_clip_fraction_check_counts_a_ratio_on_an_edge_as_inside(eps, eps_high, edge):
    """One drawn ratio is exactly 1.25 and one exactly 0.85: with eps_high bound to 0.25 (or eps to
    1 - 0.85) it sits on the edge, inside the range, for yours and for the check alike."""

    def every_outside(logp, logp_old, adv, mask, eps=eps, eps_high=eps_high):
        rho = np.exp(np.where(mask > 0, logp - logp_old, 0.0))
        hi = 1 + (eps if eps_high is None else eps_high)
        return (((rho < 1 - eps) | (rho > hi)) & (mask > 0)).sum() / max(mask.sum(), 1)

    kw = oracle.cases(clip_fraction)[0][1]
    assert (np.exp(np.where(kw["mask"] > 0, kw["logp"] - kw["logp_old"], 0.0)) == edge).sum() == 1
    assert (1 - eps if edge < 1 else 1 + eps_high) == edge
    text = grade.grade(every_outside, functools.partial(clip_fraction, eps=eps, eps_high=eps_high))[0]
    assert "finding: yours counts every ratio outside the range" in text
