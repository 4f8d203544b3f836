#!/bin/bash
# pack.sh DIR: packs what run.sh needs to measure the served step on a host
# with more cores that has neither Go nor PostgreSQL (issue 29): the test
# binaries of internal/server and cmd/stepwise and the stepwise binaries,
# linked statically, and this machine's PostgreSQL 15 server with the
# libraries it loads, laid out so that it finds its share and lib
# directories relative to its binaries. Run from the repository root on a
# Debian machine with postgresql-15 installed; DIR ends up ~40 MB. With
# BASE=COMMIT it also packs that commit's internal/server test binary, which
# run.sh then alternates with this tree's, so that a change is measured
# against its baseline on the same host.
set -euo pipefail
out=${1:?usage: pack.sh DIR}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; git worktree prune' EXIT
flags=(-tags netgo,osusergo -ldflags '-s -w -linkmode external -extldflags "-static"')
go test -c -o "$tmp/server.test" "${flags[@]}" ./internal/server
go test -c -o "$tmp/cli.test" "${flags[@]}" ./cmd/stepwise
go build -o "$tmp/stepwise" "${flags[@]}" ./cmd/stepwise
go build -o "$tmp/mcptestserver" "${flags[@]}" ./internal/mcptest/cmd/mcptestserver
go build -o "$tmp/wake" "${flags[@]}" ./internal/bench/manycore/wake
bins=(server.test cli.test stepwise mcptestserver wake)
if [ -n "${BASE:-}" ]; then # a baseline commit: run.sh alternates its server.test with this tree's
	git worktree add -q --detach "$tmp/base" "$BASE"
	(cd "$tmp/base" && go test -c -o "$tmp/base.test" "${flags[@]}" ./internal/server)
	git worktree remove --force "$tmp/base"
	bins+=(base.test)
fi
tar cf - -C "$tmp" "${bins[@]}" | xz -T0 -9 >"$out/bins.txz"

pg=/usr/lib/postgresql/15
root=$tmp/root
mkdir -p "$root$pg/bin" "$root/usr/share/postgresql" "$root/lib"
cp "$pg"/bin/{postgres,initdb,pg_ctl,psql} "$root$pg/bin/"
cp -r "$pg/lib" "$root$pg/lib"
rm -rf "$root$pg/lib/bitcode" "$root$pg"/lib/llvmjit* # no JIT (run.sh sets jit=off)
cp -rL /usr/share/postgresql/15 "$root/usr/share/postgresql/15"
rm -rf "$root/usr/share/postgresql/15/man"
for f in "$root$pg"/bin/* "$root$pg/lib/plpgsql.so"; do ldd "$f" | awk '/=>/ {print $3}'; done |
	sort -u | grep -Ev 'lib(c|m|pthread|dl|rt)\.so|ld-linux' | xargs -I{} cp -L {} "$root/lib/"
tar cf - -C "$tmp" root | xz -T0 -9 >"$out/pg.txz"
cp "$(dirname "$0")/run.sh" "$(dirname "$0")/go" "$out/"
ls -l "$out"
