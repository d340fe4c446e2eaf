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
  startup: {
    pageReady() {
      if (window.matchMedia("(max-width: 600px)").matches) labelsUnderFormulas();
      return MathJax.startup.defaultPageReady();
    },
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
    // No semantic enrichment: it would load the speech engine, which is not vendored.
    menuOptions: { settings: { enrich: false, speech: false, braille: false, collapsible: false } },
  },
};

// On a phone, a display formula's label, \tag{token_mdp}, goes on its own line under the formula
// (stylesheets/extra.css: div.eqlabel). Typeset beside the formula, MathJax would reserve the
// label's width on both sides of a centred box and break the formula to what is left, a third
// of a phone's width less. The label is taken out of the TeX before MathJax reads the page; the
// pages cite labels by name, never by \eqref, so nothing links to MathJax's own label.
function labelsUnderFormulas() {
  document.querySelectorAll("div.arithmatex").forEach((div) => {
    const tex = div.textContent;
    const tag = tex.match(/\\tag\{([^{}]*)\}/);
    if (!tag || tex.indexOf("\\tag{", tag.index + 1) !== -1) return;
    div.textContent = tex.slice(0, tag.index) + tex.slice(tag.index + tag[0].length);
    const label = document.createElement("div");
    label.className = "eqlabel";
    label.textContent = "(" + tag[1] + ")";
    div.appendChild(label);
  });
}

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
