// shim.c: an LD_PRELOAD library that journals what a process writes to a
// SQLite database and its WAL, so that a test can build the files a power
// loss could leave behind (cmd/stepwise/powerloss_test.go).
//
// It watches the files named $POWERLOSS_DB, $POWERLOSS_DB-wal and
// $POWERLOSS_DB-journal, and appends to $POWERLOSS_JOURNAL (O_APPEND, one
// write(2) per record, so records of several processes interleave whole):
//
//   W <file> <offset> <length>\n<length bytes>   a write
//   S <file>\n                                  fsync or fdatasync
//   T <file> <length>\n                         ftruncate
//   U <file>\n                                  unlink
//
// where <file> is 0 (the database), 1 (the WAL) or 2 (the rollback
// journal). The test adds its own records (E <effect>\n) from tools.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAXFD 65536

static signed char watched[MAXFD]; // file id + 1, 0: not watched
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int journal = -1;
static char dbpath[4096];

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off64_t);
static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_close)(int);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_ftruncate)(int, off_t);
static int (*real_ftruncate64)(int, off64_t);
static int (*real_unlink)(const char *);

static void init(void) {
	static int done;
	if (done) return;
	real_write = dlsym(RTLD_NEXT, "write");
	real_pwrite = dlsym(RTLD_NEXT, "pwrite");
	real_pwrite64 = dlsym(RTLD_NEXT, "pwrite64");
	real_open = dlsym(RTLD_NEXT, "open");
	real_open64 = dlsym(RTLD_NEXT, "open64");
	real_openat = dlsym(RTLD_NEXT, "openat");
	real_openat64 = dlsym(RTLD_NEXT, "openat64");
	real_close = dlsym(RTLD_NEXT, "close");
	real_fsync = dlsym(RTLD_NEXT, "fsync");
	real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
	real_ftruncate = dlsym(RTLD_NEXT, "ftruncate");
	real_ftruncate64 = dlsym(RTLD_NEXT, "ftruncate64");
	real_unlink = dlsym(RTLD_NEXT, "unlink");
	const char *db = getenv("POWERLOSS_DB");
	if (db) snprintf(dbpath, sizeof dbpath, "%s", db);
	const char *j = getenv("POWERLOSS_JOURNAL");
	if (j) journal = real_open(j, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	done = 1;
}

// fileID is 0, 1 or 2 for the watched files, -1 otherwise.
static int fileID(const char *path) {
	if (!dbpath[0] || !path) return -1;
	size_t n = strlen(dbpath);
	if (strncmp(path, dbpath, n) != 0) return -1;
	const char *rest = path + n;
	if (!*rest) return 0;
	if (!strcmp(rest, "-wal")) return 1;
	if (!strcmp(rest, "-journal")) return 2;
	return -1;
}

static void record(const char *head, const void *data, size_t len) {
	if (journal < 0) return;
	size_t hl = strlen(head);
	char *buf = malloc(hl + len);
	if (!buf) abort();
	memcpy(buf, head, hl);
	if (len) memcpy(buf + hl, data, len);
	size_t off = 0;
	while (off < hl + len) {
		ssize_t w = real_write(journal, buf + off, hl + len - off);
		if (w < 0 && errno == EINTR) continue;
		if (w <= 0) abort(); // a journal with a gap would build wrong images
		off += (size_t)w;
	}
	free(buf);
}

static void noteWrite(int fd, const void *buf, ssize_t n, off64_t off) {
	if (n <= 0 || fd < 0 || fd >= MAXFD || !watched[fd]) return;
	char head[96];
	snprintf(head, sizeof head, "W %d %lld %zd\n", watched[fd] - 1, (long long)off, n);
	record(head, buf, (size_t)n);
}

static int opened(int fd, const char *path) {
	if (fd >= 0 && fd < MAXFD) {
		int id = fileID(path);
		watched[fd] = (signed char)(id + 1);
	}
	return fd;
}

#define OPEN_MODE                                    \
	mode_t mode = 0;                             \
	if (flags & (O_CREAT | O_TMPFILE)) {         \
		va_list ap;                          \
		va_start(ap, flags);                 \
		mode = va_arg(ap, mode_t);           \
		va_end(ap);                          \
	}

int open(const char *path, int flags, ...) {
	init();
	OPEN_MODE
	return opened(real_open(path, flags, mode), path);
}
int open64(const char *path, int flags, ...) {
	init();
	OPEN_MODE
	return opened(real_open64(path, flags, mode), path);
}
int openat(int dirfd, const char *path, int flags, ...) {
	init();
	OPEN_MODE
	return opened(real_openat(dirfd, path, flags, mode), path);
}
int openat64(int dirfd, const char *path, int flags, ...) {
	init();
	OPEN_MODE
	return opened(real_openat64(dirfd, path, flags, mode), path);
}

int close(int fd) {
	init();
	if (fd >= 0 && fd < MAXFD) watched[fd] = 0;
	return real_close(fd);
}

ssize_t write(int fd, const void *buf, size_t n) {
	init();
	if (fd < 0 || fd >= MAXFD || !watched[fd]) return real_write(fd, buf, n);
	pthread_mutex_lock(&mu);
	off64_t off = lseek64(fd, 0, SEEK_CUR);
	ssize_t w = real_write(fd, buf, n);
	noteWrite(fd, buf, w, off);
	pthread_mutex_unlock(&mu);
	return w;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
	init();
	ssize_t w = real_pwrite(fd, buf, n, off);
	noteWrite(fd, buf, w, off);
	return w;
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off) {
	init();
	ssize_t w = real_pwrite64(fd, buf, n, off);
	noteWrite(fd, buf, w, off);
	return w;
}

static void noteSync(int fd) {
	if (fd < 0 || fd >= MAXFD || !watched[fd]) return;
	char head[32];
	snprintf(head, sizeof head, "S %d\n", watched[fd] - 1);
	record(head, NULL, 0);
}

// A sync is journaled after it returns: a cut before it is a cut before
// the data reached the disk.
int fsync(int fd) {
	init();
	int r = real_fsync(fd);
	if (r == 0) noteSync(fd);
	return r;
}

int fdatasync(int fd) {
	init();
	int r = real_fdatasync(fd);
	if (r == 0) noteSync(fd);
	return r;
}

static void noteTruncate(int fd, off64_t len) {
	if (fd < 0 || fd >= MAXFD || !watched[fd]) return;
	char head[64];
	snprintf(head, sizeof head, "T %d %lld\n", watched[fd] - 1, (long long)len);
	record(head, NULL, 0);
}

int ftruncate(int fd, off_t len) {
	init();
	int r = real_ftruncate(fd, len);
	if (r == 0) noteTruncate(fd, len);
	return r;
}

int ftruncate64(int fd, off64_t len) {
	init();
	int r = real_ftruncate64(fd, len);
	if (r == 0) noteTruncate(fd, len);
	return r;
}

int unlink(const char *path) {
	init();
	int r = real_unlink(path);
	int id = fileID(path);
	if (r == 0 && id >= 0) {
		char head[32];
		snprintf(head, sizeof head, "U %d\n", id);
		record(head, NULL, 0);
	}
	return r;
}
