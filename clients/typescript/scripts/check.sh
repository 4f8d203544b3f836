#!/bin/sh
# Called by make test before the Go tests: makes sure the TypeScript client's
# tests (TestTypeScriptClient, TestTypeScriptTypes in cmd/stepwise) can run.
# They need node 18 or later; the type check needs the typescript that
# package-lock.json pins, which this installs with npm ci when node_modules
# lacks it (the client itself has no dependencies). When something is
# missing it says so loudly, and fails under CI=true or STEPWISE_REQUIRE_NODE=1.
set -u
dir=$(cd "$(dirname "$0")/.." && pwd)

loud() {
  bar='!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!'
  printf '%s\nTYPESCRIPT CLIENT NOT FULLY TESTED: %s\n%s\n%s\n' "$bar" "$1" "$2" "$bar" >&2
  if [ "${CI:-}" = true ] || [ "${STEPWISE_REQUIRE_NODE:-}" = 1 ]; then
    echo "CI=true or STEPWISE_REQUIRE_NODE=1: failing." >&2
    exit 1
  fi
  exit 0
}

if ! command -v node >/dev/null 2>&1; then
  loud "node is missing: TestTypeScriptClient and TestTypeScriptTypes will SKIP." "Install Node.js 18 or later (apt-get install nodejs npm), then run make test again."
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 18 ]; then
  loud "node $(node --version) is older than 18: the client's tests will SKIP." "Install Node.js 18 or later, then run make test again."
fi
installed=$(node -e 'try { console.log(require(process.argv[1]).version) } catch { }' "$dir/node_modules/typescript/package.json" 2>/dev/null)
wanted=$(node -e 'console.log(require(process.argv[1]).packages["node_modules/typescript"].version)' "$dir/package-lock.json")
if [ "$installed" != "$wanted" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    loud "typescript $wanted is not installed and npm is missing: TestTypeScriptTypes will SKIP." "Install npm (apt-get install npm), then run make test again."
  fi
  log=$(mktemp)
  if ! npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    rm -f "$log"
    loud "npm ci --prefix $dir failed (above): TestTypeScriptTypes will SKIP." "Fix the npm registry access, then run make test again."
  fi
  rm -f "$log"
  echo "TypeScript client: installed typescript $wanted into $dir/node_modules."
fi
echo "TypeScript client: node $(node --version) and typescript $wanted are present; its tests run."
