# kubectl-rightsize — build, demo and test.
GO       ?= go
BIN      := bin/kubectl-rightsize
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
DATE     ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS  := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
# Each fuzz target runs a count of executions sized to ~6 s on this
# machine at rest, ~20-30 s beside make test's e2e (package:target:count).
# A count, not a duration: Go 1.26's coordinator can fail a
# duration-bounded run with a bare "context deadline exceeded" when its
# workers are starved (go.dev/issue/75804, fixed in 1.27; it failed CI
# beside the e2e), and a count does the same work however loaded the
# machine is. FUZZTIME overrides every count (e.g. FUZZTIME=100000x, or a
# duration for a long run by hand).
FUZZ_TARGETS := pkg/snapshot:FuzzDecode:8000 pkg/snapshot:FuzzFastYAMLToJSON:15000 \
	pkg/cloud:FuzzReadInstanceTypes:60000 pkg/solver:FuzzSolve:500 \
	pkg/solver:FuzzConsolidate:400 pkg/solver:FuzzBound:80 \
	pkg/cloud/aws/interruption/messages:FuzzParse:400000
FUZZTIME ?=
TOOLS           := hack/tools/build.sh
IMAGE_REPOSITORY ?= ghcr.io/rightsize-dev/kubectl-rightsize
IMAGE           ?= $(IMAGE_REPOSITORY):$(VERSION)
IMAGE_PLATFORMS ?= linux/amd64
IMAGE_TAR       ?= dist/kubectl-rightsize-image.tar
IMAGE_BUILD_DIR ?= dist/image
CHART_REGISTRY  ?= oci://ghcr.io/rightsize-dev/charts
# A tagged release (the before hook `make release-image` in .goreleaser.yaml)
# builds its image outside dist/, which goreleaser refuses to find filled
# after its hooks, pushes it, and packages into CHART_DIR the chart pinned to
# the pushed digest, written first into PINNED_CHART_ROOT.
# PINNED_REF gets the pushed image's repository@sha256:<digest>, which the
# release notes' `operator install --image` reads.
CHART_DIR         ?= bin/chart
PINNED_CHART_ROOT ?= bin/chart-pinned
PINNED_REF        ?= bin/image/pinned-ref
# vet, the tests and the fuzz runs compile one way: static (CGO off) and
# -trimpath, which is how goreleaser and `make image` build the released
# binary. The packages then compile once, and the e2e plugin, the dist
# tests' goreleaser snapshot and image binary only link (cold: one full
# compile instead of two).
TEST_ENV        := CGO_ENABLED=0 GOFLAGS="$(strip $(shell $(GO) env GOFLAGS) -trimpath)"

.PHONY: all build demo test vet fuzz bench generate clean testenv tools dist krew image release-image release-pin chart-push test-dist conformance bench-karpenter bench-traces bench-live planhashes

all: build

build: ## Build the plugin binary into bin/.
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/kubectl-rightsize

demo: build ## Plan nodes offline for the bundled flash-sale example.
	$(BIN) explain -f examples/flash-sale.yaml

testenv: ## Build (once) the local test control plane into ~/.cache/kubectl-rightsize/testenv/v1.37.2 (~16-25 min cold, <1 s warm).
	hack/testenv/build.sh

