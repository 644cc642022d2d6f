#!/usr/bin/env bash
# Build the binaries of the local test control plane (see test/testenv) once,
# from the Go module proxy, into a cache outside the repository:
#
#   ${RIGHTSIZE_TESTENV_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-rightsize/testenv/v1.37.2}/
#     bin/   kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok
#     etc/   kwok.yaml: kwok's default stages, taken from its module
#     src/   the throwaway modules the binaries are built from (generated here)
#     stamp  versions of what bin/ holds, written after a successful build
#
# Binaries already present whose --version works are kept, so a warm run takes
# seconds. Cold: roughly 15-25 minutes on 2 cores, mostly kube-apiserver.
# Set RIGHTSIZE_TESTENV_NICE (default 10) to change the build's niceness.
set -euo pipefail

K8S_VERSION=v1.37.2
STAGING_VERSION=v0.37.2
KWOK_VERSION=v0.8.0
ETCD_VERSION=v3.6.10

DIR=${RIGHTSIZE_TESTENV_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-rightsize/testenv/${K8S_VERSION}}
BIN=$DIR/bin
SRC=$DIR/src
STAMP=$DIR/stamp
GO=${GO:-go}
NICE=(nice -n "${RIGHTSIZE_TESTENV_NICE:-10}")

# The throwaway modules must never pick up the repository's module or workspace.
export GOWORK=off GOFLAGS=-mod=mod GO111MODULE=on
unset GOOS GOARCH 2>/dev/null || true

START=$SECONDS
log() { printf '[testenv %4ds] %s\n' "$((SECONDS - START))" "$*"; }
die() { printf '[testenv] ERROR: %s\n' "$*" >&2; exit 1; }
trap 'rc=$?; [ $rc -eq 0 ] || printf "[testenv] ERROR: build failed (exit %d) after %ds; see the output above. Re-run: hack/testenv/build.sh\n" "$rc" "$((SECONDS - START))" >&2' EXIT

command -v "$GO" >/dev/null || die "go not found on PATH"
mkdir -p "$BIN" "$SRC"

# works NAME VERSION-ARGS... : true when $BIN/NAME exists and prints a version.
works() {
	local name=$1; shift
	[ -x "$BIN/$name" ] && timeout 20 "$BIN/$name" "$@" >/dev/null 2>&1
}

# --- etcd ---------------------------------------------------------------------
build_etcd() {
	if works etcd --version; then log "etcd: present ($("$BIN/etcd" --version | head -1))"; return; fi
	local t=$SECONDS m=$SRC/etcd
	log "etcd $ETCD_VERSION: building"
	rm -rf "$m" && mkdir -p "$m"
	cat >"$m/go.mod" <<EOF
module rightsize.local/testenv/etcd

go 1.26
EOF
	(
		cd "$m"
		"$GO" get \
			go.etcd.io/etcd/server/v3@$ETCD_VERSION \
			go.etcd.io/etcd/api/v3@$ETCD_VERSION \
			go.etcd.io/etcd/client/pkg/v3@$ETCD_VERSION \
			go.etcd.io/etcd/client/v3@$ETCD_VERSION \
			go.etcd.io/etcd/pkg/v3@$ETCD_VERSION
		"${NICE[@]}" "$GO" build -trimpath -ldflags "-s -w" -o "$BIN/etcd.tmp" go.etcd.io/etcd/server/v3
	)
	mv "$BIN/etcd.tmp" "$BIN/etcd"
	works etcd --version || die "built etcd does not run: $BIN/etcd --version"
	log "etcd: built in $((SECONDS - t))s"
}

# --- kwok ---------------------------------------------------------------------
build_kwok() {
	if works kwok --version; then log "kwok: present"; return; fi
	local t=$SECONDS
	log "kwok $KWOK_VERSION: building"
	GOBIN=$BIN "${NICE[@]}" "$GO" install -trimpath -ldflags "-s -w" sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION
	works kwok --version || die "built kwok does not run: $BIN/kwok --version"
	log "kwok: built in $((SECONDS - t))s"
}

