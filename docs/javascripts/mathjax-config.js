// MathJax 3 configuration for pymdownx.arithmatex (generic mode), served from the site itself.
//
// arithmatex wraps every formula in an element of class "arithmatex" with \( \) or \[ \]
// delimiters; MathJax is told to look only there (ignore everything, then process that class).
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
    // Equation labels are the code's names, e.g. \tag{pg_token}. The full build loads the
    // textmacros package, which parses \text and \tag contents as TeX and rejects a bare "_";
    // without it, tag text is taken literally and the label reads exactly as the code cites it.
    packages: { "[-]": ["textmacros"] },
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
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
    MathJax.startup.output.clearCache();
    MathJax.typesetClear();
    MathJax.texReset();
    MathJax.typesetPromise();
  });
}
