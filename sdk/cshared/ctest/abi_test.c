// abi_test exercises every function of libzerotal_lock from C: the normal
// flows, every misuse the header promises to survive, and pthreads
// contending on one key. It is built against the test build of the library
// (go build -tags zl_testhooks), whose extra zl_test_live_handles lets it
// check that no handle leaks. TestC in cshared_test.go compiles and runs it;
// it prints a line per failed check and exits non-zero if there was one.

#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zerotal_lock.h"

// The test build's hook: the number of live handles.
int zl_test_live_handles(void);

// The handle whose lookup panics in the test build.
#define PANIC_HANDLE UINT64_MAX

static atomic_int failures;

#define CHECK(cond)                                                              \
	do {                                                                         \
		if (!(cond)) {                                                           \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			atomic_fetch_add(&failures, 1);                                      \
		}                                                                        \
	} while (0)

// EXPECT checks a call's code, and prints the detail when it differs.
#define EXPECT(call, want)                                                       \
	do {                                                                         \
		int got_ = (call);                                                       \
		if (got_ != (want)) {                                                    \
			fprintf(stderr, "%s:%d: %s = %d (%s), want %d; last error: %s\n",    \
			        __FILE__, __LINE__, #call, got_, zl_strerror(got_), (want),  \
			        zl_last_error());                                            \
			atomic_fetch_add(&failures, 1);                                      \
		}                                                                        \
	} while (0)

// LAST_ERROR_HAS checks that this thread's last error mentions text.
#define LAST_ERROR_HAS(text)                                                      \
	do {                                                                          \
		if (strstr(zl_last_error(), (text)) == NULL) {                            \
			fprintf(stderr, "%s:%d: last error %s does not mention %s\n",         \
			        __FILE__, __LINE__, zl_last_error(), (text));                 \
			atomic_fetch_add(&failures, 1);                                       \
		}                                                                         \
	} while (0)

