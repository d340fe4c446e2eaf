"""scripts/notation_lint.py: undefined symbols, clashes and undeclared per-page meanings fail, the
normalization holds, a page's own declaration is read.

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
| \(k\) | a member of a group | |
| \(v\) | a vocabulary entry | |

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
| \(k_1 = u\), \(u\) | the first estimator; the log-ratio \(\ell - \log \pi_{\text{ref}}\) | |
| \(a\) | an action | |
| \(M\) | the number of tokens | |
| \(r_t\) | a per-token reward | |
| \(\lambda\) | GAE's parameter | |
| \(q(s, a)\) | an action value | |
| \(p(s' \mid s, a)\) | the transition kernel | |
| \(z\), \(z_v\) | logits; \(m = \max_v z_v\) | |
| \(m = \max_v z_v\) | the shift of the log-sum-exp | |
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


CLEAN = r"notation: 2 pages, \d+ symbols, 0 undefined, 0 clashes, 0 undeclared per-page meanings"


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
    assert re.fullmatch(CLEAN, last_line(out))


def test_an_undefined_symbol_fails_and_is_named(tmp_path):
    status, out = run(tmp_path, {"a": r"The weight \(w_{b,t}\) of \(x\)."})
    assert status == 1
    assert "a: undefined w" in out
    assert last_line(out).endswith("1 undefined, 0 clashes, 0 undeclared per-page meanings")


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
    assert last_line(out).endswith("0 undefined, 1 clashes, 0 undeclared per-page meanings")


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
    assert re.fullmatch(CLEAN, last_line(proc.stdout))


@pytest.mark.parametrize("page", ["index", "identity", "mdp", "token_vs_sequence", "references", "api"])
def test_these_site_pages_are_clean(page):
    out = io.StringIO()
    notation_lint.check(ROOT / "docs", out=out)
    findings = [line for line in out.getvalue().split("\n") if line.startswith(f"{page}:")]
    assert findings == []


# ---- per-page meanings: a table symbol used with another meaning must be declared on the page ----

DECLARE = '!!! note "Notation on this page"\n\n    Symbols this page uses otherwise:\n\n'


def meanings(out):
    return [line for line in out.split("\n") if ": undeclared " in line]


@pytest.mark.parametrize(
    "formula, key, why",
    [
        (r"\(z_p = 1\)", "z", "indexed by p, which notation.md never uses as an index"),  # p: a pair
        (r"\(r_k\)", "r", "a per-token symbol indexed by k"),  # a reward per turn k
        (r"\(\lambda_2 = 0\)", r"\lambda_{2}", "a digit subscript on \\lambda"),  # a ridge
        (r"\(q(y)\)", "q", "applied to (1) arguments"),  # a sampling law, not q(s, a)
        (r"\(q(a \mid s)\)", "q", "applied to (1|1) arguments"),
        (r"\(p(s, a) = 1\)", "p", "applied to (2) arguments"),  # not p(s' | s, a)
        (r"\(m = \max(M, 1)\)", "m", "redefined as"),  # a count, not the log-sum-exp shift
    ],
)
def test_a_table_symbol_with_another_meaning_fails_until_the_page_declares_it(tmp_path, formula, key, why):
    status, out = run(tmp_path, {"a": f"# A\n\nWith {formula} on this page.\n"})
    assert status == 1, out
    found = meanings(out)
    assert len(found) == 1 and found[0].startswith(f"a: undeclared {key}: {why}"), out
    assert re.fullmatch(r"notation: .* 0 clashes, 1 undeclared per-page meanings", last_line(out))
    # the same page with the symbol declared in its block passes
    name = formula.split(" =")[0].removesuffix("\\)") + "\\)"  # the symbol, without "= ..."
    declared = f"# A\n\n{DECLARE}    - {name}: what it is here\n\n## B\n\nWith {formula}.\n"
    status, out = run(tmp_path, {"a": declared})
    assert status == 0, out
    assert last_line(out).endswith("0 undefined, 0 clashes, 0 undeclared per-page meanings")


def test_the_table_meanings_need_no_declaration(tmp_path):
    page = r"\(r_t\), \(r_{b,t}\), \(z_v\), \(q(s_t, a)\), \(q(s, y_t)\), \(p(s' \mid s, a)\), \(m = \max_v z_v\)"
    status, out = run(tmp_path, {"a": page})
    assert status == 0, out


def test_a_declaration_holds_only_on_its_page_and_only_for_what_it_names(tmp_path):
    a = f"{DECLARE}    - \\(z_p\\): the margin residual of pair \\(p\\)\n\n\\(z_p\\), \\(r_k\\)"
    status, out = run(tmp_path, {"a": a, "b": r"\(z_p\)"})
    assert status == 1
    found = meanings(out)
    assert any(line.startswith("a: undeclared r:") for line in found), out
    assert any(line.startswith("b: undeclared z:") for line in found), out
    assert not any(line.startswith("a: undeclared z:") for line in found), out


def test_a_named_sign_subscript_is_a_new_symbol_a_declaration_defines(tmp_path):
    # n_+ (the positive ones) is not n: undefined until declared
    status, out = run(tmp_path, {"a": r"\(n_+\)"})
    assert status == 1 and "a: undefined n_{+}" in out
    status, out = run(tmp_path, {"a": f"{DECLARE}    - \\(n_+\\): the right episodes' weight\n\n\\(n_+\\)"})
    assert status == 0, out


def test_the_declaration_block_is_read_from_the_site_pages():
    at, heads = notation_lint.declarations((ROOT / "docs" / "reward_models.md").read_text())
    assert at is not None
    keys = {u.key for u in heads}
    assert {"z", "u", "w", "m", r"\lambda_{2}", "p", "r", "n_{+}"} <= keys, keys
