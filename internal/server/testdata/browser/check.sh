#!/bin/sh
# Called by make test before the Go tests: makes sure the inspector's
# browser test (TestInspectorInBrowser) can run. When node and Chromium are
# present it installs playwright-core with npm ci if node_modules lacks it
# (or holds another version than package-lock.json); when something is
# missing it says so loudly, and fails with STEPWISE_REQUIRE_BROWSER=1.
set -u
dir=$(cd "$(dirname "$0")" && pwd)

loud() {
  bar='!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!'
  printf '%s\nINSPECTOR BROWSER TEST NOT RUN: %s\nTestInspectorInBrowser will SKIP: the inspector page is NOT tested in a browser.\n%s\n%s\n' \
    "$bar" "$1" "$2" "$bar" >&2
  if [ "${STEPWISE_REQUIRE_BROWSER:-}" = 1 ]; then
    echo "STEPWISE_REQUIRE_BROWSER=1: failing." >&2
    exit 1
  fi
  exit 0
}

missing=
command -v node >/dev/null 2>&1 || missing="$missing node"
if [ ! -x /usr/bin/chromium ] && ! command -v chromium >/dev/null 2>&1; then missing="$missing chromium"; fi
if [ -n "$missing" ]; then
  loud "missing:$missing." "Install them (apt-get install chromium nodejs npm), then run make test again."
fi

# installed prints the playwright-core version node_modules holds, wanted the
# one package-lock.json names.
installed=$(node -e 'try { console.log(require(process.argv[1]).version) } catch { }' "$dir/node_modules/playwright-core/package.json" 2>/dev/null)
wanted=$(node -e 'console.log(require(process.argv[1]).packages["node_modules/playwright-core"].version)' "$dir/package-lock.json")
if [ "$installed" != "$wanted" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    loud "playwright-core $wanted is not installed and npm is missing." "Install npm (apt-get install npm), then run make test again."
  fi
  log=$(mktemp)
  if ! npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    rm -f "$log"
    loud "npm ci --prefix $dir failed (above)." "Fix the npm registry access, then run make test again."
  fi
  rm -f "$log"
  echo "Browser test: installed playwright-core $wanted into $dir/node_modules."
fi
echo "Browser test: node, Chromium and playwright-core are present; TestInspectorInBrowser runs."
