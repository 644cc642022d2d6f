#!/usr/bin/env bash
# Build the release tools once, from the Go module proxy, into a cache outside
# the repository, and print the path of each tool asked for:
#
#   hack/tools/build.sh [goreleaser] [krew] [validate-krew-manifest] [helm]
#
#   ${RIGHTSIZE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-rightsize/tools}/
#     goreleaser/<version>/goreleaser                 pinned in hack/tools/go.mod
#     krew/<version>/krew, validate-krew-manifest     pinned in hack/tools/krew/go.mod
#     helm/<version>/helm                             pinned in hack/tools/helm/go.mod
#
# The versions come from those go.mod files, so bumping a pin builds the new
# version next to the old one. A tool already present is not rebuilt (warm:
# well under a second). Cold, on 2 cores: goreleaser ~6-10 min, krew ~30 s,
# helm ~4 min of CPU (18 min on a machine shared with other builds).
# Set RIGHTSIZE_TOOLS_NICE (default 10) to change the build's niceness.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DIR=${RIGHTSIZE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-rightsize/tools}
GO=${GO:-go}
NICE=(nice -n "${RIGHTSIZE_TOOLS_NICE:-10}")

# The tools modules must never pick up a workspace, or build for another platform.
export GOWORK=off
unset GOOS GOARCH GOFLAGS 2>/dev/null || true

# version MODDIR MODULE: the version of MODULE that MODDIR's go.mod pins.
version() {
	"$GO" -C "$1" list -m -f '{{.Version}}' "$2"
}

# build MODDIR OUT PACKAGE [LDFLAGS]: build PACKAGE's command as the file OUT
# unless it is there already, with LDFLAGS added to "-s -w".
build() {
	local moddir=$1 out=$2 pkg=$3 ldflags=${4:-}
	[ -x "$out" ] && return
	local t=$SECONDS
	echo "[tools] building $pkg into $out" >&2
	mkdir -p "$(dirname "$out")"
	"${NICE[@]}" "$GO" -C "$moddir" build -trimpath -ldflags "-s -w $ldflags" -o "$out.tmp" "$pkg"
	mv "$out.tmp" "$out"
	echo "[tools] built $(basename "$out") in $((SECONDS - t))s" >&2
}

[ $# -gt 0 ] || set -- goreleaser krew validate-krew-manifest helm
# One build at a time: make test starts one early in the background, and
# the distribution tests' own call waits here for it, then finds the tools
# built.
mkdir -p "$DIR"
exec 9>"$DIR/.lock"
flock 9
for tool in "$@"; do
	case $tool in
	goreleaser)
		v=$(version "$HERE" github.com/goreleaser/goreleaser/v2)
		build "$HERE" "$DIR/goreleaser/$v/goreleaser" github.com/goreleaser/goreleaser/v2
		echo "$DIR/goreleaser/$v/goreleaser"
		;;
	krew | validate-krew-manifest)
		v=$(version "$HERE/krew" sigs.k8s.io/krew)
		build "$HERE/krew" "$DIR/krew/$v/$tool" "sigs.k8s.io/krew/cmd/$tool"
		echo "$DIR/krew/$v/$tool"
		;;
	helm)
		v=$(version "$HERE/helm" helm.sh/helm/v4)
		# helm's own release builds stamp the version; without it `helm version` says v4.3.
		build "$HERE/helm" "$DIR/helm/$v/helm" helm.sh/helm/v4/cmd/helm "-X helm.sh/helm/v4/internal/version.version=$v"
		echo "$DIR/helm/$v/helm"
		;;
	*)
		echo "[tools] unknown tool $tool: want goreleaser, krew, validate-krew-manifest or helm" >&2
		exit 2
		;;
	esac
done
