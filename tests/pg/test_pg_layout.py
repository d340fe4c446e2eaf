"""The pg part's tests sit beside their module: every public function of minirl_lm/pg/<module>.py
(and of minirl_lm/tasks.py) is named in tests/pg/test_<module>.py (tests/test_tasks.py)."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(p for p in (ROOT / "minirl_lm" / "pg").glob("*.py") if p.stem != "__init__")
PAIRS = [(p, ROOT / "tests" / "pg" / f"test_{p.stem}.py") for p in MODULES] + \
        [(ROOT / "minirl_lm" / "tasks.py", ROOT / "tests" / "test_tasks.py")]


@pytest.mark.parametrize("module, tests", PAIRS, ids=[p.stem for p, _ in PAIRS])
def test_every_public_function_has_a_test_in_its_modules_file(module, tests):
    public = [n.name for n in ast.parse(module.read_text()).body
              if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]
    assert public, module
    text = tests.read_text() if tests.exists() else ""
    missing = [f for f in public if not re.search(rf"\b{f}\(", text)]
    assert not missing, f"{tests.relative_to(ROOT)} calls none of {missing}"
