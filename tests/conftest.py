"""Shared test set-up.

- The helpers at the top of tests/ (gradcheck, quiet, the bad-input battery in tests/contract)
  import from every part's folder: both folders go on sys.path.
- The slow groups, the examples run as subprocesses (tests/examples/) and the standalone copies
  recorded and replayed (tests/copies/), carry the `slow` marker, so `pytest -m "not slow"` is the
  quick loop; a test elsewhere that takes long says `@pytest.mark.slow` itself.
- A run that spans several groups prints one line as it enters each (`tests/pg/`, ...), with the
  time since the start, so a long run says where it is.
- The standalone copies (tests/copies/test_standalone.py) replay the calls the package's own tests
  make. When the session runs the whole of tests/ (slow tests included), those calls are
  recorded in this process while the package's tests run (tests/copies/standalone_record.py,
  loaded before collection), and tests/copies/ runs last; any narrower session records them in a
  subprocess that runs the covering test files again, as the fixture always did.
- The tests of examples/ get an example's output through scripts/example_runs.py: a command runs
  once per session (its result kept per command, environment and hash of the sources) in a child
  forked from a process that has imported NumPy, Numba and the package; the end of the run says
  how many commands ran and how many were served again. The commands a test file declares in
  `EXAMPLE_RUNS` start when the session starts, two at a time (threads of their own), those of
  every file's `EXAMPLE_RUNS_FIRST` (its longest) before them, and tests/examples/ runs after the
  other parts: the examples run beside the in-process tests.
"""

import functools
import importlib.util
import os
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
# scripts/example_runs.py: the tests of examples/ run each example command once per session, in a
# process forked from a warm one (after the test folders: no script shadows a test helper)
if str(HERE.parent / "scripts") not in sys.path:
    sys.path.append(str(HERE.parent / "scripts"))

SLOW_GROUPS = ("examples", "copies")

# A test that needs the docs extra (a figure drawn with matplotlib, a site built with mkdocs) says
# @pytest.mark.docs_extra; where one of these does not import (the README's test command installs
# the `test` extra alone) it is skipped with the install line, and CI runs `pytest -m docs_extra`
# again with the `dev` extra.
DOCS_EXTRA = ("matplotlib", "mkdocs", "markdown_exec")


# Every option of every example at the ends of its range (tests/examples/test_cli_bounds.py):
# minutes of runs, so asked for by name (CI does): `python -m pytest -m cli_bounds`.
CLI_BOUNDS = "every example option at its bounds runs for minutes: python -m pytest -m cli_bounds (CI runs it)"


@functools.lru_cache(maxsize=None)
def _docs_extra_missing():
    return [m for m in DOCS_EXTRA if importlib.util.find_spec(m) is None]


# The session runs its examples on a second core beside the in-process tests: one BLAS thread for
# each (set before NumPy is first imported; the example servers inherit it), so that two BLAS
# pools do not put four threads on two cores.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# The size of Numba's thread pool as the session starts (None: one thread per core). Nothing the
# session imports may change it: tests/kernels/test_dense.py checks the pool the threaded kernels ran
# on, tests/examples/test_cli.py that no example sets a variable when imported.
NUMBA_THREADS_AT_START = os.environ.get("NUMBA_NUM_THREADS")


@pytest.fixture
def numba_threads_at_start():
    return NUMBA_THREADS_AT_START


# the examples' claims bind the page the tests check: one that no longer holds fails its run
# (examples/_claims.py); a test of the reader's mode sets the variable to "0" in a run's own env
os.environ.setdefault("MINIRL_CLAIMS_STRICT", "1")


def _group(path):
    """`tests/<part>/` for a test file in a part's folder, `tests/` for one at the top."""
    return _group_of(str(path))


@functools.lru_cache(maxsize=None)
def _resolved(path):
    return Path(path).resolve()


@functools.lru_cache(maxsize=None)  # asked once per test and file: ten thousand times a session
def _group_of(path):
    rel = _resolved(path).relative_to(HERE)
    return f"tests/{rel.parts[0]}/" if len(rel.parts) > 1 else "tests/"


def _whole_suite(config):
    """This session runs every test of tests/, the slow ones included (no -m, no -k)."""
    if os.environ.get("MINIRL_RECORD_OUT") or config.getoption("markexpr") or config.getoption("keyword"):
        return False
    args = [Path(config.invocation_params.dir, a.split("::")[0]).resolve() for a in config.args]
    return any(a == HERE or a in HERE.parents for a in args)


