#!/usr/bin/env bash
# Re-create the vendored browser assets under docs/javascripts/ from their npm packages.
#
# The site must work opened from disk (file://) with no network, so nothing is loaded from a CDN:
#   - MathJax 3: es5/tex-chtml-full.js (the "full" build carries every TeX extension, so it never
#     fetches one) and its CHTML woff-v2 fonts, which MathJax looks for relative to its own script
#     ([mathjax]/output/chtml/fonts/woff-v2).
#   - iframe-worker: the shim that lets Material's search run its Web Worker under file://.
#     mkdocs.yml lists it under extra.polyfills, so the offline plugin does not add the CDN copy.
#
# Usage: scripts/vendor_assets.sh            (needs npm and tar; writes only docs/javascripts/{mathjax,vendor})
set -euo pipefail

MATHJAX_VERSION=3.2.2
IFRAME_WORKER_VERSION=1.0.4

root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/docs/javascripts"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cd "$tmp"
npm pack --silent "mathjax@$MATHJAX_VERSION" "iframe-worker@$IFRAME_WORKER_VERSION" >/dev/null

mkdir mathjax iframe-worker
tar xzf "mathjax-$MATHJAX_VERSION.tgz" -C mathjax
tar xzf "iframe-worker-$IFRAME_WORKER_VERSION.tgz" -C iframe-worker

# MathJax: the one combined component plus the fonts, laid out as MathJax expects them.
rm -rf "$dest/mathjax"
mkdir -p "$dest/mathjax/output/chtml/fonts"
cp mathjax/package/es5/tex-chtml-full.js "$dest/mathjax/"
cp -r mathjax/package/es5/output/chtml/fonts/woff-v2 "$dest/mathjax/output/chtml/fonts/"
cp mathjax/package/LICENSE "$dest/mathjax/LICENSE"

# iframe-worker: the shim only.
rm -rf "$dest/vendor/iframe-worker"
mkdir -p "$dest/vendor/iframe-worker"
cp iframe-worker/package/shim/index.js "$dest/vendor/iframe-worker/shim.js"
cp iframe-worker/package/LICENSE "$dest/vendor/iframe-worker/LICENSE"

cat > "$dest/VENDORED.txt" <<EOF
Files re-created by scripts/vendor_assets.sh from npm; do not edit by hand.
mathjax@$MATHJAX_VERSION        -> mathjax/tex-chtml-full.js, mathjax/output/chtml/fonts/woff-v2/*
iframe-worker@$IFRAME_WORKER_VERSION  -> vendor/iframe-worker/shim.js (package path shim/index.js)
EOF

echo "vendored mathjax@$MATHJAX_VERSION and iframe-worker@$IFRAME_WORKER_VERSION into $dest"
