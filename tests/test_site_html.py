"""The built site, read as the reader's browser gets it (site/*.html, after `mkdocs build`).

A page can build without a warning and still be broken in the browser: a fence in a listed file
closes the page's fence and the rest of the file turns into paragraphs; a "\\b" in a non-raw
string puts a backspace on the page; a display formula that arithmatex did not recognise reaches
MathJax-less text as raw TeX; a link printed by an exec block is not rewritten by MkDocs. Each test
here looks for one of these in the HTML. They read files only (no build): run them after

    mkdocs build --strict && python -m pytest tests/test_site_html.py -q

`MINIRL_SITE_DIR` points them at another build folder (`mkdocs build -d DIR`).
"""

import html
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SITE = Path(os.environ.get("MINIRL_SITE_DIR", ROOT / "site"))

if not (SITE / "index.html").is_file():
    pytest.skip(
        f"no built site at {SITE}: run `mkdocs build --strict` first (or set MINIRL_SITE_DIR)",
        allow_module_level=True,
    )

PAGES = sorted(p.stem for p in DOCS.glob("*.md"))
_html = {}


def article(name):
    """The page's own content: its <article>, without the navigation around it."""
    text = page_html(name)
    start = text.find('<article class="md-content__inner')
    assert start >= 0, f"{name}.html has no <article class=md-content__inner> (another theme?)"
    return text[start : text.find("</article>", start)]


def page_html(name):
    """The built HTML of docs/NAME.md, read once per session."""
    if name not in _html:
        path = SITE / f"{name}.html"
        assert path.is_file(), f"docs/{name}.md has no page {path.name} in {SITE}"
        _html[name] = path.read_text(encoding="utf-8")
    return _html[name]


def strip_tags(fragment):
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


# ---------------------------------------------------------------------------------------------
# Every listing of a Python file is one code block holding the whole file (or the whole section).

SNIPPET = re.compile(r'^\s*--8<--\s+"([^"]+\.py(?::[a-z][-_0-9a-z]*)?)"\s*$', re.M | re.I)
SECTION_MARK = re.compile(r"-{1,}8<-{1,}[ \t]+\[[ \t]*(start|end)[ \t]*:[ \t]*([a-z][-_0-9a-z]*)[ \t]*\]", re.I)
PRE = re.compile(r"<pre\b[^>]*>(.*?)</pre>", re.S)


def snippet_text(spec):
    """What pymdownx.snippets inserts for "path" or "path:section": the file, or the lines between
    the section's markers, without any marker line."""
    path, _, section = spec.partition(":")
    lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
    if section:
        inside, kept = False, []
        for line in lines:
            m = SECTION_MARK.search(line)
            if m and m.group(2) == section:
                if m.group(1) == "end":
                    break
                inside = True
            elif inside and not m:
                kept.append(line)
        lines = kept
    else:
        lines = [line for line in lines if not SECTION_MARK.search(line)]
    return "\n".join(lines).strip("\n")


LISTINGS = [
    (page, spec)
    for page in PAGES
    for spec in dict.fromkeys(SNIPPET.findall((DOCS / f"{page}.md").read_text(encoding="utf-8")))
]


def test_listings_found():
    """The pattern still sees the pages' listings (a renamed include syntax would skip them all)."""
    assert len({spec.partition(":")[0] for _, spec in LISTINGS}) > 20


@pytest.mark.parametrize(("page", "spec"), LISTINGS, ids=[f"{p}:{s}" for p, s in LISTINGS])
def test_listing_is_one_code_block(page, spec):
    want = snippet_text(spec)
    blocks = [strip_tags(b).strip("\n") for b in PRE.findall(page_html(page))]
    if want in blocks:
        return
    # Say where it broke: the longest run of the file's opening lines that some block holds.
    first = want.splitlines()
    best = max((b for b in blocks if b and first[0].strip() in b), key=len, default="")
    held = 0
    while held < len(first) and "\n".join(first[: held + 1]) in best:
        held += 1
    line = first[held] if held < len(first) else ""
    pytest.fail(
        f"{page}.html has no code block holding all of {spec} ({len(first)} lines); the closest "
        f"block holds its first {held} lines and stops before line {held + 1}: {line!r}. A fence "
        "inside the file closes the page's fence: fence the listing with four backticks."
    )


