GO      ?= go
FUZZTIME ?= 30s

.PHONY: all build test verify bench bench-e2e fuzz demo clean

all: build

## build: compile everything and the CLI into bin/.

build: bin/stepwise
	$(GO) build ./...

## test: vet; the library without cgo (core, shell, the store contract, PostgreSQL),
## for Linux, macOS and FreeBSD;
## whether a PostgreSQL server answers, whether node and Chromium are there for
## the inspector's browser test, node and typescript for the TypeScript client's
## tests, and python3 for the Python clients' tests (a loud notice when not: those
## tests skip, or fail with STEPWISE_REQUIRE_POSTGRES=1 / STEPWISE_REQUIRE_BROWSER=1 /
## STEPWISE_REQUIRE_NODE=1 / STEPWISE_REQUIRE_PYTHON=1);
## then every test with the race detector (fuzz corpora run as tests).
test:
	$(GO) vet ./...
	for os in linux darwin freebsd openbsd netbsd; do CGO_ENABLED=0 GOOS=$$os $(GO) build ./core/... ./shell/... ./store ./store/postgres || exit 1; done
	$(GO) run ./internal/pgtest/pgcheck
	@sh internal/server/testdata/browser/check.sh
	@command -v python3 >/dev/null 2>&1 || { echo '!!! PYTHON CLIENTS NOT TESTED: python3 is missing; TestPythonPackage, TestPythonClient and TestPythonChat will SKIP (apt-get install python3).' >&2; [ "$${STEPWISE_REQUIRE_PYTHON:-}" != 1 ] || exit 1; }
	@sh clients/typescript/scripts/check.sh
	$(GO) test -race ./...

## verify: formatting, vet, and go.mod/go.sum tidy.
verify:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cp go.mod /tmp/stepwise.go.mod.bak; cp go.sum /tmp/stepwise.go.sum.bak
	$(GO) mod tidy
	@if ! cmp -s go.mod /tmp/stepwise.go.mod.bak || ! cmp -s go.sum /tmp/stepwise.go.sum.bak; then \
		echo "go mod tidy changed go.mod/go.sum"; cp /tmp/stepwise.go.mod.bak go.mod; cp /tmp/stepwise.go.sum.bak go.sum; exit 1; fi

## bench: every benchmark (figures go to docs/performance.md).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## bench-e2e: the standard end-to-end workload (see docs/performance.md).
bench-e2e: bin/stepwise
	bin/stepwise bench

## fuzz: every fuzz target (parsers, decoders) for FUZZTIME each.
fuzz:
	@for p in ./core/ ./core/schema/ ./core/helpers/ ./store/internal/codec/ ./shell/mcp/ ./shell/models/openai/ ./shell/models/script/ ./shell/tools/; do \
		for t in $$($(GO) test -list '^Fuzz' $$p | grep '^Fuzz'); do \
			echo "== $$p $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$p || exit 1; done; done

## demo: build the CLI and run an example agent offline, end to end.
demo: bin/stepwise
	@cmd/stepwise/demo.sh

.PHONY: bin/stepwise
bin/stepwise:
	$(GO) build -o bin/stepwise ./cmd/stepwise

clean:
	rm -rf bin
