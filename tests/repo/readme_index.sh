#!/usr/bin/env bash
# README's documentation index names every docs/*.md (one "- docs/X.md: ..."
# line each), and names no page that does not exist.
set -uo pipefail
root=${1:?usage: readme_index.sh SOURCE_DIR}
cd "$root" || exit 1
bad=0
for f in docs/*.md; do
  grep -q "^- $f: " README.md || { echo "FAIL: README.md's index does not list $f"; bad=1; }
done
for f in $(sed -n 's/^- \(docs\/[^:]*\.md\): .*/\1/p' README.md); do
  [ -f "$f" ] || { echo "FAIL: README.md lists $f, which does not exist"; bad=1; }
done
[ $bad -eq 0 ] && echo "ok: $(ls docs/*.md | wc -l) pages in README.md's index"
exit $bad
