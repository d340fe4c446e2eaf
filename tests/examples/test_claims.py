"""The claims helper: a claim that holds returns its sentence, one that fails stops the run (exit 1)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import _claims  # noqa: E402


def test_a_claim_that_holds_returns_its_sentence_and_is_listed():
    s = _claims.claim(np.float64(1.0) < 2.0, "one is below two")
    assert s == "one is below two" and _claims.held()[-1] == s


def test_a_claim_that_fails_raises():
    with pytest.raises(_claims.ClaimFailed, match="claim no longer holds: two is below one"):
        _claims.claim(2.0 < 1.0, "two is below one")


@pytest.mark.parametrize(
    "ok, sentence, frag", [(1, "s", "ok:"), (np.array([True]), "s", "ok:"), (True, "", "sentence:")]
)
def test_a_claim_needs_a_bool_and_a_sentence(ok, sentence, frag):
    with pytest.raises(TypeError, match=frag):
        _claims.claim(ok, sentence)


def test_a_failed_claim_exits_non_zero_and_listing_prints_held_claims():
    code = "import sys; sys.path.insert(0, 'examples'); from _claims import claim; "
    code += "claim(True, 'a'); claim(False, 'b')"
    r = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"MINIRL_CLAIMS": "1", "PATH": ""},
    )
    assert r.returncode == 1 and "claim no longer holds: b" in r.stderr and "claim 1: a" in r.stderr