# make test runs in named steps (hack/step.sh stamps each into
# bin/steps.tsv); each go test records its -json into bin/test-<step>.json
# (hack/gotest.sh, read by hack/testtime). At the end, pass or fail, the 30
# slowest tests, the packages' times, the step table and the
# "tests: N passed, N failed, N skipped" line are printed (also kept in
# bin/test-report.md).
#
# The order keeps two cores busy without disturbing what measures time:
# vet and compile; the control plane built if missing; the e2e tests that
# hold a time or a cost after a timed arrival to a target (E2E_SOLO,
# soloEnv in test/e2e), the hostile-input suite (each case within 10 s)
# and the unit tests that hold a wall-clock bound (UNIT_SOLO: --timeout
# covering the printing of 20,000 pods within 50 ms, which missed by 0.5 s
# beside the e2e) alone on the machine; then side by side, as one
# step each: the rest of the e2e (its tests share four control planes,
# test/e2e/planes_test.go), the unit tests, Karpenter's live controller
# beside ours (hack/karpenterlive), and the release tools followed by the
# distribution tests (-tags dist: the tools, a goreleaser snapshot, the
# image), hack/image's tests and a short run of each fuzz target.
STEP        := hack/step.sh
GOTEST      := hack/gotest.sh
E2E_DIST    := Krew|OperatorManifests|OperatorRBAC|OperatorAsItsServiceAccount|OperatorImage|Kustomize|Helm
# soloEnv fails a test make test runs in the wrong one of these two steps,
# naming this list.
E2E_SOLO    := TestLiveEqualsPlan|TestOperatorLatency|TestOperatorBurst|TestOperatorBigBurst
E2E_PKG     := ./test/e2e
UNIT_SOLO   := TestTimeoutCoversPrinting
TEST_REPORT := { bin/testtime -q bin/test-*.json | tee bin/test-report.md; bin/testtime -steps bin/steps.tsv | tee -a bin/test-report.md; }
TEST_FAILED := { $(TEST_REPORT); echo "make test: step failed"; exit 1; }
# The steps that run side by side, each a shell command ending in its exit code.
TEST_E2E    = $(STEP) e2e env $(TEST_ENV) RIGHTSIZE_E2E_PHASE=shared $(GOTEST) e2e -tags dist -timeout 60m -parallel 64 -skip '^($(E2E_SOLO))$$|$(E2E_DIST)' $(E2E_PKG)
TEST_UNIT   = $(STEP) unit sh -c '$(TEST_ENV) $(GOTEST) unit -tags dist -timeout 30m -skip '"'"'^($(UNIT_SOLO))$$'"'"' $$($(GO) list -tags dist ./... | grep -v -e /test/e2e$$ -e /test/hostile$$) && \
	  $(TEST_ENV) GOWORK=off $(GOTEST) -C hack/karpenterbench unit-karpenterbench ./... && \
	  $(TEST_ENV) GOWORK=off $(GOTEST) -C hack/gencatalog unit-gencatalog ./...'
TEST_LIVE   = $(STEP) karpenterlive env $(TEST_ENV) GOWORK=off $(GOTEST) -C hack/karpenterlive karpenterlive -timeout 15m ./...
# The release tools are built from the start in the background at the
# lowest priority (TEST_TOOLS: nothing when they are cached; cold, ~8
# CPU-minutes that use what vet, the control plane's build and the solo
# step leave of the two cores); the distribution tests wait for them
# (tools-wait; hack/tools/build.sh builds one at a time). hack/image's
# tests run the pinned helm, so they follow; the fuzz runs follow them, in
# the time the longest e2e tests still take.
TEST_TOOLS  = RIGHTSIZE_TOOLS_NICE=19 $(STEP) tools-early $(MAKE) --no-print-directory tools
TEST_DIST   = { $(STEP) tools-wait $(MAKE) --no-print-directory tools && \
	  $(STEP) dist env $(TEST_ENV) $(GOTEST) dist -tags dist -timeout 45m -run '$(E2E_DIST)' $(E2E_PKG) && \
	  $(STEP) unit-image env $(TEST_ENV) GOWORK=off $(GOTEST) -C hack/image unit-image -timeout 15m ./... && \
	  $(STEP) fuzz $(MAKE) --no-print-directory fuzz; }

test: ## Vet, build the test control plane and release tools if missing, run every test (the dist ones too), then a short run of each fuzz target; prints the slowest tests and each step's time.
	@mkdir -p bin && rm -f bin/steps.tsv bin/test-*.json bin/test-*.md
	@{ $(TEST_TOOLS); } > bin/step-tools-early.log 2>&1 &
	@GOFLAGS= $(GO) build -o bin/testtime ./hack/testtime
	@$(STEP) vet $(MAKE) --no-print-directory vet || $(TEST_FAILED)
	@$(STEP) testenv hack/testenv/build.sh || $(TEST_FAILED)
	@$(STEP) compile env $(TEST_ENV) $(GO) build -tags dist ./... || $(TEST_FAILED)
	@$(STEP) e2e-solo sh -c '$(TEST_ENV) RIGHTSIZE_E2E_PHASE=solo $(GOTEST) e2e-solo -tags dist -timeout 20m -run "^($(E2E_SOLO))$$" $(E2E_PKG) && \
	  $(TEST_ENV) $(GOTEST) hostile -timeout 10m ./test/hostile && \
	  $(TEST_ENV) $(GOTEST) unit-solo -run "^($(UNIT_SOLO))$$" ./pkg/explain' || $(TEST_FAILED)
	@rc=0; { $(TEST_E2E); } > bin/step-e2e.log 2>&1 & e2e=$$!; \
	  { $(TEST_LIVE); } > bin/step-karpenterlive.log 2>&1 & live=$$!; \
	  { $(TEST_DIST) } > bin/step-dist.log 2>&1 & dist=$$!; \
	  $(TEST_UNIT) || rc=1; \
	  for p in $$live $$dist $$e2e; do wait $$p || rc=1; done; \
	  for s in tools-early karpenterlive dist e2e; do echo "--- $$s (bin/step-$$s.log)"; cat bin/step-$$s.log; done; \
	  [ $$rc = 0 ] || $(TEST_FAILED)
	@$(TEST_REPORT)

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(TEST_ENV) $(GO) vet -tags dist ./...

