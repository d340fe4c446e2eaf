// MathJax 4 configuration for pymdownx.arithmatex (generic mode), served from the site itself.
//
// arithmatex wraps every formula in an element of class "arithmatex" with \( \) or \[ \]
// delimiters; MathJax is told to look only there (ignore everything, then process that class).
window.MathJax = {
  // The font (New Computer Modern) is vendored under javascripts/mathjax/fonts/ by
  // scripts/vendor_assets.sh; the default, a CDN, does not load from disk or offline.
  loader: { paths: { fonts: "[mathjax]/fonts" } },
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
    // Equation labels are the code's names, e.g. \tag{pg_token}. The textmacros package parses
    // \text and \tag contents as TeX and rejects a bare "_"; without it, tag text is taken
    // literally and the label reads exactly as the code cites it.
    packages: { "[-]": ["textmacros"] },
  },
  // A display formula wider than its container breaks at its operators (inline formulas break
  // by default): on a phone a long line wraps instead of scrolling. The lines of an aligned
  // block are the page's own; two statements side by side on one line must still be stacked.
  chtml: { displayOverflow: "linebreak" },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
    // No semantic enrichment: it would load the speech engine, which is not vendored.
    menuOptions: { settings: { enrich: false, speech: false, braille: false, collapsible: false } },
  },
};

// Re-typeset after Material swaps the page content (instant loading). Material's documented
// snippet typesets on every document$ event, including the first one; with a local, synchronous
// MathJax that first call races MathJax's own startup typeset and leaves the formulas blank.
// MathJax typesets the first page by itself on startup, so the first event is skipped.
if (typeof document$ !== "undefined") {
  let firstPage = true;
  document$.subscribe(() => {
    if (firstPage) {
      firstPage = false;
      return;
    }
    if (!window.MathJax || !MathJax.typesetPromise) return;
    MathJax.typesetClear();
    MathJax.texReset();
    MathJax.typesetPromise();
  });
}
