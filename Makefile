# kubectl-rightsize — build, demo and test.
GO       ?= go
BIN      := bin/kubectl-rightsize
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
DATE     ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS  := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
FUZZTIME ?= 10s
TOOLS           := hack/tools/build.sh
IMAGE           ?= ghcr.io/rightsize-dev/kubectl-rightsize:$(VERSION)
IMAGE_PLATFORMS ?= linux/amd64
IMAGE_TAR       ?= dist/kubectl-rightsize-image.tar
CHART_REGISTRY  ?= oci://ghcr.io/rightsize-dev/charts
# vet, the tests and the fuzz runs compile one way: static (CGO off) and
# -trimpath, which is how goreleaser and `make image` build the released
# binary. The packages then compile once, and the e2e plugin, the dist
# tests' goreleaser snapshot and image binary only link (cold: one full
# compile instead of two).
TEST_ENV        := CGO_ENABLED=0 GOFLAGS="$(strip $(shell $(GO) env GOFLAGS) -trimpath)"

.PHONY: all build demo test vet fuzz bench generate clean testenv tools dist krew image chart-push test-dist conformance bench-karpenter

all: build

build: ## Build the plugin binary into bin/.
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/kubectl-rightsize

demo: build ## Plan nodes offline for the bundled flash-sale example.
	$(BIN) explain -f examples/flash-sale.yaml

testenv: ## Build (once) the local test control plane into ~/.cache/kubectl-rightsize/testenv/v1.37.2 (~16-25 min cold, <1 s warm).
	hack/testenv/build.sh

test: vet testenv tools ## Vet, build the test control plane and release tools if missing, run every test (the dist ones too), then a short run of each fuzz target.
	$(TEST_ENV) $(GO) test -tags dist -timeout 60m ./...
	$(TEST_ENV) GOWORK=off $(GO) -C hack/image test ./...
	$(TEST_ENV) GOWORK=off $(GO) -C hack/karpenterbench test ./...
	$(MAKE) fuzz

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(TEST_ENV) $(GO) vet -tags dist ./...

fuzz: ## Run each fuzz target for FUZZTIME.
	$(TEST_ENV) $(GO) test ./pkg/snapshot -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME)
	$(TEST_ENV) $(GO) test ./pkg/snapshot -run '^$$' -fuzz '^FuzzFastYAMLToJSON$$' -fuzztime $(FUZZTIME)
	$(TEST_ENV) $(GO) test ./pkg/cloud -run '^$$' -fuzz '^FuzzReadInstanceTypes$$' -fuzztime $(FUZZTIME)
	$(TEST_ENV) $(GO) test ./pkg/solver -run '^$$' -fuzz '^FuzzSolve$$' -fuzztime $(FUZZTIME)
	$(TEST_ENV) $(GO) test ./pkg/solver -run '^$$' -fuzz '^FuzzConsolidate$$' -fuzztime $(FUZZTIME)
	$(TEST_ENV) $(GO) test ./pkg/cloud/aws/interruption -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)

conformance: ## Run the conformance scenarios (written from Karpenter's and kube-scheduler's tests) through the binary; ends with "conformance: P/N pass".
	@mkdir -p bin && rm -f bin/conformance.txt
	@$(TEST_ENV) CONFORMANCE_REPORT=$(CURDIR)/bin/conformance.txt $(GO) test -count=1 ./test/conformance >bin/conformance.log 2>&1; rc=$$?; \
	  if [ -s bin/conformance.txt ]; then cat bin/conformance.txt; else cat bin/conformance.log; echo "conformance: 0/0 pass"; fi; exit $$rc

bench: ## Run the solver suites against the baselines and print one table, then Karpenter's own scheduler beside ours (bench-karpenter).
	$(GO) test ./pkg/solver/baseline ./pkg/solver -run '^$$' -bench 'Suites|Consolidate' -benchtime 3x -timeout 30m | tee /dev/stderr | $(GO) run ./hack/benchtable
	@$(MAKE) --no-print-directory bench-karpenter

KARPENTER_SIZES ?= 1000,5000
bench-karpenter: ## Karpenter v1.14.1's scheduler (from the module proxy) and ours on Karpenter's benchmark mix, KARPENTER_SIZES pods; one table from one run.
	$(TEST_ENV) GOWORK=off $(GO) -C hack/karpenterbench run . -sizes $(KARPENTER_SIZES)

generate: ## Regenerate the embedded catalog, pkg/apis deepcopy + the CRDs in config/crd (controller-gen pinned in go.mod), the operator's ClusterRole, the Helm chart in charts/ from config/, then the reference pages in docs/reference.
	rm -f config/crd/rightsize.dev_*.yaml
	$(GO) generate ./pkg/apis/... ./pkg/cloud/catalog ./config
	$(GO) run ./hack/genchart
	$(GO) run ./hack/gendocs

clean:
	rm -rf bin dist

tools: ## Build (once) goreleaser, krew and helm into ~/.cache/kubectl-rightsize/tools (~13 min cold, <1 s warm).
	$(TOOLS) >/dev/null

dist: ## Snapshot release into dist/ (goreleaser): 5 archives with LICENSE, checksums.txt; then dist/krew/rightsize.yaml.
	nice hack/tools/goreleaser.sh release --snapshot --clean
	$(MAKE) krew

krew: ## dist/krew/rightsize.yaml for the local release in dist/ (kubectl krew install --manifest=… --archive=…), checked with validate-krew-manifest. A tagged release writes krew/rightsize.yaml (hack/krewmanifest without -snapshot).
	$(GO) run ./hack/krewmanifest -dist dist -snapshot -out dist/krew/rightsize.yaml
	$$($(TOOLS) validate-krew-manifest) -manifest dist/krew/rightsize.yaml -skip-install

image: ## Operator image as an OCI tarball in dist/ (no container engine). Run after dist: dist cleans dist/.
	@set -e; for p in $(IMAGE_PLATFORMS); do \
	  CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -trimpath -ldflags "$(LDFLAGS)" \
	    -o dist/image/$${p%/*}_$${p#*/}/kubectl-rightsize ./cmd/kubectl-rightsize; \
	done
	$(GO) -C hack/image run . -out $(CURDIR)/$(IMAGE_TAR) -tag $(IMAGE) -version $(VERSION) -revision $(COMMIT) \
	  -docs $(CURDIR)/LICENSE,$(CURDIR)/NOTICE \
	  $(foreach p,$(IMAGE_PLATFORMS),-binary $(p)=$(CURDIR)/dist/image/$(subst /,_,$(p))/kubectl-rightsize)

chart-push: ## Push the packaged Helm chart CHART (bin/chart/kubectl-rightsize-<version>.tgz, which the release packages) to CHART_REGISTRY with the pinned helm; the release's publisher in .goreleaser.yaml runs it. Log in first: hack/tools/helm.sh registry login ghcr.io.
	@test -n "$(CHART)" || { echo "chart-push: set CHART to the packaged chart, e.g. CHART=bin/chart/kubectl-rightsize-1.2.3.tgz"; exit 2; }
	hack/tools/helm.sh push $(CHART) $(CHART_REGISTRY)

test-dist: testenv tools ## Only the distribution tests (krew round trip, manifests, the Helm chart, the operator as its ServiceAccount, the image); make test runs them too.
	$(TEST_ENV) $(GO) test -tags dist -timeout 45m -v ./test/e2e -run 'Krew|OperatorManifests|OperatorRBAC|OperatorAsItsServiceAccount|OperatorImage|Kustomize|Helm'
