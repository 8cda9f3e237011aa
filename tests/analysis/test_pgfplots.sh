#!/usr/bin/env bash
# The pgfplots figures compile with pdflatex (skipped, visibly, without LaTeX).
set -euo pipefail
exe=$1
command -v pdflatex >/dev/null || { echo "SKIP: pdflatex is not installed (TeX Live: texlive-latex-base texlive-pictures)"; exit 77; }
kpsewhich pgfplots.sty >/dev/null || { echo "SKIP: pgfplots is not installed (TeX Live: texlive-pictures)"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$exe" "$dir" >/dev/null
cd "$dir"
for f in out class; do
  if ! pdflatex -interaction=nonstopmode -halt-on-error "$f.tex" >"$f.latex.log" 2>&1; then
    tail -30 "$f.latex.log"
    echo "FAIL: $f.tex does not compile"
    exit 1
  fi
  head -c 5 "$f.pdf" | grep -q '%PDF-' || { echo "FAIL: no PDF from $f.tex"; exit 1; }
done
echo "pgfplots figures compile"