fuzz: ## Run each fuzz target for its count of executions (FUZZ_TARGETS; FUZZTIME overrides).
	@# The corpus cache is fresh each run (bin/fuzzcache): Go's own cache in
	@# GOCACHE grows with every run, and once its replay outlasted the budget
	@# the solver's targets only replayed it. A new input is minimized for 50
	@# executions, not Go's 60 s, which FuzzDecode spent whole on its first
	@# find (11 executions in 10 s). Crashers still go to testdata/fuzz.
	@rm -rf bin/fuzzcache
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; n=$${rest#*:}; \
	  echo "$(GO) test ./$$pkg -fuzz ^$$name\$$ -fuzztime $${FUZZTIME:-$${n}x}"; \
	  $(TEST_ENV) $(GO) test ./$$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime "$${FUZZTIME:-$${n}x}" -fuzzminimizetime 50x -timeout 10m \
	    -args -test.fuzzcachedir=$(CURDIR)/bin/fuzzcache/$$name; \
	done

conformance: ## Run the conformance scenarios (written from Karpenter's and kube-scheduler's tests) through the binary; ends with "conformance: P/N pass".
	@mkdir -p bin && rm -f bin/conformance.txt
	@$(TEST_ENV) CONFORMANCE_REPORT=$(CURDIR)/bin/conformance.txt $(GO) test -count=1 ./test/conformance >bin/conformance.log 2>&1; rc=$$?; \
	  if [ -s bin/conformance.txt ]; then cat bin/conformance.txt; else cat bin/conformance.log; echo "conformance: 0/0 pass"; fi; exit $$rc

bench: ## Run the solver suites against the baselines and print one table, then Karpenter's own scheduler beside ours (bench-karpenter).
	$(GO) test ./pkg/solver/baseline ./pkg/solver -run '^$$' -bench 'Suites|Consolidate' -benchtime 3x -timeout 30m | tee /dev/stderr | $(GO) run ./hack/benchtable
	@$(MAKE) --no-print-directory bench-karpenter
	@if [ -n "$(CLUSTERDATA)" ]; then $(MAKE) --no-print-directory bench-traces; else echo "bench: CLUSTERDATA not set: the production-trace rows (make bench-traces) are skipped"; fi

planhashes: ## Solve every benchmark problem and compare each plan's sha256 with pkg/solver/testdata/planhashes.txt (refactors must leave plans byte-identical; PLANHASHES_FLAGS=-update-planhashes rewrites it).
	$(GO) vet -tags planhashes ./pkg/solver
	$(GO) test -tags planhashes -count=1 ./pkg/solver -run '^TestPlanHashes$$' $(PLANHASHES_FLAGS)

CLUSTERDATA ?=
bench-traces: build ## The whole explain command on Alibaba's production traces (a clusterdata checkout at CLUSTERDATA; data never committed): time, CPU, peak RSS, cost ÷ bound and ÷ the best one-type FFD, --timeout and SIGTERM, 5 runs a row.
	@test -n "$(CLUSTERDATA)" || { echo "bench-traces: set CLUSTERDATA to a checkout of github.com/alibaba/clusterdata"; exit 2; }
	$(GO) build -o bin/clusterdata ./hack/clusterdata
	$(GO) run ./hack/tracebench -clusterdata $(CLUSTERDATA) -bin $(BIN) -convert bin/clusterdata -json bin/tracebench.json

KARPENTER_SIZES ?= 1000,5000
bench-karpenter: ## Karpenter v1.14.1's scheduler (from the module proxy) and ours on Karpenter's benchmark mix, KARPENTER_SIZES pods; one table from one run.
	$(TEST_ENV) GOWORK=off $(GO) -C hack/karpenterbench run . -sizes $(KARPENTER_SIZES)

TRACE          ?=
BENCH_LIVE_OUT ?= $(CURDIR)/bin/bench-live
bench-live: testenv ## Karpenter v1.14.1's kwok controller and our operator live, each on its own test control plane, on the same catalog and workloads (ramp, TRACE=openb_pod_list_default.csv replay, diurnal); tables in bin/bench-live.{md,json}. Tens of minutes.
	@mkdir -p $(dir $(BENCH_LIVE_OUT))
	$(TEST_ENV) GOWORK=off nice $(GO) -C hack/karpenterlive run . -trace "$(TRACE)" -out $(BENCH_LIVE_OUT) $(BENCH_LIVE_FLAGS)

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
	    -o $(IMAGE_BUILD_DIR)/$${p%/*}_$${p#*/}/kubectl-rightsize ./cmd/kubectl-rightsize; \
	done
	$(GO) -C hack/image run . -out $(abspath $(IMAGE_TAR)) -tag $(IMAGE) -version $(VERSION) -revision $(COMMIT) \
	  -docs $(CURDIR)/LICENSE,$(CURDIR)/NOTICE \
	  $(foreach p,$(IMAGE_PLATFORMS),-binary $(p)=$(abspath $(IMAGE_BUILD_DIR))/$(subst /,_,$(p))/kubectl-rightsize)

release-image: ## A tagged release's before hook (.goreleaser.yaml), after the chart is packaged: the image of RELEASE_VERSION (goreleaser's version, no v) built (make image), pushed as IMAGE_REPOSITORY:v<version> and the chart re-packaged pinned to its digest (make release-pin). SNAPSHOT=true (make dist) pushes nothing. Log in first: crane auth login ghcr.io (or docker login).
	@test -n "$(RELEASE_VERSION)" || { echo "release-image: set RELEASE_VERSION to the release's version, e.g. RELEASE_VERSION=1.2.3"; exit 2; }
	@if [ "$(SNAPSHOT)" = true ]; then \
	  rm -f $(PINNED_REF); \
	  echo "release-image: a snapshot pushes no image; $(CHART_DIR)/kubectl-rightsize-$(RELEASE_VERSION).tgz keeps the image by tag v$(RELEASE_VERSION)"; \
	else \
	  $(MAKE) --no-print-directory image VERSION=v$(RELEASE_VERSION) IMAGE=$(IMAGE_REPOSITORY):v$(RELEASE_VERSION) \
	    IMAGE_BUILD_DIR=bin/image IMAGE_TAR=bin/image/kubectl-rightsize-image.tar && \
	  $(MAKE) --no-print-directory release-pin RELEASE_VERSION=$(RELEASE_VERSION) IMAGE_TAR=bin/image/kubectl-rightsize-image.tar; \
	fi

release-pin: ## Push the image tarball IMAGE_TAR as IMAGE_REPOSITORY:v<RELEASE_VERSION> (hack/image -push), then package the chart of RELEASE_VERSION into CHART_DIR with values.yaml's image.repository and image.digest set to what the registry stored (hack/genchart -image), and that reference into PINNED_REF.
	@test -n "$(RELEASE_VERSION)" || { echo "release-pin: set RELEASE_VERSION to the release's version, e.g. RELEASE_VERSION=1.2.3"; exit 2; }
	@set -e; \
	ref=$$($(GO) -C hack/image run . -in $(abspath $(IMAGE_TAR)) -push $(IMAGE_REPOSITORY):v$(RELEASE_VERSION)); \
	rm -rf $(PINNED_CHART_ROOT); \
	$(GO) run ./hack/genchart -root $(PINNED_CHART_ROOT) -image $$ref; \
	hack/tools/helm.sh package $(abspath $(PINNED_CHART_ROOT))/charts/kubectl-rightsize --version $(RELEASE_VERSION) --app-version v$(RELEASE_VERSION) --destination $(abspath $(CHART_DIR)); \
	mkdir -p $(dir $(PINNED_REF)) && echo "$$ref" > $(PINNED_REF); \
	echo "release-pin: $(CHART_DIR)/kubectl-rightsize-$(RELEASE_VERSION).tgz runs $$ref"

chart-push: ## Push the packaged Helm chart CHART (bin/chart/kubectl-rightsize-<version>.tgz, which the release packages) to CHART_REGISTRY with the pinned helm; the release's publisher in .goreleaser.yaml runs it. Log in first: hack/tools/helm.sh registry login ghcr.io.
	@test -n "$(CHART)" || { echo "chart-push: set CHART to the packaged chart, e.g. CHART=bin/chart/kubectl-rightsize-1.2.3.tgz"; exit 2; }
	hack/tools/helm.sh push $(CHART) $(CHART_REGISTRY)

test-dist: testenv tools ## Only the distribution tests (krew round trip, manifests, the Helm chart, the operator as its ServiceAccount, the image); make test runs them too.
	$(TEST_ENV) $(GO) test -tags dist -timeout 45m -v ./test/e2e -run '$(E2E_DIST)'
