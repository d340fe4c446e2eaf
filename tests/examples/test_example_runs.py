"""scripts/example_runs.py: a forked run prints, fails and exits as `python script.py` does, and a
command runs once per process until a source changes."""

import subprocess
import sys
from pathlib import Path

import example_runs
import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """\
import sys
print("out", sys.argv[1:], sys.path[0] == {folder!r})
print("err", file=sys.stderr)
if sys.argv[1:] == ["raise"]:
    def f():
        raise ValueError("boom")
    f()
if sys.argv[1:] == ["exit"]:
    sys.exit("a message")
if sys.argv[1:] == ["code"]:
    sys.exit(3)
"""


@pytest.mark.parametrize("arg", ["ok", "raise", "exit", "code"])
def test_a_forked_run_is_the_interpreters_run(tmp_path, arg):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT.format(folder=str(tmp_path)))
    want = subprocess.run([sys.executable, str(script), arg], cwd=tmp_path, capture_output=True, text=True)
    got = example_runs.run(["python", str(script), arg], cwd=tmp_path)
    assert example_runs._forkable([sys.executable, str(script)], dict(example_runs.os.environ))
    assert (got.returncode, got.stdout, got.stderr) == (want.returncode, want.stdout, want.stderr)


def test_a_command_runs_once_until_a_source_changes(tmp_path):
    cmd = "python examples/confusions.py bessel"
    first = example_runs.run(cmd)
    assert example_runs.run(cmd) is first and first.returncode == 0 and "Bessel" in first.stdout
    assert example_runs.run(cmd, fresh=True) is not first
    key = example_runs._key(example_runs._split(cmd), str(ROOT), dict(example_runs.os.environ))
    probe = ROOT / "examples" / "__probe_for_the_cache_key.txt"
    try:
        probe.write_text("x")
        assert example_runs._key(example_runs._split(cmd), str(ROOT), dict(example_runs.os.environ)) != key
    finally:
        probe.unlink()


def test_the_log_keeps_a_forked_runs_cpu_seconds():
    cmd = ["python", "examples/confusions.py", "bessel"]
    example_runs.run(cmd, fresh=True)
    name, seconds, how, cpu = example_runs.log()[-1]
    assert name == " ".join(cmd) and how == "ran" and 0 < cpu < seconds + 1
    assert f"{name} {seconds:.1f} s (cpu {cpu:.1f} s)" in example_runs.slowest(n=10**6)
    assert "CPU s forked" in example_runs.summary()


def test_out_collects_the_files_a_run_writes():
    r = example_runs.run(
        ["python", "-c", "import sys; open(sys.argv[1] + '/a.txt', 'w').write('hi')", "{out}"], check=True
    )
    assert r.text("a.txt") == "hi"


@pytest.mark.docs_extra
def test_the_pages_commands_are_the_ones_they_show():
    sys.path.insert(0, str(ROOT / "scripts"))
    import mkdocs_hooks

    cmds = mkdocs_hooks.page_commands(ROOT / "docs")
    assert "python examples/k_sweep.py" in cmds and "python examples/atlas.py --plot {out}/atlas.svg" in cmds
    assert len(cmds) == len(set(cmds)) and all(c.startswith("python ") for c in cmds)


def test_console_shows_the_run_or_the_lines_grep_would_keep(tmp_path):
    script = tmp_path / "lines.py"
    script.write_text("import sys\nfor w in ('alpha 1', 'beta 2', 'gamma 3', 'alpha 4', 'delta 5'): print(w)\n")
    cmd = f"python {script} {{out}}/fig.svg"
    r, block = example_runs.console(cmd, cwd=tmp_path)
    assert block == f"```console\n$ python {script} fig.svg\nalpha 1\nbeta 2\ngamma 3\nalpha 4\ndelta 5\n```\n"
    assert example_runs.console(cmd, cwd=tmp_path)[0] is r  # one run serves every block
    _, block = example_runs.console(cmd, grep="^alpha", after=1, cwd=tmp_path)
    assert block.splitlines()[1:-1] == [
        f'$ python {script} fig.svg | grep -A1 -E "^alpha"',
        "alpha 1",
        "beta 2",
    ] + [
        "alpha 4",
        "delta 5",
    ]
    _, block = example_runs.console(cmd, grep="(beta|delta)", cwd=tmp_path)
    assert block.splitlines()[2:-1] == ["beta 2", "delta 5"]
    with pytest.raises(subprocess.CalledProcessError):
        example_runs.console(f"python {script}x", cwd=tmp_path)  # a failed run fails the page
