// A module of its own, so that the trace parser it needs stays out of
// stepwise's dependencies (docs/adr/0040-reading-execution-traces.md).
module github.com/stepwise-agent/stepwise/internal/bench/manycore/traceread

go 1.26.0

require golang.org/x/exp v0.0.0-20261113113407-e3970619a1a4
