"""The docs build's log: scripts/check_build_log.py fails on any line a clean build does not print,
the build writes the lines it reads (scripts/mkdocs_hooks.py), and the pages' Markdown has none of
the mistakes that render wrong without a word in the log."""

import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import check_build_log  # noqa: E402

CLEAN = """\
INFO    -  Cleaning site directory
INFO    -  Building documentation to directory: /work/site
INFO    -  examples: 57 runs (226.6 s of work, 69.8 CPU s forked), 67 served from the cache
INFO    -  examples, the slowest: python examples/entropy.py --plot {out}/entropy.svg 43.1 s (cpu 11.1 s)
INFO    -  Documentation built in 117.04 seconds
"""
ANCHOR = (
    "INFO    -  Doc file 'reward_models.md' contains a link 'next.md#reward-models-in-the-frameworks', "
    "but the doc 'next.md' does not contain an anchor '#reward-models-in-the-frameworks'\n"
)


def test_a_clean_log_passes_and_any_other_line_fails():
    assert check_build_log.unexpected(CLEAN) == []
    assert check_build_log.unexpected(CLEAN + ANCHOR) == [("INFO", ANCHOR[11:].rstrip())]
    warning = "WARNING -  mkdocstrings: Formatting signatures requires either Black or Ruff to be installed.\n"
    assert [level for level, _ in check_build_log.unexpected(warning + CLEAN)] == ["WARNING"]
    assert check_build_log.unexpected("DEBUG   -  Reading: index.md\n" + CLEAN) == []
    # an allowed line's words inside another message do not let it pass
    assert check_build_log.unexpected("INFO    -  Cleaning site directory failed\n")


def test_a_message_of_several_lines_is_one_record_and_the_console_colours_are_read():
    text = (
        "INFO    -  The following pages are being built only for the preview:\n  - draft.md\n"
        "\x1b[33mWARNING \x1b[0m-  a coloured line\n"
    )
    records = check_build_log.records(text)
    assert records == [
        ("INFO", "The following pages are being built only for the preview:\n  - draft.md"),
        ("WARNING", "a coloured line"),
    ]


def test_the_command_line(tmp_path):
    script = ROOT / "scripts" / "check_build_log.py"
    run = lambda *a: subprocess.run([sys.executable, str(script), *a], capture_output=True, text=True)
    (tmp_path / "clean").write_text(CLEAN)
    (tmp_path / "bad").write_text(CLEAN + ANCHOR)
    ok, bad, missing = run(str(tmp_path / "clean")), run(str(tmp_path / "bad")), run(str(tmp_path / "none"))
    assert ok.returncode == 0, ok.stderr
    assert bad.returncode == 1 and "reward-models-in-the-frameworks" in bad.stdout
    assert missing.returncode == 2 and "no build log" in missing.stderr and "Traceback" not in missing.stderr


@pytest.mark.docs_extra  # the hook imports mkdocs
def test_the_hook_writes_the_lines_the_checker_reads(tmp_path):
    import mkdocs_hooks

    logger = logging.getLogger("mkdocs")
    before = logger.level
    logger.setLevel(logging.INFO)
    try:
        mkdocs_hooks.on_config({})
        logging.getLogger("mkdocs.structure.pages").info(ANCHOR[11:].rstrip())
        logging.getLogger("mkdocs.commands.build").info("Cleaning site directory")
        handler = mkdocs_hooks._handler["lines"]
        logger.removeHandler(handler)
        mkdocs_hooks._handler["lines"] = None
    finally:
        logger.setLevel(before)
    text = "".join(line + "\n" for line in handler.lines)
    assert check_build_log.records(text) == [("INFO", ANCHOR[11:].rstrip()), ("INFO", "Cleaning site directory")]


@pytest.mark.docs_extra  # the hook imports mkdocs
def test_the_anchor_check_reads_the_ids_of_the_built_html():
    import mkdocs_hooks

    html = '<p><a id="verl-agg-loss"></a>x</p><h2 id="t">T</h2><a name="old"></a><span name="no"></span>'
    assert mkdocs_hooks.page_ids(html) == {"verl-agg-loss", "t", "old"}


PAGES = sorted((ROOT / "docs").glob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_line_follows_a_table_row_without_a_blank_line(page):
    """A heading (or a paragraph) right after a table's last row becomes a cell of the table: the
    built page shows `<td>## Title</td>`, and the title's anchor is gone."""
    lines = page.read_text().splitlines()
    fence = None
    glued = []
    for i, (prev, line) in enumerate(zip(lines, lines[1:]), 2):
        m = re.match(r"\s*(`{3,}|~{3,})", prev)
        if m:
            fence = None if fence and m.group(1).startswith(fence) else fence or m.group(1)
        if fence is None and prev.startswith("|") and line.strip() and not line.startswith("|"):
            glued.append(f"{page.name}:{i}: {line[:60]}")
    assert not glued, glued


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_listed_files_fence_is_longer_than_every_fence_inside_it(page):
    """`--8<-- "file"` in a ```` ```python ```` fence: a line of three backticks in the file (a
    docstring's text block) closes the fence, and the rest of the file renders as Markdown with
    no word in the build's log."""
    lines = page.read_text().splitlines()
    short = []
    for i, line in enumerate(lines):
        m = re.fullmatch(r'\s*--8<-- "([^"]+)"', line)
        if not m or i == 0:
            continue
        opening = re.match(r"\s*(`+|~+)", lines[i - 1])
        if not opening:
            continue
        text = (ROOT / m.group(1).split(":")[0]).read_text()
        inner = max((len(r) for r in re.findall(r"^\s*(`{3,})", text, re.M)), default=0)
        if opening.group(1)[0] == "`" and len(opening.group(1)) <= inner:
            short.append(f"{page.name}:{i}: {m.group(1)}")
    assert not short, short
