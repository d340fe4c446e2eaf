"""scripts/bugzoo.py: the edits are anchored by function name and syntax tree, not by text.

The zoo's own run (every mutant caught) is `python scripts/bugzoo.py` in CI; here only the
anchoring: every edit of the table applies to the current code, also after a reformat, and an edit
that no longer matches is an error, never a silent no-op.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import bugzoo  # noqa: E402

SRC = """\
def f(x, y):
    a = x + y            # (B, T) a comment
    if a > 0:
        b = a * 2
        c = b - 1
    return a


def g(x):
    a = x + 1
    return a


class K:
    def f(self, x):
        a = x + 1
        return a
"""


def test_a_statement_is_found_inside_its_function_whatever_its_spacing():
    out = bugzoo.apply_edit(SRC, "a = x+y", "a = x - y", "f")
    assert "    a = x - y\n" in out and "a = x + y" not in out
    assert out.count("a = x + 1") == 2  # g and K.f untouched
    # a run of two statements in a nested block, re-indented to its place
    out = bugzoo.apply_edit(SRC, "b = a * 2\nc = b - 1", "c = a", "f")
    assert "    if a > 0:\n        c = a\n    return a\n" in out


def test_the_function_scopes_the_match():
    assert "    a = x - 1\n    return a\n\n\nclass" in bugzoo.apply_edit(SRC, "a = x + 1", "a = x - 1", "g")
    out = bugzoo.apply_edit(SRC, "a = x + 1", "a = x - 1", "K.f")
    assert out.endswith("        a = x - 1\n        return a\n")
    with pytest.raises(bugzoo.Stale, match=r"edit text not found once .*\(2 matches\)"):
        bugzoo.apply_edit(SRC, "a = x + 1", "a = x - 1")  # the whole module: g and K.f


@pytest.mark.parametrize(
    "old, function, fragment",
    [
        ("a = x * y", "f", r"\(0 matches\)"),
        ("a = x + y", "h", "no function 'h'"),
        ("if a > 0:\n    b = a *", "f", "is not whole statements"),
    ],
)
def test_a_stale_edit_is_an_error(old, function, fragment):
    with pytest.raises(ValueError, match="edit text not found once") as e:
        bugzoo.apply_edit(SRC, old, "pass", function)
    assert e.match(fragment)


def test_every_edit_of_the_table_applies_once_and_changes_the_code():
    for m in bugzoo.MUTANTS:
        text = (ROOT / m.file).read_text()
        out = bugzoo.apply(m, text)
        assert out != text, m.name
        assert m.function, f"{m.name}: every mutant names its function"


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff not installed")
def test_a_reformat_does_not_stale_the_table():
    for m in bugzoo.MUTANTS:
        text = (ROOT / m.file).read_text()
        formatted = subprocess.run(
            ["ruff", "format", "--line-length", "79", "--stdin-filename", m.file, "-"],
            input=text,
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout
        assert formatted != text, m.file
        bugzoo.apply(m, formatted)  # raises Stale if an edit no longer matches