static int64_t now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t mono_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms) {
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static zl_manager open_memory(void) {
	zl_manager m = 0;
	EXPECT(zl_open("{\"driver\":\"memory\",\"prefix\":\"ctest:\"}", &m), ZL_OK);
	CHECK(m != 0);
	return m;
}

static zl_lock make(zl_manager m, const char *key, int64_t ttl_ms) {
	zl_lock l = 0;
	EXPECT(zl_make(m, key, ttl_ms, &l), ZL_OK);
	CHECK(l != 0);
	return l;
}

static void test_library(void) {
	CHECK(zl_version() != NULL && zl_version()[0] != '\0');
	CHECK(zl_abi_version() == ZL_ABI_VERSION);
	for (int code = ZL_OK; code <= ZL_INTERNAL; code++) {
		const char *s = zl_strerror(code);
		CHECK(s != NULL && s[0] != '\0' && strcmp(s, "unknown error code") != 0);
	}
	CHECK(strcmp(zl_strerror(ZL_NOT_ACQUIRED), zl_strerror(ZL_LOST)) != 0);
	CHECK(strcmp(zl_strerror(-1), "unknown error code") == 0);
	CHECK(strcmp(zl_strerror(1000), "unknown error code") == 0);
	// Static strings: the same pointer every time.
	CHECK(zl_strerror(ZL_CLOSED) == zl_strerror(ZL_CLOSED));
	CHECK(zl_version() == zl_version());
}

static void test_open(void) {
	zl_manager m = 0;
	EXPECT(zl_open(NULL, &m), ZL_OK); // the environment: the test runs without LOCK_DRIVER
	EXPECT(zl_close(m), ZL_OK);
	EXPECT(zl_open("", &m), ZL_OK);
	EXPECT(zl_close(m), ZL_OK);
	EXPECT(zl_open("{}", &m), ZL_OK);
	EXPECT(zl_close(m), ZL_OK);
	EXPECT(zl_open("{\"driver\":\"sqlite\",\"sqlite\":{\"path\":\":memory:\"},\"redis\":null}", &m), ZL_OK);
	EXPECT(zl_close(m), ZL_OK);

	m = 0;
	EXPECT(zl_open("{\"drivr\":\"memory\",\"sqlite\":{\"pth\":\"x\"}}", &m), ZL_INVALID_ARGUMENT);
	LAST_ERROR_HAS("zl_open");
	LAST_ERROR_HAS("\"drivr\"");
	LAST_ERROR_HAS("\"sqlite.pth\"");
	CHECK(m == 0); // out-parameters are written only on success
	EXPECT(zl_open("{\"Driver\":\"memory\"}", &m), ZL_INVALID_ARGUMENT); // names are exact
	EXPECT(zl_open("not json", &m), ZL_INVALID_ARGUMENT);
	EXPECT(zl_open("[1]", &m), ZL_INVALID_ARGUMENT);
	EXPECT(zl_open("{} {}", &m), ZL_INVALID_ARGUMENT);
	EXPECT(zl_open("{\"driver\":7}", &m), ZL_INVALID_ARGUMENT);
	EXPECT(zl_open("{\"sqlite\":\"x\"}", &m), ZL_INVALID_ARGUMENT);
	EXPECT(zl_open("{\"driver\":\"carrier-pigeon\"}", &m), ZL_INVALID_ARGUMENT);
	LAST_ERROR_HAS("memory"); // names the valid drivers
	EXPECT(zl_open("{\"driver\":\"file\"}", &m), ZL_INVALID_ARGUMENT);
	LAST_ERROR_HAS("\"file.dir\""); // the JSON member, not the Go field
	CHECK(strstr(zl_last_error(), "Config.") == NULL);
	EXPECT(zl_open("{\"driver\":\"carrier-pigeon\"}", &m), ZL_INVALID_ARGUMENT);
	CHECK(strstr(zl_last_error(), "Config.") == NULL);
	// A path in another encoding would name another file: refused, named.
	EXPECT(zl_open("{\"driver\":\"sqlite\",\"sqlite\":{\"path\":\"/tmp/caf\xe9.db\"}}", &m), ZL_INVALID_ARGUMENT);
	LAST_ERROR_HAS("sqlite.path");
	LAST_ERROR_HAS("UTF-8");
	EXPECT(zl_open("{\"prefix\":\"app\\ud800:\"}", &m), ZL_INVALID_ARGUMENT);
	LAST_ERROR_HAS("surrogate");
	EXPECT(zl_open("{\"driver\":\"sqlite\",\"sqlite\":{\"path\":\"/nonexistent/dir/x.db\"}}", &m), ZL_DRIVER);
	CHECK(m == 0);
	EXPECT(zl_open("{}", NULL), ZL_INVALID_ARGUMENT);
	LAST_ERROR_HAS("out");
}

// buffer_string exercises the size protocol of zl_key or zl_owner and
// returns the string in buf.
static void buffer_string(int (*get)(zl_lock, char *, size_t *), zl_lock l, char *buf, size_t size) {
	size_t need = 0;
	EXPECT(get(l, NULL, &need), ZL_OK); // the size alone
	CHECK(need >= 1 && need <= size);
	size_t small = need - 1;
	memset(buf, 'x', size);
	if (small > 0) {
		EXPECT(get(l, buf, &small), ZL_INVALID_ARGUMENT);
		CHECK(small == need); // says what it needs
		CHECK(buf[0] == 'x'); // and writes nothing
	}
	size_t len = size;
	EXPECT(get(l, buf, &len), ZL_OK);
	CHECK(len == need && strlen(buf) == need - 1);
	EXPECT(get(l, buf, NULL), ZL_INVALID_ARGUMENT);
}

static void test_lock_cycle(void) {
	zl_manager m = open_memory();
	const char *key = "cycle/ключ/🔒";
	zl_lock l = make(m, key, 5000);
	zl_lock other = make(m, key, 5000);
	char buf[128];

	buffer_string(zl_key, l, buf, sizeof buf);
	CHECK(strcmp(buf, key) == 0);
	buffer_string(zl_owner, l, buf, 1);
	CHECK(strcmp(buf, "") == 0); // no acquisition yet
	int64_t exp = -1;
	EXPECT(zl_expires_at(l, &exp), ZL_OK);
	CHECK(exp == 0);

	int acquired = -1, held = -1;
	int64_t before = now_ms();
	EXPECT(zl_acquire(l, &acquired), ZL_OK);
	CHECK(acquired == 1);
	EXPECT(zl_is_acquired(l, &held), ZL_OK);
	CHECK(held == 1);
	EXPECT(zl_expires_at(l, &exp), ZL_OK);
	CHECK(exp >= before + 5000 - 50 && exp <= now_ms() + 5000 + 50);
	buffer_string(zl_owner, l, buf, sizeof buf);
	CHECK(strlen(buf) == 32 && strspn(buf, "0123456789abcdef") == 32);
	uint64_t t1 = 0, t2 = 0;
	EXPECT(zl_token(l, &t1), ZL_OK);
	CHECK(t1 > 0);

	// Contention: the other handle does not get it, at once or waiting.
	EXPECT(zl_acquire(other, &acquired), ZL_OK);
	CHECK(acquired == 0);
	EXPECT(zl_block(other, 0, ZL_DEFAULT), ZL_NOT_ACQUIRED); // a single attempt
	int64_t start = mono_ms();
	EXPECT(zl_block(other, 60, 5), ZL_NOT_ACQUIRED);
	CHECK(mono_ms() - start >= 55); // waits the whole timeout
	LAST_ERROR_HAS("not acquired after waiting");
	EXPECT(zl_release(other), ZL_OK); // not held: a no-op, and l keeps it
	EXPECT(zl_is_acquired(l, &held), ZL_OK);
	CHECK(held == 1);

	int still = -1;
	EXPECT(zl_refresh(l, &still), ZL_OK);
	CHECK(still == 1);
	EXPECT(zl_acquire(l, &acquired), ZL_OK); // re-acquire: same owner, TTL reset
	CHECK(acquired == 1);

	EXPECT(zl_release(l), ZL_OK);
	EXPECT(zl_is_acquired(l, &held), ZL_OK);
	CHECK(held == 0);
	EXPECT(zl_block(other, 1000, ZL_DEFAULT), ZL_OK);
	EXPECT(zl_token(other, &t2), ZL_OK);
	CHECK(t2 > t1); // fencing tokens only increase

	// A force release frees the key under its holder, whose refresh then
	// finds it gone.
	EXPECT(zl_force_release(l), ZL_OK);
	EXPECT(zl_refresh(other, &still), ZL_OK);
	CHECK(still == 0);
	EXPECT(zl_is_acquired(other, &held), ZL_OK);
	CHECK(held == 0);

	// zl_free releases what the handle holds.
	EXPECT(zl_acquire(l, &acquired), ZL_OK);
	CHECK(acquired == 1);
	EXPECT(zl_free(l), ZL_OK);
	EXPECT(zl_acquire(other, &acquired), ZL_OK);
	CHECK(acquired == 1);
	EXPECT(zl_free(other), ZL_OK);
	EXPECT(zl_close(m), ZL_OK);
}

// A callback's view of the run.
struct run_state {
	int calls;
	zl_lock lent;
	uint64_t token;
	int lost_seen;
	int ret;              // what the callback returns
	zl_manager m;         // for callbacks that take a second handle
	int64_t wait_lost_ms; // > 0: poll zl_lost up to this long
	int force_release;    // force-release the key through another handle first
	int cancel_self;      // zl_cancel the lent handle first
	int close_manager;    // zl_close the manager running the callback
};

static int callback(zl_lock l, void *user_data) {
	struct run_state *s = user_data;
	s->calls++;
	s->lent = l;
	EXPECT(zl_token(l, &s->token), ZL_OK);
	char key[64];
	size_t len = sizeof key;
	EXPECT(zl_key(l, key, &len), ZL_OK);
	int held = 0;
	EXPECT(zl_is_acquired(l, &held), ZL_OK);
	CHECK(held == 1);
	EXPECT(zl_free(l), ZL_INVALID_ARGUMENT); // the library owns a lent handle
	LAST_ERROR_HAS("lent");
	if (s->force_release) {
		zl_lock other = make(s->m, key, 1000);
		EXPECT(zl_force_release(other), ZL_OK);
		EXPECT(zl_free(other), ZL_OK);
	}
	if (s->cancel_self) {
		EXPECT(zl_cancel(l), ZL_OK);
	}
	if (s->close_manager) {
		EXPECT(zl_close(s->m), ZL_OK);
	}
	int lost = -1;
	EXPECT(zl_lost(l, &lost), ZL_OK);
	int64_t deadline = mono_ms() + s->wait_lost_ms;
	while (!lost && mono_ms() < deadline) {
		sleep_ms(2);
		EXPECT(zl_lost(l, &lost), ZL_OK);
	}
	s->lost_seen = lost;
	return s->ret;
}

static void test_callbacks(void) {
	zl_manager m = open_memory();
	struct run_state s = {0};
	uint64_t first;

	EXPECT(zl_try(m, "cb/try", 5000, NULL, callback, &s), ZL_OK);
	CHECK(s.calls == 1 && s.token > 0 && s.lost_seen == 0);
	first = s.token;
	int acquired = -1;
	EXPECT(zl_acquire(s.lent, &acquired), ZL_INVALID_HANDLE); // lent only for the call

	// Held: zl_try does not run the callback; zl_block_run waits, then not.
	zl_lock holder = make(m, "cb/try", 5000);
	EXPECT(zl_acquire(holder, &acquired), ZL_OK);
	memset(&s, 0, sizeof s);
	EXPECT(zl_try(m, "cb/try", 5000, NULL, callback, &s), ZL_NOT_ACQUIRED);
	CHECK(s.calls == 0);
	zl_options wait = {0};
	wait.timeout_ms = 40;
	wait.timeout_set = 1;
	wait.retry_delay_ms = 5;
	EXPECT(zl_block_run(m, "cb/try", 5000, &wait, callback, &s), ZL_NOT_ACQUIRED);
	CHECK(s.calls == 0);
	wait.timeout_ms = 0; // set, and 0: a single attempt
	EXPECT(zl_block_run(m, "cb/try", 5000, &wait, callback, &s), ZL_NOT_ACQUIRED);
	EXPECT(zl_release(holder), ZL_OK);
	EXPECT(zl_block_run(m, "cb/try", 5000, NULL, callback, &s), ZL_OK);
	CHECK(s.calls == 1 && s.token > first);

	// A callback that fails: ZL_CALLBACK, with its value in the detail.
	memset(&s, 0, sizeof s);
	s.ret = 42;
	EXPECT(zl_try(m, "cb/fail", 5000, NULL, callback, &s), ZL_CALLBACK);
	LAST_ERROR_HAS("42");
	EXPECT(zl_acquire(holder, &acquired), ZL_OK); // released after the failure: "cb/try" is free too
	CHECK(acquired == 1);
	EXPECT(zl_release(holder), ZL_OK);

	// Outliving the TTL without refresh: the callback sees zl_lost, and the
	// run reports ZL_LOST.
	memset(&s, 0, sizeof s);
	s.wait_lost_ms = 5000;
	EXPECT(zl_try(m, "cb/expire", 30, NULL, callback, &s), ZL_LOST);
	CHECK(s.lost_seen == 1);

	// With refresh, a callback longer than the TTL keeps the lock.
	memset(&s, 0, sizeof s);
	s.wait_lost_ms = 2200; /* over twice the TTL; a refresh may stall ~0.6 s */
	zl_options refresh = {0};
	refresh.refresh = 1;
	EXPECT(zl_try(m, "cb/refresh", 1000, &refresh, callback, &s), ZL_OK);
	CHECK(s.lost_seen == 0);

	// With refresh, a lock taken away is found by the next refresh.
	memset(&s, 0, sizeof s);
	s.m = m;
	s.force_release = 1;
	s.wait_lost_ms = 5000;
	refresh.refresh_every_ms = 10;
	EXPECT(zl_try(m, "cb/stolen", 1000, &refresh, callback, &s), ZL_LOST);
	CHECK(s.lost_seen == 1);

	// zl_cancel on the lent handle asks the callback to stop.
	memset(&s, 0, sizeof s);
	s.cancel_self = 1;
	EXPECT(zl_try(m, "cb/cancel", 5000, NULL, callback, &s), ZL_OK);
	CHECK(s.lost_seen == 1);

	// Bad options and arguments are rejected before anything runs.
	memset(&s, 0, sizeof s);
	zl_options bad = {0};
	bad.retry_delay_ms = -5;
	EXPECT(zl_block_run(m, "cb/bad", 5000, &bad, callback, &s), ZL_INVALID_ARGUMENT);
	LAST_ERROR_HAS("retry delay");
	bad = (zl_options){0};
	bad.refresh_every_ms = 5000;
	EXPECT(zl_try(m, "cb/bad", 5000, &bad, callback, &s), ZL_INVALID_ARGUMENT);
	EXPECT(zl_try(m, "cb/bad", 0, NULL, callback, &s), ZL_INVALID_ARGUMENT);
	LAST_ERROR_HAS("ttl");
	EXPECT(zl_try(m, "", 5000, NULL, callback, &s), ZL_INVALID_ARGUMENT);
	EXPECT(zl_try(m, NULL, 5000, NULL, callback, &s), ZL_INVALID_ARGUMENT);
	LAST_ERROR_HAS("key");
	EXPECT(zl_try(m, "cb/bad", 5000, NULL, NULL, &s), ZL_INVALID_ARGUMENT);
	LAST_ERROR_HAS("fn");
	CHECK(s.calls == 0);

	EXPECT(zl_free(holder), ZL_OK);
	EXPECT(zl_close(m), ZL_OK);

	// A callback may close the manager running it: the lock goes with the
	// manager, so the run cannot report success.
	m = open_memory();
	memset(&s, 0, sizeof s);
	s.m = m;
	s.close_manager = 1;
	s.wait_lost_ms = 5000;
	int code = zl_try(m, "cb/close", 5000, NULL, callback, &s);
	CHECK(code == ZL_CLOSED || code == ZL_LOST);
	CHECK(s.lost_seen == 1);
	EXPECT(zl_close(m), ZL_INVALID_HANDLE); // closed already
}

struct blocker {
	zl_lock l;
	int code;
	atomic_int done;
};

static void *block_long(void *arg) {
	struct blocker *b = arg;
	b->code = zl_block(b->l, 60000, ZL_DEFAULT);
	atomic_store(&b->done, 1);
	return NULL;
}

// zl_cancel ends a zl_block waiting on another thread; zl_free does too.
static void test_cancel(void) {
	zl_manager m = open_memory();
	zl_lock holder = make(m, "cancel", 60000);
	int acquired = 0;
	EXPECT(zl_acquire(holder, &acquired), ZL_OK);

	struct blocker b = {.l = make(m, "cancel", 60000)};
	pthread_t t;
	CHECK(pthread_create(&t, NULL, block_long, &b) == 0);
	// A cancel ends the calls in progress: repeat it until the waiting
	// one has started and ended, up to a deadline.
	int64_t deadline = mono_ms() + 10000;
	while (!atomic_load(&b.done) && mono_ms() < deadline) {
		EXPECT(zl_cancel(b.l), ZL_OK);
		sleep_ms(1);
	}
	pthread_join(t, NULL);
	CHECK(b.code == ZL_CANCELED);
	EXPECT(zl_block(b.l, 0, ZL_DEFAULT), ZL_NOT_ACQUIRED); // later calls work

	atomic_store(&b.done, 0);
	CHECK(pthread_create(&t, NULL, block_long, &b) == 0);
	sleep_ms(20); // let it start waiting; if it has not, zl_free still wins
	EXPECT(zl_free(b.l), ZL_OK);
	pthread_join(t, NULL);
	CHECK(b.code == ZL_CANCELED || b.code == ZL_INVALID_HANDLE);

	EXPECT(zl_free(holder), ZL_OK);
	EXPECT(zl_close(m), ZL_OK);
}

static void test_misuse(void) {
	zl_manager m = open_memory();
	zl_lock l = make(m, "misuse", 5000);
	zl_manager dead_m = open_memory();
	zl_lock orphan = make(dead_m, "misuse/orphan", 5000);
	int acquired = 0;
	EXPECT(zl_acquire(orphan, &acquired), ZL_OK);
	EXPECT(zl_close(dead_m), ZL_OK);
	EXPECT(zl_close(dead_m), ZL_INVALID_HANDLE); // closed twice
	LAST_ERROR_HAS("zl_close");

	// Use after close: the lock handle stays valid and reports ZL_CLOSED;
	// the manager handle is gone.
	EXPECT(zl_acquire(orphan, &acquired), ZL_CLOSED);
	int held = -1;
	EXPECT(zl_is_acquired(orphan, &held), ZL_OK);
	CHECK(held == 0); // Close released it
	zl_lock none = 0;
	EXPECT(zl_make(dead_m, "x", 5000, &none), ZL_INVALID_HANDLE);
	CHECK(none == 0);
	EXPECT(zl_free(orphan), ZL_OK);

	// Wrong, unknown and freed handles; 0.
	zl_lock stale = make(m, "misuse/stale", 5000);
	EXPECT(zl_free(stale), ZL_OK);
	uint64_t bad[] = {0, stale, 987654321, (uint64_t)m};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		zl_lock h = bad[i];
		char buf[64];
		size_t len = sizeof buf;
		int v = 0;
		int64_t t = 0;
		uint64_t tok = 0;
		EXPECT(zl_acquire(h, &v), ZL_INVALID_HANDLE);
		EXPECT(zl_block(h, 0, 0), ZL_INVALID_HANDLE);
		EXPECT(zl_release(h), ZL_INVALID_HANDLE);
		EXPECT(zl_force_release(h), ZL_INVALID_HANDLE);
		EXPECT(zl_refresh(h, &v), ZL_INVALID_HANDLE);
		EXPECT(zl_key(h, buf, &len), ZL_INVALID_HANDLE);
		EXPECT(zl_owner(h, buf, &len), ZL_INVALID_HANDLE);
		EXPECT(zl_is_acquired(h, &v), ZL_INVALID_HANDLE);
		EXPECT(zl_expires_at(h, &t), ZL_INVALID_HANDLE);
		EXPECT(zl_token(h, &tok), ZL_INVALID_HANDLE);
		EXPECT(zl_lost(h, &v), ZL_INVALID_HANDLE);
		EXPECT(zl_cancel(h), ZL_INVALID_HANDLE);
		EXPECT(zl_free(h), ZL_INVALID_HANDLE);
		if (h == (uint64_t)m) {
			LAST_ERROR_HAS("zl_manager"); // says what it got
		}
	}
	zl_lock out = 0;
	EXPECT(zl_make((zl_manager)l, "x", 5000, &out), ZL_INVALID_HANDLE); // a lock is not a manager
	LAST_ERROR_HAS("zl_lock");
	EXPECT(zl_close((zl_manager)l), ZL_INVALID_HANDLE);
	EXPECT(zl_close(0), ZL_INVALID_HANDLE);
	EXPECT(zl_try((zl_manager)l, "x", 5000, NULL, callback, NULL), ZL_INVALID_HANDLE);
	EXPECT(zl_block_run(0, "x", 5000, NULL, callback, NULL), ZL_INVALID_HANDLE);

	// NULL out-parameters and strings.
	EXPECT(zl_make(m, NULL, 5000, &out), ZL_INVALID_ARGUMENT);
	EXPECT(zl_make(m, "x", 5000, NULL), ZL_INVALID_ARGUMENT);
	EXPECT(zl_acquire(l, NULL), ZL_INVALID_ARGUMENT);
	LAST_ERROR_HAS("acquired");
	EXPECT(zl_refresh(l, NULL), ZL_INVALID_ARGUMENT);
	EXPECT(zl_is_acquired(l, NULL), ZL_INVALID_ARGUMENT);
	EXPECT(zl_expires_at(l, NULL), ZL_INVALID_ARGUMENT);
	EXPECT(zl_token(l, NULL), ZL_INVALID_ARGUMENT);
	EXPECT(zl_lost(l, NULL), ZL_INVALID_ARGUMENT);
	EXPECT(zl_key(l, NULL, NULL), ZL_INVALID_ARGUMENT);
	EXPECT(zl_owner(l, NULL, NULL), ZL_INVALID_ARGUMENT);

	// zl_lost is for lent handles.
	int lost = 0;
	EXPECT(zl_lost(l, &lost), ZL_INVALID_ARGUMENT);

	// Bad keys and TTLs are reported by the handle's calls.
	zl_lock empty = make(m, "", 5000);
	EXPECT(zl_acquire(empty, &acquired), ZL_INVALID_ARGUMENT);
	LAST_ERROR_HAS("key");
	EXPECT(zl_free(empty), ZL_OK);
	zl_lock zero_ttl = make(m, "misuse/ttl", 0);
	EXPECT(zl_acquire(zero_ttl, &acquired), ZL_INVALID_ARGUMENT);
	LAST_ERROR_HAS("ttl");
	EXPECT(zl_free(zero_ttl), ZL_OK);
	char long_key[2048];
	memset(long_key, 'k', sizeof long_key - 1);
	long_key[sizeof long_key - 1] = '\0';
	zl_lock too_long = make(m, long_key, 5000);
	EXPECT(zl_acquire(too_long, &acquired), ZL_INVALID_ARGUMENT);
	EXPECT(zl_free(too_long), ZL_OK);
	// A TTL no backend can store is refused, never half-applied: the
	// longest is 365 days.
	zl_lock forever = make(m, "misuse/forever", INT64_MAX);
	EXPECT(zl_acquire(forever, &acquired), ZL_INVALID_ARGUMENT);
	LAST_ERROR_HAS("365 days");
	EXPECT(zl_free(forever), ZL_OK);
	zl_lock year = make(m, "misuse/year", 365LL * 24 * 3600 * 1000);
	EXPECT(zl_acquire(year, &acquired), ZL_OK);
	CHECK(acquired == 1);
	EXPECT(zl_free(year), ZL_OK);
	zl_lock past = make(m, "misuse/past-the-year", 365LL * 24 * 3600 * 1000 + 1);
	EXPECT(zl_acquire(past, &acquired), ZL_INVALID_ARGUMENT);
	EXPECT(zl_free(past), ZL_OK);
	EXPECT(zl_block(l, -7, -7), ZL_OK); // negative: the defaults

	// A panic inside the library is contained in every export taking a
	// handle: the test build's PANIC_HANDLE makes the lookup panic.
	zl_lock p = PANIC_HANDLE;
	char buf[8];
	size_t len = sizeof buf;
	int v = 0;
	int64_t t = 0;
	uint64_t tok = 0;
	EXPECT(zl_acquire(p, &v), ZL_INTERNAL);
	LAST_ERROR_HAS("panic");
	EXPECT(zl_block(p, 0, 0), ZL_INTERNAL);
	EXPECT(zl_release(p), ZL_INTERNAL);
	EXPECT(zl_force_release(p), ZL_INTERNAL);
	EXPECT(zl_refresh(p, &v), ZL_INTERNAL);
	EXPECT(zl_key(p, buf, &len), ZL_INTERNAL);
	EXPECT(zl_owner(p, buf, &len), ZL_INTERNAL);
	EXPECT(zl_is_acquired(p, &v), ZL_INTERNAL);
	EXPECT(zl_expires_at(p, &t), ZL_INTERNAL);
	EXPECT(zl_token(p, &tok), ZL_INTERNAL);
	EXPECT(zl_lost(p, &v), ZL_INTERNAL);
	EXPECT(zl_cancel(p), ZL_INTERNAL);
	EXPECT(zl_free(p), ZL_INTERNAL);
	EXPECT(zl_close((zl_manager)p), ZL_INTERNAL);
	EXPECT(zl_make((zl_manager)p, "x", 5000, &out), ZL_INTERNAL);
	EXPECT(zl_try((zl_manager)p, "x", 5000, NULL, callback, NULL), ZL_INTERNAL);
	EXPECT(zl_block_run((zl_manager)p, "x", 5000, NULL, callback, NULL), ZL_INTERNAL);
	EXPECT(zl_acquire(l, &v), ZL_OK); // and the library carries on

	EXPECT(zl_free(l), ZL_OK);
	EXPECT(zl_free(l), ZL_INVALID_HANDLE); // freed twice
	EXPECT(zl_close(m), ZL_OK);
}

