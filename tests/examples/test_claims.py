"""The claims helper: a claim that holds returns its sentence; one that does not stops the run
(exit 1) in strict mode (the site and the tests: MINIRL_CLAIMS_STRICT=1) and is a plain printed
line anywhere else (exit 0)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import _claims  # noqa: E402


@pytest.fixture
def lenient(monkeypatch):
    monkeypatch.setenv(_claims.STRICT_ENV, "0")


def test_the_tests_run_strict():
    assert os.environ.get("MINIRL_CLAIMS_STRICT") == "1" and _claims.strict()


def test_a_claim_that_holds_returns_its_sentence_and_is_listed(capsys):
    s = _claims.claim(np.float64(1.0) < 2.0, "one is below two")
    assert s == "one is below two" and _claims.held()[-1] == s
    assert _claims.stated(np.bool_(True), "so is this") == "so is this"
    assert capsys.readouterr().out == ""


def test_a_claim_that_fails_raises_in_strict_mode():
    with pytest.raises(_claims.ClaimFailed, match="claim no longer holds: two is below one"):
        _claims.claim(2.0 < 1.0, "two is below one")
    with pytest.raises(_claims.ClaimFailed, match="claim no longer holds: two is below one"):
        _claims.stated(2.0 < 1.0, "two is below one", negation="two is above one")


def test_a_claim_that_fails_outside_strict_mode_prints_a_line_and_returns_it(lenient, capsys):
    line = _claims.claim(2.0 < 1.0, "two is below one")
    assert line == "at these settings, this does not hold: two is below one"
    assert capsys.readouterr().out == line + "\n"
    assert _claims.failed()[-1] == "two is below one" and _claims.held()[-1:] != ["two is below one"]
    line = _claims.claim(False, "two is below one", negation="two is above one")
    assert line == "at these settings: two is above one" and capsys.readouterr().out == line + "\n"
    # stated: the example prints the line itself, where the sentence would have been
    assert _claims.stated(False, "two is below one") == "at these settings, this does not hold: two is below one"
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("value", ["", "0", "strict", "true"])
def test_only_the_value_1_is_strict(monkeypatch, value):
    monkeypatch.setenv(_claims.STRICT_ENV, value)
    assert not _claims.strict()


@pytest.mark.parametrize(
    "ok, sentence, negation, frag",
    [
        (1, "s", None, "ok:"),
        (np.array([True]), "s", None, "ok:"),
        (True, "", None, "sentence:"),
        (True, "s", "", "negation:"),
        (True, "s", 3, "negation:"),
    ],
)
def test_a_claim_needs_a_bool_and_a_sentence(ok, sentence, negation, frag):
    for f in (_claims.claim, _claims.stated):
        with pytest.raises(TypeError, match=frag):
            f(ok, sentence, negation)


CODE = "import sys; sys.path.insert(0, 'examples'); from _claims import claim; "
CODE += "claim(True, 'a'); claim(False, 'b'); print('the run goes on')"


def _run(strict):
    env = {"MINIRL_CLAIMS": "1", "PATH": ""}
    if strict is not None:
        env["MINIRL_CLAIMS_STRICT"] = strict
    return subprocess.run([sys.executable, "-c", CODE], cwd=ROOT, capture_output=True, text=True, env=env)


def test_a_failed_claim_exits_non_zero_in_strict_mode_and_listing_prints_held_claims():
    r = _run("1")
    assert r.returncode == 1 and "claim no longer holds: b" in r.stderr and "claim 1: a" in r.stderr
    assert "ClaimFailed" in r.stderr and "the run goes on" not in r.stdout


@pytest.mark.parametrize("strict", [None, "0"])
def test_a_failed_claim_outside_strict_mode_prints_the_line_and_exits_0(strict):
    r = _run(strict)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "at these settings, this does not hold: b\nthe run goes on\n"
    assert "Traceback" not in r.stderr and "claim 1: a" in r.stderr and "claim not held: b" in r.stderr
