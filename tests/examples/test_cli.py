"""examples/_cli.py, the argument types every example shares: in process, fast (no example runs)."""

import argparse
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("_cli", ROOT / "examples" / "_cli.py")
cli = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cli)


def rejects(kind, text):
    """The message of the usage error `kind` raises on `text`."""
    with pytest.raises(argparse.ArgumentTypeError) as e:
        kind(text)
    return str(e.value)


def test_integer_range_and_its_message():
    count = cli.integer(1, 100)
    assert count("1") == 1 and count("100") == 100 and count(" 7 ") == 7
    assert rejects(count, "0") == "expected an integer in [1, 100], got 0"
    assert "got 101" in rejects(count, "101")
    assert rejects(cli.integer(0), "-1") == "expected an integer >= 0, got -1"
    for bad in ("1.5", "x", "nan", "", "1e3"):
        assert rejects(count, bad).startswith("expected an integer, got ")
    assert cli.int_at_least(2)("2") == 2 and "got 1" in rejects(cli.int_at_least(2), "1")


def test_a_huge_argument_is_not_echoed_whole():
    msg = rejects(cli.integer(1, 10), "9" * 5000)
    assert msg.startswith("expected an integer, got '9999") and "(5000 characters)" in msg
    assert len(msg) < 120


def test_seed_is_any_integer_at_least_0():
    assert cli.seed("0") == 0 and cli.seed(str(10**30)) == 10**30
    assert rejects(cli.seed, "-1") == "expected an integer >= 0, got -1"


@pytest.mark.parametrize(
    "kind, good, bad, where",
    [
        (cli.real(0, 10, low_open=True), ["1e-300", "10"], ["0", "10.5", "-1"], "in (0, 10]"),
        (cli.real(0, 1, high_open=True), ["0", "0.999"], ["1", "-0.1"], "in [0, 1)"),
        (cli.real(1, low_open=True), ["1.0001", "1e300"], ["1", "0"], "> 1"),
        (cli.real(high=5), ["-1e300", "5"], ["5.1"], "<= 5"),
        (cli.real(), ["-1e300", "0"], [], ""),
    ],
)
def test_real_interval_ends_and_message(kind, good, bad, where):
    for text in good:
        assert kind(text) == float(text)
    for text in bad + ["nan", "inf", "-inf", "1e999"]:
        assert rejects(kind, text) == f"expected a finite number{' ' + where if where else ''}, got {text!r}"
    assert rejects(kind, "x") == "expected a number, got 'x'"


def test_reals_list_empty_and_count():
    kind = cli.reals(0, 1, most=3)
    assert kind("0,0.5,1") == (0.0, 0.5, 1.0)
    assert "got '2'" in rejects(kind, "0,2") and "got ''" in rejects(kind, "0,,1")
    assert rejects(kind, "0,0,0,0") == "expected at most 3 comma-separated numbers, got 4"
    assert rejects(kind, " ") == "expected comma-separated numbers, got ''"
    assert cli.reals(allow_empty=True)("") == ()


@pytest.mark.docs_extra
def test_plot_path_accepts_a_writable_file_in_an_existing_folder(tmp_path):
    for ext in cli.PLOT_FORMATS:
        assert cli.plot_path(str(tmp_path / f"f.{ext}")) == str(tmp_path / f"f.{ext}")
    assert cli.plot_path(str(tmp_path / "F.SVG"))


def test_plot_path_rejects_a_missing_folder_a_folder_and_an_extension(tmp_path):
    missing = str(tmp_path / "no" / "f.svg")
    assert rejects(cli.plot_path, missing) == (
        f"expected a path in an existing folder, got {missing!r} ({tmp_path / 'no'} does not exist)"
    )
    assert rejects(cli.plot_path, str(tmp_path)).startswith("expected a file path, got ")
    assert rejects(cli.plot_path, "").startswith("expected a file path, got ")
    assert rejects(cli.plot_path, str(tmp_path / "f.txt")).startswith(
        "expected a file name ending in one of .svg, .png, "
    )


def test_plot_path_rejects_a_folder_it_cannot_write(tmp_path, monkeypatch):
    monkeypatch.setattr(cli.os, "access", lambda path, mode: False)  # also as root
    msg = rejects(cli.plot_path, str(tmp_path / "f.svg"))
    assert msg.startswith("expected a path this user can write, got ") and "not writable" in msg


def test_plot_path_without_matplotlib_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import raises ImportError
    msg = rejects(cli.plot_path, str(tmp_path / "f.svg"))
    assert msg.startswith("expected matplotlib to draw the figure (")
    assert 'pip install -e ".[docs]"' in msg and "pip install matplotlib" in msg
    assert "got ModuleNotFoundError" in msg or "got ImportError" in msg


def test_a_type_error_is_an_argparse_usage_error(capsys):
    p = argparse.ArgumentParser(prog="x")
    p.add_argument("--K", type=cli.integer(1, 8))
    with pytest.raises(SystemExit) as e:
        p.parse_args(["--K", "9"])
    assert e.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "x: error: argument --K: expected an integer in [1, 8], got 9"
    )


def test_importing_an_example_changes_no_environment_variable():
    # A test imports an example to call its functions. An example that set NUMBA_NUM_THREADS at
    # import made the whole session's Numba pool one thread (the threaded kernels' tests then
    # compared a serial run with itself), and a compile after the pool had started raised
    # "RuntimeError: Cannot set NUMBA_NUM_THREADS to a different value once the threads have been
    # launched" (Numba reads the variable again at each compile). Settings of a run of its own go
    # under `if __name__ == "__main__"`.
    names = sorted(p.stem for p in (ROOT / "examples").glob("*.py"))
    code = (
        "import importlib, os, sys\n"
        f"sys.path.insert(0, {str(ROOT / 'examples')!r})\n"
        "changed = {}\n"
        f"for name in {names!r}:\n"
        "    before = dict(os.environ)\n"
        "    importlib.import_module(name)\n"
        "    keys = sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k))\n"
        "    if keys:\n"
        "        changed[name] = keys\n"
        "print(changed)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_NUM", "OMP_", "OPENBLAS_", "MKL_"))}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "{}", out.stdout
