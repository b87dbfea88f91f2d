// hold_test exercises the event-loop form of the C ABI: zl_hold takes a key
// in the background, zl_notify_fd says when to look, zl_hold_done,
// zl_is_acquired and zl_lost say how it goes, and zl_cancel and zl_free end
// it. No call here blocks on the backend: the test sleeps only in poll() on
// the notification descriptor, as an event loop would. TestCHold in
// c_test.go compiles and runs it.

#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#include "zerotal_lock.h"

int zl_test_live_handles(void);

static int failures;

#define CHECK(cond)                                                              \
	do {                                                                         \
		if (!(cond)) {                                                           \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                                          \
		}                                                                        \
	} while (0)

#define EXPECT(call, want)                                                       \
	do {                                                                         \
		int got_ = (call);                                                       \
		if (got_ != (want)) {                                                    \
			fprintf(stderr, "%s:%d: %s = %d (%s), want %d; last error: %s\n",    \
			        __FILE__, __LINE__, #call, got_, zl_strerror(got_), (want),  \
			        zl_last_error());                                            \
			failures++;                                                          \
		}                                                                        \
	} while (0)

static int64_t mono_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int notify_fd;

// drain reads every wake-up waiting on the descriptor; it returns 0 at
// end-of-file.
static int drain(void) {
	char buf[64];
	for (;;) {
		ssize_t n = recv(notify_fd, buf, sizeof buf, MSG_DONTWAIT);
		if (n > 0) {
			continue;
		}
		if (n == 0) {
			return 0;
		}
		return errno == EAGAIN || errno == EWOULDBLOCK ? 1 : -1;
	}
}

enum state { DONE, HELD, LOST };

// has reports whether hold l is in state s now.
static int has(zl_lock l, enum state s) {
	int v = 0;
	switch (s) {
	case DONE:
		EXPECT(zl_hold_done(l, &v), ZL_OK);
		break;
	case HELD:
		EXPECT(zl_is_acquired(l, &v), ZL_OK);
		break;
	case LOST:
		EXPECT(zl_lost(l, &v), ZL_OK);
		break;
	}
	return v;
}

// await sleeps in poll() until hold l is in state s, up to limit_ms, and
// returns how long that took (-1 on timeout).
static int64_t await(zl_lock l, enum state s, int limit_ms) {
	int64_t start = mono_ms();
	while (!has(l, s)) {
		int left = limit_ms - (int)(mono_ms() - start);
		if (left <= 0) {
			return -1;
		}
		struct pollfd p = {.fd = notify_fd, .events = POLLIN};
		if (poll(&p, 1, left) > 0 && drain() == 0) {
			if (!has(l, s)) {
				return -1; // end-of-file: nothing will change any more
			}
		}
	}
	return mono_ms() - start;
}

static zl_lock hold(zl_manager m, const char *key, int64_t ttl_ms, const zl_options *opts) {
	zl_lock l = 0;
	EXPECT(zl_hold(m, key, ttl_ms, opts, &l), ZL_OK);
	CHECK(l != 0);
	return l;
}

