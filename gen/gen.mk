# Code generation, included by the root Makefile (-include gen/gen.mk).
#
# lockgen reads spec/ and writes the *_gen.go files of sdk/go/ and driver/,
# and the C ABI: sdk/cshared/exports_gen.go, its public header
# sdk/cshared/zerotal_lock.h, the Python client's ctypes module
# sdk/python/zerotal_lock/_abi_gen.py and the Node.js package's koffi
# binding sdk/node/lib/abi_gen.js with its declarations abi_gen.d.ts. It
# checks by default and writes only with -w.

GO ?= go
LOCKGEN := $(GO) run ./gen/cmd/lockgen
# The generated files, as git pathspecs (git's * matches across /).
GENERATED := 'driver/*_gen.go' 'sdk/go/*_gen.go' 'sdk/cshared/*_gen.go' 'sdk/cshared/zerotal_lock.h' 'sdk/python/*_gen.py' 'sdk/node/lib/*_gen.js' 'sdk/node/lib/*_gen.d.ts'

# The C ABI's build: the library, its header and its pkg-config file.
CSHARED_DIR := sdk/cshared/build
CSHARED_LIB := $(CSHARED_DIR)/libzerotal_lock.so

.PHONY: generate check-generated cshared

## generate: regenerate the Go API, the error table, the driver contract and the C ABI from spec/.
generate:
	$(LOCKGEN) -w

## check-generated: regenerate, then fail if that changed or added any generated file.
check-generated:
	@$(LOCKGEN) -w >/dev/null
	@if ! git diff --quiet -- $(GENERATED); then \
		git --no-pager diff --stat -- $(GENERATED); \
		echo "check-generated: the committed generated files do not match spec/: run 'make generate' and commit the result" >&2; \
		exit 1; \
	fi
	@untracked=$$(git ls-files --others --exclude-standard -- $(GENERATED)); \
	if [ -n "$$untracked" ]; then \
		echo "$$untracked"; \
		echo "check-generated: generated files are not committed: run 'make generate' and commit the result" >&2; \
		exit 1; \
	fi

## cshared: build the C ABI into sdk/cshared/build: libzerotal_lock.so, zerotal_lock.h, zerotal_lock.pc.
# cgo's own header (libzerotal_lock.h) is deleted: the contract is the
# generated zerotal_lock.h, which the exports include so that the C compiler
# checks them against it.
cshared:
	@mkdir -p $(CSHARED_DIR)
	cd sdk/cshared && $(GO) build -buildmode=c-shared -ldflags='-s -w' -o build/libzerotal_lock.so .
	@rm -f $(CSHARED_DIR)/libzerotal_lock.h
	cp sdk/cshared/zerotal_lock.h $(CSHARED_DIR)/zerotal_lock.h
	sed "s/@ABI_VERSION@/$$(sed -n 's/^#define ZL_ABI_VERSION //p' sdk/cshared/zerotal_lock.h)/" sdk/cshared/zerotal_lock.pc.in > $(CSHARED_DIR)/zerotal_lock.pc
	@echo "built $(CSHARED_LIB); link with: PKG_CONFIG_PATH=$(CURDIR)/$(CSHARED_DIR) pkg-config --cflags --libs zerotal_lock"
