# Code generation, included by the root Makefile (-include gen/gen.mk).
#
# lockgen reads spec/ and writes the *_gen.go files of core/, core/driver/
# and sdk/go/. It checks by default and writes only with -w.

GO ?= go
LOCKGEN := $(GO) run ./gen/cmd/lockgen
# The generated files, as git pathspecs (git's * matches across /).
GENERATED := 'core/*_gen.go' 'sdk/go/*_gen.go'

.PHONY: generate check-generated

## generate: regenerate the Go API, the error table and the driver contract from spec/.
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