int main(void) {
	zl_manager m = 0;
	EXPECT(zl_open("{\"driver\":\"memory\",\"prefix\":\"hold:\"}", &m), ZL_OK);
	EXPECT(zl_notify_fd(m, &notify_fd), ZL_OK);
	CHECK(notify_fd > 2);

	// A hold takes a free key; a second one waits; a single attempt fails.
	zl_lock first = hold(m, "k", 10000, NULL);
	CHECK(await(first, HELD, 5000) >= 0);
	uint64_t token = 0;
	EXPECT(zl_token(first, &token), ZL_OK);
	CHECK(token > 0);
	char key[16];
	size_t len = sizeof key;
	EXPECT(zl_key(first, key, &len), ZL_OK);
	CHECK(strcmp(key, "k") == 0);
	int still = 0;
	EXPECT(zl_refresh(first, &still), ZL_OK);
	CHECK(still == 1);

	zl_options once = {0};
	once.timeout_set = 1;
	zl_lock busy = hold(m, "k", 10000, &once);
	CHECK(await(busy, DONE, 5000) >= 0);
	CHECK(!has(busy, HELD));
	EXPECT(zl_free(busy), ZL_NOT_ACQUIRED);

	zl_options wait = {0};
	wait.timeout_set = 1;
	wait.timeout_ms = 10000;
	zl_lock second = hold(m, "k", 10000, &wait);
	CHECK(await(second, DONE, 100) < 0); // still waiting
	CHECK(!has(second, HELD) && !has(second, LOST));
	// Before the grant, nothing is held, and calls that would take the key
	// are refused.
	EXPECT(zl_refresh(second, &still), ZL_OK);
	CHECK(still == 0);
	EXPECT(zl_acquire(second, &still), ZL_CANCELED);
	len = sizeof key;
	EXPECT(zl_key(second, key, &len), ZL_OK);

	// Letting go of the first hands the key to the second.
	EXPECT(zl_cancel(first), ZL_OK);
	CHECK(await(first, DONE, 5000) >= 0);
	CHECK(!has(first, HELD));
	EXPECT(zl_free(first), ZL_OK);
	CHECK(await(second, HELD, 5000) >= 0);
	uint64_t token2 = 0;
	EXPECT(zl_token(second, &token2), ZL_OK);
	CHECK(token2 > token);

	// A waiting hold cancelled ends with ZL_CANCELED.
	zl_lock third = hold(m, "k", 10000, &wait);
	EXPECT(zl_cancel(third), ZL_OK);
	CHECK(has(third, LOST));
	CHECK(await(third, DONE, 5000) >= 0);
	EXPECT(zl_free(third), ZL_CANCELED);
	EXPECT(zl_free(second), ZL_OK); // zl_free ends a held hold too

	// A lock taken away is lost within about the refresh interval.
	zl_options refresh = {0};
	refresh.refresh_every_ms = 50;
	zl_lock taken = hold(m, "taken", 2000, &refresh);
	CHECK(await(taken, HELD, 5000) >= 0);
	zl_lock admin = 0;
	EXPECT(zl_make(m, "taken", 1000, &admin), ZL_OK);
	EXPECT(zl_force_release(admin), ZL_OK);
	int64_t took = await(taken, LOST, 5000);
	CHECK(took >= 0 && took < 1000);
	CHECK(await(taken, DONE, 5000) >= 0);
	EXPECT(zl_free(taken), ZL_LOST);
	EXPECT(zl_free(admin), ZL_OK);

	// Without refresh, the TTL's expiry is a loss too.
	/* took counts from when this thread saw HELD, which a busy machine
	 * may delay: the lower bound leaves 700 ms for that. */
	zl_lock expiring = hold(m, "expiring", 1000, NULL);
	CHECK(await(expiring, HELD, 5000) >= 0);
	took = await(expiring, LOST, 5000);
	CHECK(took >= 300 && took < 4000);
	CHECK(await(expiring, DONE, 5000) >= 0);
	EXPECT(zl_free(expiring), ZL_LOST);

	// Bad input ends the hold at once, with the engine's message.
	zl_lock bad = hold(m, "", 1000, NULL);
	CHECK(await(bad, DONE, 5000) >= 0);
	EXPECT(zl_free(bad), ZL_INVALID_ARGUMENT);
	CHECK(strstr(zl_last_error(), "key") != NULL);
	bad = hold(m, "bad", 0, NULL);
	CHECK(await(bad, DONE, 5000) >= 0);
	EXPECT(zl_free(bad), ZL_INVALID_ARGUMENT);
	zl_lock made = 0;
	EXPECT(zl_make(m, "made", 1000, &made), ZL_OK);
	int done = 0;
	EXPECT(zl_hold_done(made, &done), ZL_INVALID_ARGUMENT);
	EXPECT(zl_free(made), ZL_OK);
	EXPECT(zl_hold(m, "k", 1000, NULL, NULL), ZL_INVALID_ARGUMENT);
	EXPECT(zl_hold(m, NULL, 1000, NULL, &made), ZL_INVALID_ARGUMENT);
	EXPECT(zl_hold(0, "k", 1000, NULL, &made), ZL_INVALID_HANDLE);
	EXPECT(zl_hold_done(0, &done), ZL_INVALID_HANDLE);
	EXPECT(zl_notify_fd(m, NULL), ZL_INVALID_ARGUMENT);
	EXPECT(zl_notify_fd(made, &done), ZL_INVALID_HANDLE); // freed, and not a manager
	// A panic inside the library is contained (the test build's handle).
	EXPECT(zl_hold(UINT64_MAX, "k", 1000, NULL, &made), ZL_INTERNAL);
	EXPECT(zl_hold_done(UINT64_MAX, &done), ZL_INTERNAL);
	EXPECT(zl_notify_fd(UINT64_MAX, &done), ZL_INTERNAL);

	// A second descriptor is signalled too; closing one leaves the other.
	int other = -1;
	EXPECT(zl_notify_fd(m, &other), ZL_OK);
	zl_lock again = hold(m, "again", 10000, NULL);
	struct pollfd p = {.fd = other, .events = POLLIN};
	CHECK(poll(&p, 1, 5000) == 1);
	close(other);
	CHECK(await(again, HELD, 5000) >= 0);

	// Closing the manager ends every hold, and the descriptor reads
	// end-of-file once it has.
	zl_lock waiting = hold(m, "again", 10000, &wait);
	EXPECT(zl_close(m), ZL_OK);
	CHECK(has(again, DONE) && has(waiting, DONE));
	EXPECT(zl_free(again), ZL_CLOSED);
	EXPECT(zl_free(waiting), ZL_CLOSED);
	struct pollfd q = {.fd = notify_fd, .events = POLLIN};
	CHECK(poll(&q, 1, 5000) == 1);
	CHECK(drain() == 0);
	close(notify_fd);

	int live = zl_test_live_handles();
	if (live != 0) {
		fprintf(stderr, "%d handles leaked\n", live);
		failures++;
	}
	if (failures) {
		printf("FAIL: %d checks failed\n", failures);
		return 1;
	}
	printf("ok: every check passed\n");
	return 0;
}
