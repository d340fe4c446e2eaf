"""Shared test set-up.

- The helpers at the top of tests/ (gradcheck, quiet, the bad-input battery in tests/contract)
  import from every part's folder: both folders go on sys.path.
- The slow groups, the examples run as subprocesses (tests/examples/) and the standalone copies
  recorded and replayed (tests/copies/), carry the `slow` marker, so `pytest -m "not slow"` is the
  quick loop; a test elsewhere that takes long says `@pytest.mark.slow` itself.
- A run that spans several groups prints one line as it enters each (`tests/pg/`, ...), with the
  time since the start, so a long run says where it is.
"""

import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
# --import-mode=importlib (pyproject): test files of one name in two parts (pg/test_checks.py,
# core/test_checks.py) coexist; the helpers they share are imported from these folders.
for p in (HERE, HERE / "contract", HERE / "multiturn"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

SLOW_GROUPS = ("examples", "copies")


def _group(path):
    """`tests/<part>/` for a test file in a part's folder, `tests/` for one at the top."""
    rel = Path(path).resolve().relative_to(HERE)
    return f"tests/{rel.parts[0]}/" if len(rel.parts) > 1 else "tests/"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _group(item.path) in {f"tests/{g}/" for g in SLOW_GROUPS}:
            item.add_marker(pytest.mark.slow)
    groups = {_group(item.path) for item in items}
    config._progress = {"show": len(groups) > 1, "group": None, "start": time.perf_counter()}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    state = getattr(item.config, "_progress", None)
    if not state or not state["show"]:
        return
    group = _group(item.path)
    if group != state["group"]:
        state["group"] = group
        reporter = item.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            if getattr(reporter._tw, "width_of_current_line", 0):  # after a row of dots
                reporter.write("\n")
            reporter.write_line(f"[{time.perf_counter() - state['start']:7.1f} s] {group}")
