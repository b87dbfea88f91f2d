/*
 * example.c: take a lock from C with libzerotal_lock.
 *
 * Build and run (after make cshared, from the repository root):
 *
 *	cc -o example sdk/cshared/examples/example.c \
 *	    $(PKG_CONFIG_PATH=sdk/cshared/build pkg-config --cflags --libs zerotal_lock)
 *	./example '{"driver":"sqlite","sqlite":{"path":"/tmp/locks.db"}}'
 *
 * With no argument, the configuration comes from the environment
 * (LOCK_DRIVER, ...; the default is the in-process memory driver).
 */

#include <stdio.h>
#include <stdlib.h>

#include "zerotal_lock.h"

// fail reports a failed call with the library's detail, and exits.
static void fail(const char *what, int code) {
	fprintf(stderr, "%s: %s: %s\n", what, zl_strerror(code), zl_last_error());
	exit(1);
}

// work runs under the lock: it gets the lock's handle and our user data.
static int work(zl_lock l, void *user_data) {
	const char *job = user_data;
	uint64_t token = 0;
	int code = zl_token(l, &token);
	if (code != ZL_OK) {
		fail("zl_token", code);
	}
	printf("%s: running under the lock with fencing token %llu\n", job, (unsigned long long)token);
	int lost = 0;
	if ((code = zl_lost(l, &lost)) != ZL_OK || lost) {
		return 1; // stop: the lock is gone, the work is not exclusive
	}
	return 0; // success
}

int main(int argc, char **argv) {
	if (zl_abi_version() != ZL_ABI_VERSION) {
		fprintf(stderr, "library ABI %d, header ABI %d\n", zl_abi_version(), ZL_ABI_VERSION);
		return 1;
	}
	printf("libzerotal_lock %s\n", zl_version());

	zl_manager m;
	int code = zl_open(argc > 1 ? argv[1] : NULL, &m);
	if (code != ZL_OK) {
		fail("zl_open", code);
	}

	// Run a function under the lock, refreshed in the background.
	zl_options opts = {0};
	opts.refresh = 1;
	code = zl_try(m, "example:report", 30000, &opts, work, "report");
	if (code == ZL_NOT_ACQUIRED) {
		printf("report: someone else holds the lock\n");
	} else if (code != ZL_OK) {
		fail("zl_try", code);
	}

	// Or take and release it explicitly.
	zl_lock l;
	if ((code = zl_make(m, "example:invoice", 10000, &l)) != ZL_OK) {
		fail("zl_make", code);
	}
	if ((code = zl_block(l, 5000, ZL_DEFAULT)) != ZL_OK) { // wait up to 5s
		fail("zl_block", code);
	}
	char owner[64];
	size_t len = sizeof owner;
	if ((code = zl_owner(l, owner, &len)) != ZL_OK) {
		fail("zl_owner", code);
	}
	printf("invoice: held by owner %s\n", owner);
	if ((code = zl_release(l)) != ZL_OK) {
		fail("zl_release", code);
	}
	zl_free(l);
	zl_close(m);
	return 0;
}