def pytest_configure(config):
    config._copies_record = None
    if not _whole_suite(config):
        return
    import standalone

    # the recorder reads its settings from the environment when imported; no subprocess inherits them
    os.environ["MINIRL_RECORD_MODULES"] = ",".join(map(standalone.dotted, standalone.copyable()))
    os.environ["MINIRL_RECORD_OUT"] = os.devnull  # tests/copies/test_standalone.py writes the records
    try:
        spec = importlib.util.spec_from_file_location(
            "standalone_record", HERE / "copies" / "standalone_record.py"
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules["standalone_record"] = module
        spec.loader.exec_module(module)
    finally:
        del os.environ["MINIRL_RECORD_MODULES"], os.environ["MINIRL_RECORD_OUT"]
    config._copies_record = module


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _group(item.path) in {f"tests/{g}/" for g in SLOW_GROUPS}:
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("cli_bounds") and "cli_bounds" not in (config.getoption("markexpr") or ""):
            item.add_marker(pytest.mark.skip(reason=CLI_BOUNDS))
        if item.get_closest_marker("docs_extra") and _docs_extra_missing():
            missing = ", ".join(_docs_extra_missing())
            reason = f'needs the docs extra (pip install -e ".[docs]"): {missing} not installed'
            item.add_marker(pytest.mark.skip(reason=reason))
    if config._copies_record is not None:  # the copies replay what every other test called: last
        items[:] = [i for i in items if _group(i.path) != "tests/copies/"] + [
            i for i in items if _group(i.path) == "tests/copies/"
        ]
        # the test files whose calls the copies replay (the ones the recording subprocess runs)
        mods = [i.module for i in items if i.path.name == "test_standalone.py"]
        config._copies_covering = (
            {(HERE.parent / f).resolve() for m in mods[0].COPYABLE for f in mods[0]._covering_tests(m)}
            if mods
            else set()
        )
    # tests/examples/ runs after the in-process tests (and before tests/copies/): the example
    # commands its files declare (EXAMPLE_RUNS) start now on two threads, each in a forked child,
    # so they run beside the rest of the suite (their work is the larger share of it)
    examples = [i for i in items if _group(i.path) == "tests/examples/"]
    if examples:
        rest = [i for i in items if _group(i.path) != "tests/examples/"]
        cut = next((k for k, i in enumerate(rest) if _group(i.path) == "tests/copies/"), len(rest))
        items[:] = rest[:cut] + examples + rest[cut:]


def pytest_collection_finish(session):
    """After -m and -k have deselected: start the example commands the selected tests' files
    declare, and set up the progress lines."""
    items = [i for i in session.items if not i.get_closest_marker("skip")]  # a skipped test runs nothing
    # (an entry is an argument list, or (argument list, variables added to the environment));
    # a file's EXAMPLE_RUNS_FIRST (its longest commands) start before every EXAMPLE_RUNS, so that
    # a long command the suite reaches late does not start late and end alone
    modules = list(dict.fromkeys(getattr(i, "module", None) for i in items))
    declared = [e for m in modules for e in getattr(m, "EXAMPLE_RUNS_FIRST", [])]
    declared += [e for m in modules for e in getattr(m, "EXAMPLE_RUNS", [])]
    if any(i.get_closest_marker("cli_bounds") for i in items):  # asked for by -m cli_bounds
        declared += [e for m in modules for e in getattr(m, "EXAMPLE_RUNS_CLI_BOUNDS", [])]
    if declared and not session.config.getoption("collectonly"):
        import example_runs

        for entry in declared:
            argv, extra = entry if isinstance(entry, tuple) else (entry, {})
            example_runs.prefetch([argv], workers=2, cwd=HERE.parent, env=dict(os.environ, **extra))
    groups = {_group(item.path) for item in items}
    session.config._progress = {"show": len(groups) > 1, "group": None, "start": time.perf_counter()}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    if item.config._copies_record is not None:
        item.config._copies_record.ACTIVE[0] = _resolved(str(item.path)) in item.config._copies_covering
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


def pytest_terminal_summary(terminalreporter):
    runs = sys.modules.get("example_runs")
    if runs is not None and runs.log():
        terminalreporter.write_line(f"examples: {runs.summary()}")
        terminalreporter.write_line(f"examples, the slowest: {runs.slowest()}")
