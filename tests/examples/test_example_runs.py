"""scripts/example_runs.py: a forked run prints, fails and exits as `python script.py` does, and a
command runs once per process until a source changes."""

import json
import os
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
    name, seconds, how, cpu = next(e for e in reversed(example_runs.log()) if e[0] == " ".join(cmd))
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


# ---- the disk cache (the docs build turns it on; the suite keeps results in the process only)

READER = """\
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
import helper
print(open(sys.argv[1]).read(), helper.VALUE, sorted(os.listdir(sys.argv[2])))
"""


def _forget(cmd, cwd):
    """Drops the command's result from this process's cache (as a new build process starts)."""
    example_runs._cache.pop(example_runs._resolve(cmd, cwd)[3], None)


def _how(cmd, cwd):
    """How `run` got the command's result ('ran', 'disk'), from the log's last entry for this
    command: a prefetch thread started by another test may log its own commands meanwhile."""
    _forget(cmd, cwd)
    r = example_runs.run(cmd, cwd=cwd)
    return next(e[2] for e in reversed(example_runs.log()) if e[0] == " ".join(r.args)), r


def test_the_suite_does_not_use_the_disk_cache():
    assert example_runs._disk["folder"] is None


def test_a_kept_result_is_replayed_until_a_file_it_read_changes(tmp_path, monkeypatch):
    monkeypatch.setitem(example_runs._disk, "folder", tmp_path / ".cache")
    w = tmp_path / "w"  # the script's folder: the import system lists it, so a file added there counts
    (w / "lib").mkdir(parents=True)
    (w / "lib" / "helper.py").write_text("VALUE = 1\n")
    (w / "data.txt").write_text("a")
    (w / "d").mkdir()
    (w / "reader.py").write_text(READER)
    cmd = f"python {w / 'reader.py'} data.txt d"
    how, first = _how(cmd, w)
    assert how == "ran" and first.stdout == "a 1 []\n"
    how, again = _how(cmd, w)
    assert how == "disk" and (again.returncode, again.stdout, again.stderr) == (0, first.stdout, "")
    (tmp_path / "unread.txt").write_text("x")
    assert _how(cmd, w)[0] == "disk"
    for change, want in [
        (lambda: (w / "data.txt").write_text("b"), "b 1 []\n"),
        (lambda: (w / "lib" / "helper.py").write_text("VALUE = 2\n"), "b 2 []\n"),
        (lambda: (w / "d" / "new").write_text(""), "b 2 ['new']\n"),
        (lambda: (w / "reader.py").write_text(READER + "print('!')\n"), "b 2 ['new']\n!\n"),
    ]:
        change()
        how, r = _how(cmd, w)
        assert (how, r.stdout) == ("ran", want)
        assert _how(cmd, w)[0] == "disk"
    assert not list((tmp_path / ".cache").glob(".tmp-*"))  # written to a temporary file, then renamed


def test_a_corrupt_entry_is_a_miss(tmp_path, monkeypatch):
    monkeypatch.setitem(example_runs._disk, "folder", tmp_path / ".cache")
    (tmp_path / "w").mkdir()
    script = tmp_path / "w" / "s.py"
    script.write_text("print('ok')\n")
    cmd = f"python {script}"
    assert _how(cmd, tmp_path)[0] == "ran"
    (entry,) = (tmp_path / ".cache").glob("*.json")
    good = entry.read_text()
    for garbage in ["", "{", "[]", '{"argv": 1}', good.replace('"stdout"', '"stdou"'), good[: len(good) // 2]]:
        entry.write_text(garbage)
        how, r = _how(cmd, tmp_path)
        assert (how, r.stdout) == ("ran", "ok\n"), (garbage[:60], how, r.stdout, r.stderr[-500:])
        again = _how(cmd, tmp_path)[0]  # and kept again
        assert again == "disk", (garbage[:60], again, [p.name for p in (tmp_path / ".cache").iterdir()])


def test_a_run_that_fails_or_writes_a_file_is_not_kept(tmp_path, monkeypatch):
    monkeypatch.setitem(example_runs._disk, "folder", tmp_path / ".cache")
    fails, writes = tmp_path / "fails.py", tmp_path / "writes.py"
    fails.write_text("raise SystemExit(1)\n")
    writes.write_text(f"open({str(tmp_path / 'side.txt')!r}, 'w').write('x')\n")
    for script in (fails, writes):
        assert _how(f"python {script}", tmp_path)[0] == "ran"
        assert _how(f"python {script}", tmp_path)[0] == "ran"
    # but a file written into {out} is the run's output: kept, and given back
    plots = tmp_path / "plots.py"
    plots.write_text("import sys\nopen(sys.argv[1], 'w').write('<svg/>')\n")
    cmd = f"python {plots} {{out}}/fig.svg"
    assert _how(cmd, tmp_path)[0] == "ran"
    how, r = _how(cmd, tmp_path)
    assert (how, r.text("fig.svg")) == ("disk", "<svg/>")


def test_a_run_whose_reads_are_unknown_depends_on_every_source(tmp_path, monkeypatch):
    monkeypatch.setitem(example_runs._disk, "folder", tmp_path / ".cache")
    (tmp_path / "w").mkdir()
    spawns = tmp_path / "w" / "spawns.py"
    spawns.write_text("import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'pass'])\n")
    for cmd in ("python -c pass", f"python {spawns}"):
        assert _how(cmd, tmp_path)[0] == "ran"
        entry = json.loads(
            example_runs._disk_path(example_runs._split(cmd), str(tmp_path), dict(os.environ)).read_text()
        )
        assert [example_runs._ALL_SOURCES, example_runs.sources_digest()] in entry["reads"]["files"]
        assert _how(cmd, tmp_path)[0] == "disk"


def test_an_examples_reads_are_its_modules_and_data_never_a_page(tmp_path, monkeypatch):
    monkeypatch.setitem(example_runs._disk, "folder", tmp_path / ".cache")
    cmd = "python examples/conformance.py --differences"
    _forget(cmd, ROOT)
    example_runs.run(cmd, check=True)
    entry = json.loads(example_runs._disk_path(example_runs._split(cmd), str(ROOT), dict(os.environ)).read_text())
    files = [f for f, _ in entry["reads"]["files"]]
    assert {"examples/conformance.py", "examples/_claims.py", "minirl_lm/pg/clip.py"} <= set(files)
    assert "tests/fixtures/conformance/index.json" in files  # a data file it opened
    assert not [f for f in files if f.startswith(("docs/", "scripts/mkdocs_hooks", ".")) or "__pycache__" in f]
    assert "examples/confusions.py" not in files  # another example: editing it reruns only its own commands
