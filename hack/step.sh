#!/usr/bin/env bash
# Run one step of `make test` and stamp it into bin/steps.tsv: name, start
# and end (Unix seconds), exit code and CPU seconds (user+system, the step's
# processes and their children; empty without /usr/bin/time). The step's
# exit code is returned, so a failed step still fails make.
#
#   hack/step.sh NAME COMMAND [ARGS...]
#   go run ./hack/testtime -steps bin/steps.tsv   # the table
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: hack/step.sh NAME COMMAND [ARGS...]" >&2; exit 2; }
name=$1; shift
out=${STEPS_FILE:-bin/steps.tsv}
mkdir -p "$(dirname "$out")"
now() { date +%s.%N | cut -c1-14; }
start=$(now)
echo "[step] $name: $* ($(date -u +%H:%M:%S) UTC)" >&2
cpu=""
if [ -x /usr/bin/time ]; then
	tf=$(mktemp)
	/usr/bin/time -o "$tf" -f '%U %S' "$@"
	rc=$?
	# The last line: a killed command makes time print a note first.
	cpu=$(tail -1 "$tf" | awk 'NF == 2 { printf "%.1f", $1 + $2 }')
	rm -f "$tf"
else
	"$@"
	rc=$?
fi
end=$(now)
printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$start" "$end" "$rc" "$cpu" >>"$out"
echo "[step] $name: exit $rc after $(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.0f", e - s }') s (CPU ${cpu:-?} s)" >&2
exit "$rc"