// The contention test: threads take one key in turns through every way
// there is (zl_block, zl_try, zl_block_run); the number of threads inside
// the critical section must never exceed one.
#define THREADS 8
#define ROUNDS 150

static atomic_int inside, overlaps, entered;
static zl_manager shared_m;

static void critical(void) {
	if (atomic_fetch_add(&inside, 1) != 0) {
		atomic_fetch_add(&overlaps, 1);
	}
	atomic_fetch_add(&entered, 1);
	for (volatile int i = 0; i < 200; i++) {
	}
	atomic_fetch_sub(&inside, 1);
}

static int critical_cb(zl_lock l, void *user_data) {
	(void)l;
	(void)user_data;
	critical();
	return 0;
}

static void *contender(void *arg) {
	int id = (int)(intptr_t)arg;
	zl_lock l = make(shared_m, "contended", 10000);
	zl_options wait = {0};
	wait.timeout_ms = 30000;
	wait.timeout_set = 1;
	wait.retry_delay_ms = 1;
	for (int r = 0; r < ROUNDS; r++) {
		switch ((id + r) % 3) {
		case 0:
			EXPECT(zl_block(l, 30000, 1), ZL_OK);
			critical();
			EXPECT(zl_release(l), ZL_OK);
			break;
		case 1: {
			int code;
			// zl_try until it gets its turn, bounded.
			for (int attempt = 0; (code = zl_try(shared_m, "contended", 10000, NULL, critical_cb, NULL)) == ZL_NOT_ACQUIRED && attempt < 1000000; attempt++) {
				sched_yield();
			}
			CHECK(code == ZL_OK);
			break;
		}
		default:
			EXPECT(zl_block_run(shared_m, "contended", 10000, &wait, critical_cb, NULL), ZL_OK);
		}
	}
	EXPECT(zl_free(l), ZL_OK);
	return NULL;
}

