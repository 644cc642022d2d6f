#!/usr/bin/env bash
# Run the pinned helm (built once by build.sh) from the repository root, e.g.
# as .goreleaser.yaml's hook that packages the chart with the release's
# version:
#
#   hack/tools/helm.sh package charts/kubectl-rightsize --version 1.2.3 --app-version v1.2.3 --destination bin/chart
#   hack/tools/helm.sh push bin/chart/kubectl-rightsize-1.2.3.tgz oci://ghcr.io/rightsize-dev/charts
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HELM=$("$HERE/build.sh" helm)
cd "$HERE/../.."
exec "$HELM" "$@"
