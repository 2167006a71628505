#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a short time each.
# Usage: scripts/fuzz.sh FUZZTIME   (an input count such as 20000x, or a duration such as 5s)
set -euo pipefail
dur=${1:-20000x}
n=0
while IFS= read -r file; do
  pkg=./$(dirname "$file")
  for f in $(grep -hoE '^func (Fuzz[A-Za-z0-9_]+)' "$file" | awk '{print $2}'); do
    echo "fuzz: $pkg $f ($dur)"
    go test -run '^$' -fuzz "^${f}\$" -fuzztime "$dur" "$pkg"
    n=$((n+1))
  done
done < <(git ls-files '*_test.go' 2>/dev/null || find . -name '*_test.go')
echo "fuzz: $n targets ran"