# ---------------------------------------------------------------------------------------------
# No control character reaches a page; a tab only inside <pre>.

CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
PRE_ANY = re.compile(r"<pre\b.*?</pre>", re.S)


def context(text, start, end, width=60):
    return text[max(0, start - width) : end + width].replace("\n", " ")


@pytest.mark.parametrize("page", PAGES)
def test_no_control_characters(page):
    text = page_html(page)
    bad = [(m.group(), context(text, m.start(), m.end())) for m in CONTROL.finditer(text)]
    outside = PRE_ANY.sub("", text)
    bad += [("\t", context(outside, m.start(), m.end())) for m in re.finditer("\t", outside)]
    assert not bad, (
        f"{page}.html carries control characters (a '\\b' or '\\t' in a non-raw string?): "
        + "; ".join(f"{c!r} in ...{ctx!r}..." for c, ctx in bad[:5])
    )


# ---------------------------------------------------------------------------------------------
# No TeX outside arithmatex's wrappers and code: what MathJax is never shown is printed raw.

HIDDEN = re.compile(
    r"<(script|style|pre|code|textarea)\b.*?</\1>"
    r'|<(span|div) class="arithmatex">.*?</\2>'
    r"|<!--.*?-->",
    re.S,
)
TEX = re.compile(
    r"\$\$|\\[()\[\]]|\\(?:tag|frac|begin|end|mathbb|mathcal|mathrm|text|operatorname|sum|prod|log"
    r"|exp|nabla|partial|pi|theta|beta|sigma|lambda|epsilon|rho|ell|mid|left|right|cdot|le|ge)\b"
)


@pytest.mark.parametrize("page", PAGES)
def test_no_raw_tex(page):
    text = HIDDEN.sub(" ", article(page))
    hits = [context(text, m.start(), m.end()) for m in TEX.finditer(text)]
    assert not hits, (
        f"{page}.html shows {len(hits)} pieces of raw TeX outside arithmatex's wrappers, first: "
        + "; ".join(f"...{h!r}..." for h in hits[:3])
    )


# ---------------------------------------------------------------------------------------------
# Every link from one page to another resolves to a built page and, if it names one, an anchor.

HREF = re.compile(r'href="([^"#:?]*)(#[^"]*)?"')
ID = re.compile(r'\bid="([^"]+)"')


_ids = {}


def page_ids(name):
    if name not in _ids:
        _ids[name] = set(ID.findall(page_html(name)))
    return _ids[name]


@pytest.mark.parametrize("page", PAGES)
def test_links_resolve(page):
    body = article(page)
    broken = []
    for target, anchor in set(HREF.findall(body)):
        if target.endswith(".md"):
            broken.append(f"{target}{anchor} (a .md link MkDocs did not rewrite)")
            continue
        if target and not target.endswith(".html"):
            continue  # figures, copies, assets
        name = target[: -len(".html")] if target else page
        if name not in PAGES:
            if not (SITE / target).is_file():
                broken.append(f"{target}{anchor} (no such page)")
            continue
        if anchor and len(anchor) > 1 and html.unescape(anchor[1:]) not in page_ids(name):
            broken.append(f"{target}{anchor} (no such anchor)")
    assert not broken, f"{page}.html links to: " + "; ".join(sorted(broken))


# ---------------------------------------------------------------------------------------------
# The home page's reading path names every page once, in the order of the navigation.

NAV_LINK = re.compile(r'<a href="([a-z_]+)\.html" class="md-nav__link\b')


def test_reading_path_follows_the_navigation():
    index = page_html("index")
    nav = list(dict.fromkeys(NAV_LINK.findall(index)))
    assert sorted(nav) == PAGES, f"pages missing from the navigation: {sorted(set(PAGES) - set(nav))}"
    body = article("index")
    assert 'id="the-reading-path"' in body, "index.html has no section #the-reading-path"
    body = body[body.find('id="the-reading-path"') :]
    path = list(dict.fromkeys(t for t in re.findall(r'href="([a-z_]+)\.html"', body) if t != "index"))
    assert path == [p for p in nav if p != "index"], (
        "index.md's reading path is not the navigation's order:\n"
        f"  path: {path}\n  nav:  {[p for p in nav if p != 'index']}"
    )
