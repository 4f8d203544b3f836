#!/bin/bash
# run.sh PACKDIR OUTDIR: on a host with more cores (as root, with neither
# Go nor PostgreSQL needed), measures what issue 29 asks of the served
# step, from what pack.sh packed into PACKDIR: BenchmarkConcurrentRuns
# (runs=1000) at GOMAXPROCS 1, 2, 4, 8 and the host's cores, interleaved;
# its CPU, block and mutex profiles and an execution trace at all cores;
# BenchmarkCreateClients at all cores; BenchmarkArrivingRuns; then a PostgreSQL server of its own (port
# $PGPORT, default 5432, run as nobody) for BenchmarkConcurrentRunsPostgres
# and BenchmarkServersOnPostgres. Every benchmark line goes to
# OUTDIR/log.txt, prefixed with its GOMAXPROCS. ROUNDS (5) and PGROUNDS
# (3) set the rounds. Where pack.sh packed a baseline (BASE=COMMIT), each
# round also runs it at GOMAXPROCS 2 and all cores (PostgreSQL: all cores),
# its lines prefixed "base". See docs/performance.md.
set -u
pack=$(cd "${1:?usage: run.sh PACKDIR OUTDIR}" && pwd)
out=$(mkdir -p "${2:?usage: run.sh PACKDIR OUTDIR}" && cd "$2" && pwd)
PGPORT=${PGPORT:-5432} ROUNDS=${ROUNDS:-5} PGROUNDS=${PGROUNDS:-3}
export BIN=/tmp/manycore
mkdir -p $BIN && tar xJf "$pack/bins.txz" -C $BIN && tar xJf "$pack/pg.txz" -C $BIN || exit 1
L=$out/log.txt
log() { echo "== $*" | tee -a "$L"; }
n=$(nproc)
procs="1 2 4 8"
[ "$n" -gt 8 ] && procs="$procs $n"
log host
(nproc; grep -m1 'model name' /proc/cpuinfo; uname -a; df -T /tmp; free -g) 2>&1 | tee -a "$L"
for p in 2 "$n"; do echo "P=$p $(GOMAXPROCS=$p $BIN/wake)" | tee -a "$L"; done
bench() { # GOMAXPROCS pattern benchtime [flags]
	local p=$1 pat=$2 bt=$3
	shift 3
	(cd /tmp && GOMAXPROCS=$p timeout 300 $BIN/${TEST:-server}.test -test.run '^$' -test.bench "$pat" -test.benchtime "$bt" "$@" 2>&1) |
		grep -E '^Benchmark|FAIL|panic|_test.go:' | sed "s/^/${TEST:+$TEST }P=$p /" | tee -a "$L"
}
base() { # GOMAXPROCS pattern: the baseline's binary, where pack.sh packed one
	[ -x $BIN/base.test ] && TEST=base bench "$1" "$2" 1x
}
log "SQLite: ConcurrentRuns runs=1000, $ROUNDS rounds"
for _ in $(seq "$ROUNDS"); do
	for p in $procs; do bench "$p" 'ConcurrentRuns$/runs=1000$' 1x; done
	base 2 'ConcurrentRuns$/runs=1000$'
	base "$n" 'ConcurrentRuns$/runs=1000$'
done
log "SQLite: profiles at GOMAXPROCS $n"
bench "$n" 'ConcurrentRuns$/runs=1000$' 4x -test.cpuprofile "$out/cpu.prof" -test.blockprofile "$out/block.prof" -test.mutexprofile "$out/mutex.prof"
bench "$n" 'ConcurrentRuns$/runs=1000$' 1x -test.trace /tmp/trace.out && gzip -c /tmp/trace.out >"$out/trace.out.gz"
log "SQLite: CreateClients (fewer creates at once), 2 rounds"
for _ in 1 2; do bench "$n" 'CreateClients' 1x; done
log "SQLite: ArrivingRuns"
for _ in 1 2; do for p in 2 "$n"; do bench "$p" 'ArrivingRuns/rate=(1000|2000)$' 1x; done; done

log "PostgreSQL: start"
pg=$BIN/root/usr/lib/postgresql/15/bin
data=/tmp/manycore-pgdata
mkdir -p $data && chown nobody $data && chmod -R a+rX $BIN
su -s /bin/sh nobody -c "TZ=GMT LD_LIBRARY_PATH=$BIN/root/lib $pg/initdb -D $data -U postgres --auth=trust -E UTF8 --locale=C.UTF-8" >/tmp/initdb.log 2>&1 ||
	tail /tmp/initdb.log | tee -a "$L"
su -s /bin/sh nobody -c "TZ=GMT LD_LIBRARY_PATH=$BIN/root/lib $pg/pg_ctl -D $data -l /tmp/manycore-pg.log -o '-p $PGPORT -k /tmp -c listen_addresses=127.0.0.1 -c max_connections=400 -c shared_buffers=2GB -c jit=off' -w start" 2>&1 | tail -1 | tee -a "$L"
LD_LIBRARY_PATH=$BIN/root/lib $pg/psql -h 127.0.0.1 -p "$PGPORT" -U postgres -c 'CREATE DATABASE test' postgres 2>&1 | tee -a "$L"
export STEPWISE_TEST_POSTGRES="postgres://postgres@127.0.0.1:$PGPORT/test?sslmode=disable" STEPWISE_REQUIRE_POSTGRES=1
log "PostgreSQL: ConcurrentRunsPostgres runs=1000, $PGROUNDS rounds"
for _ in $(seq "$PGROUNDS"); do
	for p in $procs; do bench "$p" 'ConcurrentRunsPostgres$/runs=1000$' 1x; done
	base "$n" 'ConcurrentRunsPostgres$/runs=1000$'
done
log "PostgreSQL: profiles at GOMAXPROCS $n"
bench "$n" 'ConcurrentRunsPostgres$/runs=1000$' 2x -test.cpuprofile "$out/pgcpu.prof" -test.blockprofile "$out/pgblock.prof"
log "PostgreSQL: ServersOnPostgres, 2 rounds"
cp "$pack/go" $BIN/go
for _ in 1 2; do
	(cd /tmp && PATH=$BIN:$PATH timeout 300 $BIN/cli.test -test.run '^$' -test.bench ServersOnPostgres -test.benchtime 1x 2>&1) |
		grep -E '^Benchmark|servers,|FAIL|panic|_test.go:' | tee -a "$L"
done
su -s /bin/sh nobody -c "LD_LIBRARY_PATH=$BIN/root/lib $pg/pg_ctl -D $data stop" >/dev/null 2>&1
log done
