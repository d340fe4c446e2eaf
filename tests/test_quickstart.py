"""The README's Quickstart is what CI runs: scripts/quickstart.py reads its commands from README.md,
and .ci/run runs that script (each command in a fresh clone and venv), so the two cannot drift."""

from pathlib import Path

import pytest
import quickstart  # scripts/quickstart.py (tests/conftest.py puts scripts/ on the path)

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_quickstart_has_its_commands():
    cmds = quickstart.commands((ROOT / "README.md").read_text())
    assert len(cmds) >= 2
    # the main job, then the tests, each from a fresh venv of its own
    assert all(c.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install -e ") for c in cmds)
    assert cmds[0].endswith("python examples/k_sweep.py")
    assert cmds[-1].endswith("python -m pytest") and '".[test]"' in cmds[-1]


def test_ci_runs_the_quickstart_itself():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert any(
        line.strip().startswith(("python scripts/quickstart.py", "python3 scripts/quickstart.py")) for line in ci
    )


@pytest.mark.parametrize(
    "text, start",
    [
        ("# minirl_lm\n\n## Install\n\n```bash\npip install .\n```\n", "README.md: expected a '## Quickstart'"),
        ("## Quickstart\n\nRead the site.\n\n## Layout\n\n```bash\nls\n```\n", "README.md: the Quickstart"),
        ("## Quickstart\n\n```bash\n# only a comment\n```\n", "README.md: the Quickstart"),
    ],
)
def test_a_quickstart_without_a_command_fails(text, start):
    with pytest.raises(ValueError) as e:
        quickstart.commands(text)
    assert str(e.value).startswith(start)


def test_continued_lines_and_prompts_make_one_command():
    text = "## Quickstart\n\n```bash\n$ python3 -m venv .venv \\\n   && echo ok\npython -V\n```\n"
    assert quickstart.commands(text) == ["python3 -m venv .venv && echo ok && python -V"]


def test_a_missing_quickstart_is_a_usage_error(tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text("# nothing here\n")
    with pytest.raises(SystemExit) as e:
        quickstart.main(["--readme", str(readme), "--list"])
    assert e.value.code == 2
    assert "expected a '## Quickstart' section" in capsys.readouterr().err
