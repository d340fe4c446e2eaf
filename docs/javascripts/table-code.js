// Code in table cells (the notation page's "in the code" column) breaks after ".", "_", "(", ","
// and "/", never inside a name: each such character is followed by a <wbr>, a break opportunity
// the browser uses only when the cell is too narrow (stylesheets/extra.css turns off breaking
// anywhere). Runs once per page; Material's document$ replays it after instant navigation.
function breakTableCode() {
  document.querySelectorAll(".md-typeset td code").forEach((code) => {
    if (code.dataset.wbr || code.children.length) return;
    code.dataset.wbr = "1";
    const parts = code.textContent.split(/(?<=[._(,/])/);
    if (parts.length < 2) return;
    code.textContent = "";
    parts.forEach((part, i) => {
      if (i) code.appendChild(document.createElement("wbr"));
      code.appendChild(document.createTextNode(part));
    });
  });
}
if (typeof document$ !== "undefined") document$.subscribe(breakTableCode);
else breakTableCode();
