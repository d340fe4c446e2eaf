#!/usr/bin/env bash
# Re-create the vendored browser assets under docs/javascripts/ from their npm packages.
#
# The site must work opened from disk (file://) with no network, so nothing is loaded from a CDN:
#   - MathJax 4: tex-chtml.js (TeX in, CommonHTML out; it breaks long display and inline formulas
#     at the width of their container), the TeX extensions it autoloads on first use
#     ([mathjax]/input/tex/extensions/, e.g. cancel, enclose), and its default font, New Computer
#     Modern, from its own npm package: the CHTML woff2 files and the dynamic ranges MathJax loads
#     when a formula needs a glyph outside the base set (calligraphic, double-struck, ...). The
#     font sits under [mathjax]/fonts/mathjax-newcm-font/, where javascripts/mathjax-config.js
#     points loader.paths.fonts (the default is a CDN). Not vendored: the speech and braille
#     engine (sre/, a11y/); the configuration turns enrichment off, so the page never asks for it.
#   - iframe-worker: the shim that lets Material's search run its Web Worker under file://.
#     mkdocs.yml lists it under extra.polyfills, so the offline plugin does not add the CDN copy.
#
# Usage: scripts/vendor_assets.sh            (needs npm and tar; writes only docs/javascripts/{mathjax,vendor})
set -euo pipefail

MATHJAX_VERSION=4.1.3
MATHJAX_FONT_VERSION=4.1.3
IFRAME_WORKER_VERSION=1.0.4

root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/docs/javascripts"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cd "$tmp"
npm pack --silent "mathjax@$MATHJAX_VERSION" "@mathjax/mathjax-newcm-font@$MATHJAX_FONT_VERSION" \
  "iframe-worker@$IFRAME_WORKER_VERSION" >/dev/null

mkdir mathjax font iframe-worker
tar xzf "mathjax-$MATHJAX_VERSION.tgz" -C mathjax
tar xzf "mathjax-mathjax-newcm-font-$MATHJAX_FONT_VERSION.tgz" -C font
tar xzf "iframe-worker-$IFRAME_WORKER_VERSION.tgz" -C iframe-worker

# MathJax: the combined component, the TeX extensions, the font, laid out as MathJax expects them.
rm -rf "$dest/mathjax"
mkdir -p "$dest/mathjax/input/tex" "$dest/mathjax/fonts/mathjax-newcm-font/chtml"
cp mathjax/package/tex-chtml.js "$dest/mathjax/"
cp -r mathjax/package/input/tex/extensions "$dest/mathjax/input/tex/"
cp mathjax/package/LICENSE "$dest/mathjax/LICENSE"
cp -r font/package/chtml/woff2 font/package/chtml/dynamic "$dest/mathjax/fonts/mathjax-newcm-font/chtml/"
# the font package ships no LICENSE file; its package.json states the license (Apache-2.0)
cp font/package/package.json "$dest/mathjax/fonts/mathjax-newcm-font/package.json"

# iframe-worker: the shim only.
rm -rf "$dest/vendor/iframe-worker"
mkdir -p "$dest/vendor/iframe-worker"
cp iframe-worker/package/shim/index.js "$dest/vendor/iframe-worker/shim.js"
cp iframe-worker/package/LICENSE "$dest/vendor/iframe-worker/LICENSE"

cat > "$dest/VENDORED.txt" <<EOF
Files re-created by scripts/vendor_assets.sh from npm; do not edit by hand.
mathjax@$MATHJAX_VERSION        -> mathjax/tex-chtml.js, mathjax/input/tex/extensions/*
@mathjax/mathjax-newcm-font@$MATHJAX_FONT_VERSION -> mathjax/fonts/mathjax-newcm-font/chtml/{woff2,dynamic}/*
iframe-worker@$IFRAME_WORKER_VERSION  -> vendor/iframe-worker/shim.js (package path shim/index.js)
EOF

echo "vendored mathjax@$MATHJAX_VERSION (font $MATHJAX_FONT_VERSION) and iframe-worker@$IFRAME_WORKER_VERSION into $dest"
