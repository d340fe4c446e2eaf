"""examples/bug_effects.py: every zoo bug has a visible effect, the unmutated code exactly none."""

import importlib.util
import re
import sys
from pathlib import Path

import example_runs  # each example command once per session, forked warm (tests/conftest.py)
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import bugzoo  # noqa: E402

_spec = importlib.util.spec_from_file_location("bug_effects", ROOT / "examples" / "bug_effects.py")
bug_effects = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bug_effects)

LINE = re.compile(r"^bug (\w+) +\((.+?)\): (.+)$")


def run(*args):
    return example_runs.run(
        [sys.executable, "examples/bug_effects.py", *args], cwd=ROOT, capture_output=True, text=True
    )


# started when the session starts (tests/conftest.py); the tests below then read their results
EXAMPLE_RUNS = [
    [sys.executable, "examples/bug_effects.py"],
    [
        sys.executable,
        "examples/bug_effects.py",
        "--only",
        "ipo_summed_not_averaged",
        "--only",
        "clip_fraction_sign",
        "--seed",
        "3",
    ],
]


def test_every_mutant_has_a_measurement():
    assert set(bug_effects.MEASURE) == {m.name for m in bugzoo.MUTANTS}


SLOW_MUTANTS = {"kl_loss_maximized", "kl_coefficient_ignored"}  # about 10 s each: exact GRPO paths


@pytest.mark.parametrize(
    "mutant",
    [pytest.param(m, marks=pytest.mark.slow) if m.name in SLOW_MUTANTS else m for m in bugzoo.MUTANTS],
    ids=lambda m: m.name,
)
def test_the_bug_is_visible_and_the_correct_code_shows_exactly_nothing(mutant):
    _, effect = bug_effects.measure(mutant)
    assert effect > 0
    _, effect0 = bug_effects.measure(mutant, pristine=True)
    assert effect0 == 0.0


def test_loading_never_writes_the_working_tree_and_keeps_the_real_module():
    m = next(x for x in bugzoo.MUTANTS if x.name == "kl_loss_maximized")
    before = (ROOT / m.file).read_text()
    mod = bug_effects.load(m)
    assert (ROOT / m.file).read_text() == before
    assert mod.grpo_loss is not bug_effects.grpo.grpo_loss
    assert "- beta * loss_kl" not in before


def test_a_stale_edit_is_an_error_not_a_silent_no_op():
    m = bugzoo.Mutant(
        "stale", "nowhere", "none", "minirl_lm/pg/clip.py", (("this text is not in clip.py", "x"),), ()
    )
    with pytest.raises(ValueError, match="edit text not found once"):
        bug_effects.load(m)


@pytest.mark.slow
def test_the_program_prints_one_line_per_mutant_in_zoo_order():
    out = run()
    assert out.returncode == 0, out.stderr
    rows = [LINE.match(line) for line in out.stdout.splitlines()]
    assert all(rows)
    assert [(r.group(1), r.group(2)) for r in rows] == [(m.name, m.source) for m in bugzoo.MUTANTS]
    text = dict((r.group(1), r.group(3)) for r in rows)
    assert text["clip_fraction_sign"] == (
        "reported clip fraction 0.500 where 0.250 of tokens are clipped (gradient zeroed)"
    )
    assert (
        "times the big batch's token mean (G = 4 micro-batches) where the correct code "
        "gives 1.000..1.000" in text["accumulation_divides_twice"]
    )
    assert text["accumulation_divides_twice"].startswith("every token's weight is 0.250..0.250")
    assert "8.0x (chosen, 8 tokens) and 4.0x (rejected, 4 tokens)" in text["ipo_summed_not_averaged"]
    assert "log-ratio 0.625 where 5.000" in text["ipo_summed_not_averaged"]
    var = re.search(
        r"variance .* ([\d.]+) where the correct code's is ([\d.]+): ([\d.]+)x, (\w+)$",
        text["batch_not_group_statistics"],
    )
    assert var and var[4] == ("lower" if float(var[1]) < float(var[2]) else "higher")
    assert (
        text["kl_estimator_fallthrough"].startswith("'k1' returns k3")
        and "(relative error 0.000)" in text["kl_estimator_fallthrough"]
    )


def test_a_claim_that_breaks_stops_the_measurement(monkeypatch):
    """A claim of the page checked on the mutant: reversed, it raises; on the pristine source
    the bug's claims are not checked."""
    m = next(x for x in bugzoo.MUTANTS if x.name == "dual_clip_positive_advantage")
    monkeypatch.setattr(bug_effects, "_claim", lambda ok, s: bug_effects.claim(not ok, s))
    with pytest.raises(AssertionError, match="claim no longer holds: every positive-advantage"):
        bug_effects.measure(m)


@pytest.mark.slow
def test_only_and_seed():
    out = run("--only", "ipo_summed_not_averaged", "--only", "clip_fraction_sign", "--seed", "3")
    assert out.returncode == 0, out.stderr
    names = [LINE.match(line).group(1) for line in out.stdout.splitlines()]
    assert names == ["ipo_summed_not_averaged", "clip_fraction_sign"]