static void test_threads(void) {
	shared_m = open_memory();
	pthread_t ts[THREADS];
	for (int i = 0; i < THREADS; i++) {
		CHECK(pthread_create(&ts[i], NULL, contender, (void *)(intptr_t)i) == 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(ts[i], NULL);
	}
	CHECK(atomic_load(&overlaps) == 0);
	CHECK(atomic_load(&entered) == THREADS * ROUNDS);
	EXPECT(zl_close(shared_m), ZL_OK);
}

// Each thread's last error is its own: threads fail with messages naming
// themselves, at once, and each reads back its own.
static void *own_error(void *arg) {
	int id = (int)(intptr_t)arg;
	char json[64], mine[32];
	snprintf(json, sizeof json, "{\"thread%d\":1}", id);
	snprintf(mine, sizeof mine, "\"thread%d\"", id);
	for (int i = 0; i < 500; i++) {
		zl_manager m = 0;
		EXPECT(zl_open(json, &m), ZL_INVALID_ARGUMENT);
		sched_yield();
		LAST_ERROR_HAS(mine);
	}
	return NULL;
}

static void test_thread_local_errors(void) {
	pthread_t ts[THREADS];
	for (int i = 0; i < THREADS; i++) {
		CHECK(pthread_create(&ts[i], NULL, own_error, (void *)(intptr_t)i) == 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(ts[i], NULL);
	}
}

// retake_callback releases its own lock, lets another owner take and free
// the key, and takes it back: the work did not run under one continuous
// hold, so zl_try must not report success.
static int retake_callback(zl_lock l, void *user_data) {
	zl_manager m = *(zl_manager *)user_data;
	char key[64];
	size_t len = sizeof key;
	EXPECT(zl_key(l, key, &len), ZL_OK);
	EXPECT(zl_release(l), ZL_OK);
	zl_lock other = make(m, key, 5000);
	int got = 0;
	EXPECT(zl_acquire(other, &got), ZL_OK);
	CHECK(got == 1);
	EXPECT(zl_release(other), ZL_OK);
	EXPECT(zl_free(other), ZL_OK);
	EXPECT(zl_acquire(l, &got), ZL_OK);
	CHECK(got == 1);
	return 0;
}

static void test_retake_is_a_loss(void) {
	zl_manager m = open_memory();
	EXPECT(zl_try(m, "cb/retake", 5000, NULL, retake_callback, &m), ZL_LOST);
	LAST_ERROR_HAS("own handle");
	zl_lock probe = make(m, "cb/retake", 5000);
	int got = 0;
	EXPECT(zl_acquire(probe, &got), ZL_OK);
	CHECK(got == 1); // the re-taken key was released when zl_try returned
	EXPECT(zl_free(probe), ZL_OK);
	EXPECT(zl_close(m), ZL_OK);
}

int main(void) {
	test_library();
	test_retake_is_a_loss();
	test_open();
	test_lock_cycle();
	test_callbacks();
	test_cancel();
	test_misuse();
	test_threads();
	test_thread_local_errors();
	int live = zl_test_live_handles();
	if (live != 0) {
		fprintf(stderr, "%d handles leaked\n", live);
		atomic_fetch_add(&failures, 1);
	}
	if (atomic_load(&failures) > 0) {
		fprintf(stderr, "FAIL: %d checks failed\n", atomic_load(&failures));
		return 1;
	}
	printf("ok: every check passed\n");
	return 0;
}
