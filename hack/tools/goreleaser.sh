#!/usr/bin/env bash
# Run the pinned goreleaser (built once by build.sh) from the repository root:
#
#   hack/tools/goreleaser.sh release --snapshot --clean     (make dist)
#   hack/tools/goreleaser.sh check
#
# goreleaser reads the commit, its date and the tag from git, but drops all
# of it ("none") when the clone has no remote, as a fresh `git init` or a CI
# checkout without one. Then the upstream URL is supplied through git's
# environment configuration; the repository's own config is left alone.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GORELEASER=$("$HERE/build.sh" goreleaser)
cd "$HERE/../.."
if ! git ls-remote --get-url >/dev/null 2>&1; then
	export GIT_CONFIG_COUNT=1
	export GIT_CONFIG_KEY_0=remote.origin.url
	export GIT_CONFIG_VALUE_0=https://github.com/rightsize-dev/kubectl-rightsize.git
fi
exec "$GORELEASER" "$@"
