# kubectl-rightsize — build, demo and test.
GO       ?= go
BIN      := bin/kubectl-rightsize
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
DATE     ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS  := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
FUZZTIME ?= 10s

.PHONY: all build demo test vet fuzz bench generate clean testenv

all: build

build: ## Build the plugin binary into bin/.
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/kubectl-rightsize

demo: build ## Plan nodes offline for the bundled flash-sale example.
	$(BIN) explain -f examples/flash-sale.yaml

testenv: ## Build (once) the local test control plane into ~/.cache/kubectl-rightsize/testenv/v1.37.2 (~16-25 min cold, <1 s warm).
	hack/testenv/build.sh

test: vet testenv ## Vet, build the test control plane if missing, run every test, then a short run of each fuzz target.
	$(GO) test ./...
	$(MAKE) fuzz

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...

fuzz: ## Run each fuzz target for FUZZTIME.
	$(GO) test ./pkg/snapshot -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./pkg/cloud -run '^$$' -fuzz '^FuzzReadInstanceTypes$$' -fuzztime $(FUZZTIME)
	$(GO) test ./pkg/solver -run '^$$' -fuzz '^FuzzSolve$$' -fuzztime $(FUZZTIME)
	$(GO) test ./pkg/solver -run '^$$' -fuzz '^FuzzConsolidate$$' -fuzztime $(FUZZTIME)

bench: ## Run the solver suites against the baselines and print one table.
	$(GO) test ./pkg/solver/baseline ./pkg/solver -run '^$$' -bench 'Suites|Consolidate' -benchtime 3x -timeout 30m | tee /dev/stderr | $(GO) run ./hack/benchtable

generate: ## Regenerate the embedded catalog, and pkg/apis deepcopy + the CRDs in config/crd (controller-gen pinned in go.mod).
	rm -f config/crd/rightsize.dev_*.yaml
	$(GO) generate ./pkg/apis/... ./pkg/cloud/catalog

clean:
	rm -rf bin dist
