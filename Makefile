# zerotal lock — build, test and lint every module of the go.work workspace.
# `go test ./...` at the root does not span modules, so every target loops
# over the modules that go.work lists.

SHELL := /bin/bash
GO ?= go
MODULES := $(shell $(GO) list -m -f '{{.Dir}}' 2>/dev/null)
BIN := $(CURDIR)/.bin
STATICCHECK := $(BIN)/staticcheck
STATICCHECK_VERSION := v0.8.2
GOTEST_FLAGS ?= -race -count=1 -timeout 20m

.PHONY: test test-go fuzz lint fmt-check vet staticcheck bench bench-redis demo tidy release wheel help npm-deps npm-pack

## test: everything CI checks — lint, generated code drift, every module's tests with -race, a short fuzz of every parser.
test: lint check-generated test-go fuzz

# TEST_JOBS modules are tested at once (each module's packages run in
# parallel too); a module's output is printed whole when it finishes, so
# that logs do not interleave. The slowest modules (etcd's failover tests,
# the outside-install test, the conformance kit) start first.
TEST_JOBS ?= 2
SLOW_FIRST := drivers/etcd tools/release conformance drivers/redis sdk/cshared tools/lockctl

test-go: npm-deps
	@mods="$(addprefix $(CURDIR)/,$(SLOW_FIRST)) $(filter-out $(addprefix $(CURDIR)/,$(SLOW_FIRST)),$(MODULES))"; \
	printf '%s\n' $$mods | xargs -P $(TEST_JOBS) -I{} sh -c '\
		start=$$(date +%s); out=$$(cd {} && $(GO) test $(GOTEST_FLAGS) ./... 2>&1); rc=$$?; \
		printf "== go test %s (%ss)\n%s\n" "$${1#$(CURDIR)/}" "$$(( $$(date +%s) - start ))" "$$out"; exit $$rc' _ {} \
	|| { echo "make test-go: some module failed (see above)"; exit 1; }

# The Node.js package's npm dependencies (koffi, and TypeScript for its
# type check), installed by npm ci from the committed lockfile; sdk/cshared's
# tests run the package's suite and its install test. npm's hidden lockfile
# stamps the install, so a second run does nothing.
NPM_DEPS := sdk/node/node_modules/.package-lock.json

## npm-deps: install the Node.js package's dependencies from sdk/node/package-lock.json (npm ci).
npm-deps: $(NPM_DEPS)

$(NPM_DEPS): sdk/node/package.json sdk/node/package-lock.json
	@command -v npm >/dev/null || { echo "npm not found: the Node.js package's tests need Node.js 20 or later and npm (apt-get install nodejs npm)"; exit 1; }
	cd sdk/node && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

## npm-pack: build the C ABI and write sdk/node/dist/zerotal-lock-<VERSION>.tgz, the prebuilt library for this platform inside.
npm-pack: cshared
	node sdk/node/scripts/pack.js --library $(CSHARED_LIB) --out sdk/node/dist

# FUZZ lists the fuzz targets as module-dir:Target; each runs for FUZZTIME
# in make test (their seed corpora run in every go test anyway).
FUZZ := driver:FuzzPathURL sdk/go:FuzzKey drivers/redis:FuzzOpenURL sdk/cshared:FuzzParseConfig
FUZZTIME ?= 5s

## fuzz: run every fuzz target for FUZZTIME (default 5s).
fuzz:
	@set -eo pipefail; for f in $(FUZZ); do \
		dir=$${f%%:*}; target=$${f#*:}; \
		echo "== fuzz $$target ($$dir, $(FUZZTIME))"; \
		(cd $$dir && $(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) . | tail -1); \
	done

## lint: gofmt, go vet and staticcheck over every module.
lint: fmt-check vet staticcheck

fmt-check:
	@out=$$(git ls-files '*.go' | xargs gofmt -l); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	@set -e; for m in $(MODULES); do \
		(cd $$m && $(GO) vet ./...) || { echo "go vet failed in $${m#$(CURDIR)/}"; exit 1; }; \
	done

$(STATICCHECK):
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

staticcheck: $(STATICCHECK)
	@set -e; for m in $(MODULES); do \
		(cd $$m && $(STATICCHECK) ./...) || { echo "staticcheck failed in $${m#$(CURDIR)/}"; exit 1; }; \
	done

## bench: the benchmarks recorded in docs/benchmarks.md.
bench:
	@set -e; for m in $(MODULES); do \
		(cd $$m && $(GO) test -run '^$$' -bench . -benchmem ./...); \
	done

## bench-redis: zerotal vs redsync, redislock and bare go-redis on a private redis-server, side by side.
bench-redis:
	$(GO) run ./tools/bench

## demo: the main job — two commands contend for one lock; the second waits for the first.
demo: $(BIN)/lockctl
	@$(BIN)/lockctl run --key demo -- sh -c 'echo "first: holding the lock for 3s"; sleep 3' & \
	sleep 0.5; $(BIN)/lockctl run --key demo --wait 1m --verbose -- echo "second: my turn"; wait

$(BIN)/lockctl: FORCE
	$(GO) build -o $@ ./tools/lockctl

.PHONY: FORCE
FORCE:

## wheel: the Python client's wheel, bundling the C ABI's library, into sdk/python/dist/ (pip install it; no PyPI needed).
PYTHON ?= python3
wheel: cshared
	$(PYTHON) sdk/python/build_backend/zerotal_lock_backend.py --library $(CSHARED_LIB) --out sdk/python/dist

## tidy: go mod tidy in every module, outside the workspace, the sibling modules served at VERSION from the working tree.
tidy:
	$(GO) run ./tools/release tidy

## release: VERSION=vX.Y.Z — require vX.Y.Z of every sibling everywhere, tidy, and print the tags to push.
release:
	@test -n "$(VERSION)" || { echo "usage: make release VERSION=vX.Y.Z"; exit 2; }
	$(GO) run ./tools/release bump $(VERSION)
	$(GO) run ./tools/release tidy
	@$(GO) run ./tools/release tags

help:
	@grep -E '^## ' Makefile | sed 's/^## //'

-include gen/gen.mk
