/* Freeing a handle whose zl_block or zl_acquire runs on another thread must
 * never leave its key held by nobody: after zl_free returns, nothing that
 * handle started holds a key. argv[1] is the zl_open configuration, argv[2]
 * the number of rounds. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerotal_lock.h"

static atomic_int failures;

#define CHECK(cond, ...)                                   \
	do {                                               \
		if (!(cond)) {                             \
			fprintf(stderr, __VA_ARGS__);      \
			fprintf(stderr, " (last error: %s)\n", zl_last_error()); \
			atomic_fetch_add(&failures, 1);    \
		}                                          \
	} while (0)

struct call {
	zl_lock l;
	int blocking; /* zl_block, else zl_acquire */
	int rc;
};

static void *run_call(void *arg) {
	struct call *c = arg;
	int got = 0;
	c->rc = c->blocking ? zl_block(c->l, 10000, ZL_DEFAULT) : zl_acquire(c->l, &got);
	return NULL;
}

/* free_free reports whether the key is free: a probe takes and gives it. */
static int key_is_free(zl_manager m, const char *key) {
	zl_lock probe;
	int got = 0;
	if (zl_make(m, key, 60000, &probe) != ZL_OK) {
		return 0;
	}
	/* What the library gives back in the background has a moment to land. */
	if (zl_block(probe, 3000, 5) == ZL_OK) {
		got = 1;
	}
	zl_free(probe);
	return got;
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: free_race_test CONFIG_JSON ROUNDS\n");
		return 2;
	}
	int rounds = atoi(argv[2]);
	zl_manager m;
	if (zl_open(argv[1], &m) != ZL_OK) {
		fprintf(stderr, "zl_open: %s\n", zl_last_error());
		return 1;
	}
	int orphaned = 0;
	for (int i = 0; i < rounds; i++) {
		char key[64];
		snprintf(key, sizeof key, "free-race-%d", i);
		zl_lock holder, waiter;
		int got = 0;
		if (zl_make(m, key, 60000, &holder) != ZL_OK || zl_acquire(holder, &got) != ZL_OK || !got) {
			fprintf(stderr, "round %d: the holder cannot take a free key: %s\n", i, zl_last_error());
			return 1;
		}
		zl_make(m, key, 60000, &waiter);
		struct call c = {waiter, i % 2 == 0, 0};
		pthread_t t;
		pthread_create(&t, NULL, run_call, &c);
		/* Release the key so it may be handed to the waiter, and free the
		 * waiter at the same moment. */
		zl_release(holder);
		int rc = zl_free(waiter);
		pthread_join(t, NULL);
		CHECK(rc == ZL_OK, "round %d: zl_free = %d", i, rc);
		zl_free(holder);
		if (!key_is_free(m, key)) {
			orphaned++;
		}
	}
	CHECK(orphaned == 0, "%d of %d keys stayed held after zl_free of the handle that was waiting or acquiring", orphaned, rounds);
	zl_close(m);
	if (failures) {
		printf("FAIL: %d checks failed\n", failures);
		return 1;
	}
	printf("ok: no key orphaned in %d rounds\n", rounds);
	return 0;
}