# kwok has no built-in stages: kwokctl passes the default ones from kwok's own
# module (node-fast, node heartbeat with lease, pod-fast); test/testenv passes
# this file, the same stages, with --config.
#
# One change: kwok's node-initialize stage writes allocatable and capacity of
# 1k CPU, 1Ti and 1M pods when the node it watched has none. A node created
# without status and given it by a status update right after (as the judge
# did) raced kwok, which sometimes won: a node of 1,920m CPU took 1,000 CPUs
# of pods, a judge "disagreement" in CI. Every node creator now puts the
# status in the create (the API server keeps a Node's status, as a kubelet's
# registration needs); the stage here also leaves allocatable and capacity to
# whoever set them, so a node without them takes no pods rather than 1,000
# CPUs of them. KWOK_CONFIG_REV names the change, so a cached file is rewritten.
KWOK_CONFIG=$DIR/etc/kwok.yaml
# keep_node_resources rewrites node-initialize's allocatable and capacity
# blocks (from "allocatable:" to the nodeInfo that follows) so that each is
# written only back to what the node already has, never defaulted.
keep_node_resources() {
	awk '
		/^      allocatable:$/ { skip = 1
			print "      {{ with .status.allocatable }}"
			print "      allocatable:"
			print "      {{ YAML . 1 }}"
			print "      {{ end }}"
			print "      {{ with .status.capacity }}"
			print "      capacity:"
			print "      {{ YAML . 1 }}"
			print "      {{ end }}"
			print ""
			next }
		skip && /\$nodeInfo := / { skip = 0 }
		!skip { print }
	'
}
KWOK_CONFIG_REV="kwok $KWOK_VERSION, stages rev 2"
write_kwok_config() {
	if [ -s "$KWOK_CONFIG" ] && grep -q "$KWOK_CONFIG_REV" "$KWOK_CONFIG"; then log "kwok config: present"; return; fi
	local src
	src=$("$GO" mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
	[ -d "$src/kustomize/stage" ] || die "could not download sigs.k8s.io/kwok@$KWOK_VERSION sources"
	mkdir -p "$DIR/etc"
	{
		echo "# Default kwok stages, from sigs.k8s.io/kwok $KWOK_VERSION kustomize/stage (written by hack/testenv/build.sh);"
		echo "# $KWOK_CONFIG_REV: node-initialize keeps the node's own allocatable and capacity."
		local f
		for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
			pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
			[ -f "$src/kustomize/stage/$f" ] || die "kwok stage $f not found in $src"
			echo "---"
			if [ "$f" = node/fast/node-initialize.yaml ]; then keep_node_resources <"$src/kustomize/stage/$f"
			else cat "$src/kustomize/stage/$f"; fi
		done
	} >"$KWOK_CONFIG.tmp"
	grep -q 'cpu: 1k' "$KWOK_CONFIG.tmp" && die "kwok config: node-initialize still defaults allocatable (its template changed?)"
	grep -q 'with .status.allocatable' "$KWOK_CONFIG.tmp" || die "kwok config: node-initialize lost allocatable"
	mv "$KWOK_CONFIG.tmp" "$KWOK_CONFIG"
	log "kwok config: wrote $KWOK_CONFIG"
}

# --- kubernetes ---------------------------------------------------------------
K8S_CMDS=(kube-apiserver kube-controller-manager kube-scheduler kubectl)

build_kubernetes() {
	local missing=() name
	for name in "${K8S_CMDS[@]}"; do
		if [ "$name" = kubectl ]; then works kubectl version --client || missing+=("$name")
		else works "$name" --version || missing+=("$name"); fi
	done
	if [ ${#missing[@]} -eq 0 ]; then log "kubernetes: all present ($("$BIN/kube-apiserver" --version))"; return; fi
	local t=$SECONDS m=$SRC/kubernetes
	log "kubernetes $K8S_VERSION: building ${missing[*]} (cold: ~15-25 min on 2 cores)"

	# kubernetes' go.mod requires its staging modules at v0.0.0 and replaces them
	# with ./staging/src/...; replaces of a dependency are ignored, so mirror them
	# with the published staging modules.
	local gomod
	gomod=$("$GO" mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
	[ -f "$gomod" ] || die "could not download k8s.io/kubernetes@$K8S_VERSION go.mod"
	local staging
	staging=$(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\)[[:space:]]*=>[[:space:]]*\./staging/.*#\1#p' "$gomod" | sort -u)
	[ -n "$staging" ] || die "no staging replaces found in $gomod"
	log "kubernetes: $(echo "$staging" | wc -l) staging modules -> $STAGING_VERSION"

	rm -rf "$m" && mkdir -p "$m"
	{
		echo "module rightsize.local/testenv/kubernetes"
		echo
		echo "go 1.26"
		echo
		echo "require k8s.io/kubernetes $K8S_VERSION"
		echo
		echo "replace ("
		for name in $staging; do echo "	$name => $name $STAGING_VERSION"; done
		echo ")"
	} >"$m/go.mod"

	local pkgs=() p
	for p in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$p"); done
	local date
	date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	local ldflags="-s -w"
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=37"
		ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=$date"
	done
	(
		cd "$m"
		log "kubernetes: resolving modules (go get)"
		for p in "${K8S_CMDS[@]}"; do "$GO" get "k8s.io/kubernetes/cmd/$p@$K8S_VERSION"; done
		log "kubernetes: compiling"
		mkdir -p "$BIN/.tmp"
		"${NICE[@]}" "$GO" build -trimpath -ldflags "$ldflags" -o "$BIN/.tmp/" "${pkgs[@]}"
	)
	for p in "${missing[@]}"; do mv "$BIN/.tmp/$p" "$BIN/$p"; done
	rmdir "$BIN/.tmp" 2>/dev/null || true
	for p in "${missing[@]}"; do
		if [ "$p" = kubectl ]; then works kubectl version --client || die "built kubectl does not run"
		else works "$p" --version || die "built $p does not run: $BIN/$p --version"; fi
	done
	log "kubernetes: built ${missing[*]} in $((SECONDS - t))s"
}

log "cache: $DIR"
build_etcd
build_kwok
write_kwok_config
build_kubernetes

{
	echo "kubernetes=$K8S_VERSION"
	echo "staging=$STAGING_VERSION"
	echo "etcd=$ETCD_VERSION"
	echo "kwok=$KWOK_VERSION"
	echo "go=$("$GO" env GOVERSION)"
	echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$STAMP.tmp"
mv "$STAMP.tmp" "$STAMP"
log "done: $BIN ($(cd "$BIN" && echo *))"
