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

.PHONY: test test-go lint fmt-check vet staticcheck bench bench-redis demo tidy help

## test: everything CI checks — lint, generated code drift, every module's tests with -race.
test: lint check-generated test-go

test-go:
	@set -e; for m in $(MODULES); do \
		echo "== go test $${m#$(CURDIR)/}"; \
		(cd $$m && $(GO) test $(GOTEST_FLAGS) ./...); \
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

## tidy: go mod tidy in every module.
tidy:
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) mod tidy); done

help:
	@grep -E '^## ' Makefile | sed 's/^## //'

-include gen/gen.mk
