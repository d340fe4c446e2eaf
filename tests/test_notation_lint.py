"""scripts/notation_lint.py: undefined symbols and clashes fail, the normalization holds.

Each test writes a tiny docs folder (a notation.md with a global and a page-local table, and a
page or two) and runs the check on it.
"""

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import notation_lint  # noqa: E402

NOTATION = r"""# Notation

### Indices

| symbol | meaning | in the code |
|---|---|---|
| \(b\) | a row | |
| \(t\) | a position | |

### Symbols

| symbol | meaning | in the code |
|---|---|---|
| \(x\) | a prompt | `prompt` |
| \(y\) | a response; \(y_t\) its token | `tokens` |
| \(s_t = (x, y_{<t})\) | the state before token \(t\) | `states` |
| \(\ell_{b,t}\) | a token log-prob | `logp` |
| \(\pi_\theta(y_t \mid s_t)\) | the policy | |
| \(\pi_{\text{ref}}\) | the reference | |
| \(V\), \(V_c\) | vocabulary size; continuing tokens | |
| \(k_1 = u\), \(u\) | the first estimator; the log-ratio | |
{extra_global}
### Page-local symbols

| symbol | meaning | where |
|---|---|---|
| \(\omega_t\) | a token ratio | [page a](a.md) |
{extra_local}
"""


def run(tmp_path, pages, extra_global="", extra_local=""):
    """Write notation.md and the pages into tmp_path/docs; the exit status and the output."""
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    text = NOTATION.replace("{extra_global}", extra_global).replace("{extra_local}", extra_local)
    (docs / "notation.md").write_text(text)
    for name, body in pages.items():
        (docs / f"{name}.md").write_text(body)
    out = io.StringIO()
    status = notation_lint.check(docs, out=out)
    return status, out.getvalue()


def last_line(out):
    return out.strip().split("\n")[-1]


def test_a_page_that_uses_defined_symbols_passes(tmp_path):
    page = r"""# A
The token \(y_t\) in state \(s_{t+1}\), with log-prob \(\ell_t\) and \(\ell_{b,t}\):

$$
\begin{aligned}
k_1 &= \log \pi_\theta(y_t \mid s_t) - \log \pi_{\mathrm{ref}}(y_t \mid s_t), \\
\omega_t &= \mathbb{E}[\hat{}\, u] \quad (V_c < V)
\end{aligned}
\tag{label_with_x}
$$
"""
    status, out = run(tmp_path, {"a": page})
    assert status == 0, out
    assert re.fullmatch(r"notation: 2 pages, \d+ symbols, 0 undefined, 0 clashes", last_line(out))


def test_an_undefined_symbol_fails_and_is_named(tmp_path):
    status, out = run(tmp_path, {"a": r"The weight \(w_{b,t}\) of \(x\)."})
    assert status == 1
    assert "a: undefined w" in out
    assert last_line(out).endswith("1 undefined, 0 clashes")


def test_named_subscripts_are_part_of_the_name(tmp_path):
    # \pi_{\text{old}} is not \pi_\theta nor \pi_{\text{ref}}; \hat\omega is not \omega; k_2 is not k_1
    status, out = run(tmp_path, {"a": r"\(\pi_{\text{old}}\), \(\hat\omega_t\), \(k_2\), \(c_{\min}\)"})
    assert status == 1
    for key in (r"\pi_{old}", r"\hat{\omega}", "k_{2}", "c_{min}"):
        assert f"a: undefined {key} " in out, out


def test_index_letters_are_symbols_too(tmp_path):
    # j is in no row: a subscript j is read as an index, and the index must be defined
    status, out = run(tmp_path, {"a": r"\(\ell_{j}\)"})
    assert status == 1
    assert "a: undefined j " in out


def test_a_page_local_symbol_is_defined_only_on_its_page(tmp_path):
    status, out = run(tmp_path, {"a": r"\(\omega_t\)", "b": r"\(\omega_t\)"})
    assert status == 1
    assert "b: undefined \\omega " in out
    assert "a: undefined" not in out


def test_formulas_in_code_are_not_read(tmp_path):
    page = (
        "```python\nprint(r'\\(\\zeta\\)')\n```\n\n"  # a fenced block
        "    ```text\n    \\(\\zeta\\)\n    ```\n\n"  # an indented one (in an admonition)
        "and `\\(\\zeta\\)`\n"  # inline code
    )
    status, out = run(tmp_path, {"a": page})
    assert status == 0, out


def test_a_page_local_row_beside_a_global_row_is_a_clash(tmp_path):
    status, out = run(tmp_path, {"a": r"\(V\)"}, extra_local=r"| \(V\) | a value | [page a](a.md) |")
    assert status == 1
    assert "a: clash V: two meanings" in out
    assert last_line(out).endswith("0 undefined, 1 clashes")


def test_two_page_local_rows_for_one_page_are_a_clash(tmp_path):
    rows = "| \\(\\kappa\\) | a temperature | [page a](a.md) |\n| \\(\\kappa\\) | a rate | [page a](a.md) |"
    status, out = run(tmp_path, {"a": r"\(\kappa\)"}, extra_local=rows)
    assert status == 1
    assert "a: clash \\kappa: two meanings" in out


def test_two_global_rows_for_one_symbol_are_a_clash(tmp_path):
    status, out = run(tmp_path, {"a": r"\(x\)"}, extra_global=r"| \(x\) | a feature vector | `x` |" + "\n")
    assert status == 1
    assert "notation: clash x: defined by two global rows" in out


def test_an_indexed_row_elaborates_and_does_not_clash(tmp_path):
    status, out = run(tmp_path, {"a": r"\(x_t\)"}, extra_global=r"| \(x_t\) | the prompt at step \(t\) | |" + "\n")
    assert status == 0, out


def test_a_value_applied_as_a_function_is_a_clash(tmp_path):
    # s is a state (s_t); s(y), a score of a response, is a second meaning of the letter
    status, out = run(tmp_path, {"a": r"\(s(y) = \sum_t \ell_t\)"})
    assert status == 1
    assert "a: clash s: applied as a function" in out
    # a product is not an application: u (y_t + x) multiplies
    status, out = run(tmp_path, {"a": r"\(u(y_t + x)\)"})
    assert status == 0, out


def test_the_command_line_prints_the_counts_last(tmp_path):
    run(tmp_path, {"a": r"\(x\)"})
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "notation_lint.py"), "--docs", str(tmp_path / "docs")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.fullmatch(r"notation: 2 pages, \d+ symbols, 0 undefined, 0 clashes", last_line(proc.stdout))


@pytest.mark.parametrize("page", ["index", "identity", "mdp", "token_vs_sequence", "references", "api"])
def test_these_site_pages_are_clean(page):
    out = io.StringIO()
    notation_lint.check(ROOT / "docs", out=out)
    findings = [line for line in out.getvalue().split("\n") if line.startswith(f"{page}:")]
    assert findings == []
