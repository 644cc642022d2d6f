#!/usr/bin/env bash
# Run `go test -json ARGS` as one named part of `make test`: the JSON goes to
# bin/test-NAME.json, a readable stream (failed tests' whole output, slow
# tests, package results) and the part's report (slowest tests, packages,
# "tests: N passed, N failed, N skipped") to stdout, the report also to
# bin/test-NAME.md. The exit code is go test's (or testtime's, should the
# stream show a failure go test did not report).
#
#   hack/gotest.sh NAME [go test flags and packages]
#   hack/gotest.sh -C DIR NAME [...]   # go -C DIR test: another module
set -uo pipefail
GO=${GO:-go}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
goflags=()
if [ "${1:-}" = -C ]; then goflags=(-C "$2"); shift 2; fi
[ $# -ge 1 ] || { echo "usage: hack/gotest.sh [-C DIR] NAME [go test args]" >&2; exit 2; }
name=$1; shift
mkdir -p "$ROOT/bin"
testtime=$ROOT/bin/testtime
if [ ! -x "$testtime" ] || [ "$ROOT/hack/testtime/main.go" -nt "$testtime" ]; then
	(cd "$ROOT" && GOFLAGS= "$GO" build -o "$testtime" ./hack/testtime) || exit 2
fi
# -count=1: never a cached result. The e2e, distribution, conformance and
# hostile tests run binaries they build (the plugin, the control plane) and
# go test's cache does not see those change: a cached pass could be stale.
"$GO" "${goflags[@]}" test -json -count=1 "$@" | "$testtime" -json "$ROOT/bin/test-$name.json" -md "$ROOT/bin/test-$name.md"
rc=("${PIPESTATUS[@]}")
[ "${rc[0]}" -ne 0 ] && exit "${rc[0]}"
exit "${rc[1]}"
