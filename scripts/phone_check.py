"""Count the display formulas that scroll on a phone, page by page, in a built site.

    mkdocs build                       # the site in site/
    python scripts/phone_check.py site
    python scripts/phone_check.py site --pages off_policy atlas --list --shots /tmp/shots

Opens every page of the site from disk (file://) in a headless Chromium at 390 px (a phone),
waits until MathJax has typeset it, and counts the display formulas whose box is wider than its
container (they scroll sideways). Prints one line per page with display formulas, then
``display formulas: X of Y scroll at 390 px``. It also reports what the pages load: any request
that fails or leaves the disk (the site must work offline), and any page wider than the screen.

A development tool, not run by CI: it needs Playwright (``pip install playwright``) and a
Chromium (``apt-get install chromium``, found at /usr/bin/chromium, or ``--chromium PATH``);
neither is a dependency of the project.
"""

import argparse
import sys
from pathlib import Path

MEASURE = """() => {
  const out = [];
  for (const div of document.querySelectorAll('.md-typeset div.arithmatex')) {
    const box = div.getBoundingClientRect();
    out.push({
      scrolls: div.scrollWidth > div.clientWidth + 1,
      over: div.scrollWidth - div.clientWidth,
      text: Array.from((div.querySelector('mjx-assistive-mml, math') || div).textContent).slice(0, 60).join(''),
      top: Math.round(box.top + window.scrollY),
    });
  }
  const errors = document.querySelectorAll('mjx-merror').length;
  return {formulas: out, pageWidth: document.documentElement.scrollWidth, errors};
}"""


def pages_of(site, only):
    found = []
    for path in sorted(site.rglob("*.html")):
        rel = path.relative_to(site).as_posix()
        if rel.startswith(("copies/", "assets/", "search/")) or rel == "404.html":
            continue
        stem = rel[: -len(".html")].removesuffix("/index") or "index"
        if only and stem not in only:
            continue
        found.append((stem, path))
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path, help="a built site (the folder mkdocs build writes)")
    parser.add_argument("--pages", nargs="*", default=[], help="page stems to check (default: all)")
    parser.add_argument("--width", type=int, default=390, help="viewport width in px (default: 390)")
    parser.add_argument("--list", action="store_true", help="print the start of each scrolling formula")
    parser.add_argument("--shots", type=Path, help="write a full-page screenshot of each page here")
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="the Chromium to drive")
    args = parser.parse_args(argv)
    if not args.site.is_dir():
        parser.error(f"site: expected a built site folder, got {args.site}")
    if args.width < 200:
        parser.error(f"--width: expected at least 200 px, got {args.width}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        parser.error("playwright is not installed: pip install playwright (a development tool)")
    pages = pages_of(args.site.resolve(), set(args.pages))
    if not pages:
        parser.error(f"site: no pages found in {args.site}")
    if args.shots:
        args.shots.mkdir(parents=True, exist_ok=True)

    total = scrolling = 0
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=args.chromium,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        page = browser.new_page(viewport={"width": args.width, "height": 844})
        bad = []
        page.on("requestfailed", lambda r: bad.append(f"failed {r.url}"))
        page.on("request", lambda r: None if r.url.startswith(("file:", "data:", "blob:")) else bad.append(r.url))
        for stem, path in pages:
            bad.clear()
            page.goto(path.as_uri(), wait_until="load")
            page.evaluate(
                "async () => { if (window.MathJax && MathJax.startup) await MathJax.startup.promise;"
                " await document.fonts.ready; }"
            )
            page.wait_for_timeout(150)
            r = page.evaluate(MEASURE)
            n = len(r["formulas"])
            k = sum(f["scrolls"] for f in r["formulas"])
            total, scrolling = total + n, scrolling + k
            notes = []
            if r["pageWidth"] > args.width:
                notes.append(f"page {r['pageWidth']} px wide")
            if r["errors"]:
                notes.append(f"{r['errors']} TeX errors")
            notes += sorted(set(bad))
            if n or notes:
                print(f"{stem}: {k} of {n} scroll" + ("; " + "; ".join(notes) if notes else ""))
            if args.list:
                for f in r["formulas"]:
                    if f["scrolls"]:
                        print(f"    +{f['over']} px at y={f['top']}: {' '.join(f['text'].split())}")
            if args.shots:
                page.screenshot(path=str(args.shots / f"{stem}.png"), full_page=True)
        browser.close()
    print(f"display formulas: {scrolling} of {total} scroll at {args.width} px")
    return 0


if __name__ == "__main__":
    sys.exit(main())
