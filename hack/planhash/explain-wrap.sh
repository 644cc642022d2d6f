#!/bin/sh
# explain-wrap.sh stands in for the kubectl-rightsize binary of
# `make conformance` (CONFORMANCE_BINARY) and records the sha256 of every
# plan it prints, keyed by the sha256 of its input (manifest, instance types
# and the other arguments, without the temporary paths), in $PLANHASH_OUT.
# Usage:
#   go build -o bin/kubectl-rightsize.real ./cmd/kubectl-rightsize
#   PLANHASH_REAL=$PWD/bin/kubectl-rightsize.real PLANHASH_OUT=$PWD/bin/conformance.hashes \
#     CONFORMANCE_BINARY=$PWD/hack/planhash/explain-wrap.sh make conformance
#   sort bin/conformance.hashes | sha256sum
set -e
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
"$PLANHASH_REAL" "$@" >"$out" || rc=$?
key=$(
	for a in "$@"; do
		if [ -d "$a" ]; then cat "$a"/*; elif [ -f "$a" ]; then cat "$a"; else printf '%s\n' "$a"; fi
	done | sha256sum | cut -c1-64
)
plan=$(sha256sum <"$out" | cut -c1-64)
printf '%s %s %s\n' "$key" "$plan" "$rc" >>"$PLANHASH_OUT"
cat "$out"
exit $rc
