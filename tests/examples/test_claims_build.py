"""The strict build fails when a page's claim no longer holds, and passes when it does.

A one-page site in a temporary folder (the default theme, only the markdown-exec plugin, so it
builds in about a second) runs a python block that imports examples/_claims.py and claims a
comparison, as a page of the site does beside its run. Reversing the comparison must make
`mkdocs build --strict` exit non-zero, for a claim made in the page's block and for one made by an
example the page runs with ``console exec``.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.docs_extra  # it builds a site: mkdocs and markdown-exec

ROOT = Path(__file__).resolve().parents[2]

CONFIG = """\
site_name: claims
strict: true
plugins:
  - markdown-exec
markdown_extensions:
  - pymdownx.superfences
"""


def python_page(comparison):
    return textwrap.dedent(
        f"""\
        # A result

        ```python exec="1"
        import sys
        sys.path.insert(0, {str(ROOT / "examples")!r})
        from _claims import claim

        var_tok, var_seq = 0.0920, 0.0939
        print(claim({comparison}, "token IS has the lower variance"))
        ```
        """
    )


def console_page(comparison):
    return textwrap.dedent(
        f"""\
        # A result

        ```console exec="1" source="console"
        $ {sys.executable} run.py "{comparison}"
        ```
        """
    )


RUN = """\
import sys
sys.path.insert(0, {examples!r})
from _claims import claim

var_tok, var_seq = 0.0920, 0.0939
print(f"variance tok {{var_tok}} seq {{var_seq}}")
claim(eval(sys.argv[1]), "token IS has the lower variance")
"""


def build(tmp_path, page):
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "mkdocs.yml").write_text(CONFIG)
    (tmp_path / "docs" / "index.md").write_text(page)
    (tmp_path / "run.py").write_text(RUN.format(examples=str(ROOT / "examples")))
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    # no -q: a quiet build drops the warnings before strict mode counts them, and passes
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("page", [python_page, console_page])
def test_a_true_claim_builds(tmp_path, page):
    r = build(tmp_path, page("var_tok < var_seq"))
    assert r.returncode == 0, r.stdout + r.stderr
    html = (tmp_path / "site" / "index.html").read_text()
    assert "token IS has the lower variance" in html or "variance tok 0.092" in html


@pytest.mark.parametrize("page", [python_page, console_page])
def test_a_reversed_claim_fails_the_strict_build(tmp_path, page):
    r = build(tmp_path, page("var_tok > var_seq"))
    assert r.returncode != 0
    # the build stops on the claim, not on something else
    assert "claim no longer holds: token IS has the lower variance" in r.stdout + r.stderr
