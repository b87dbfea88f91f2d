/* Opens a manager from the configuration in argv[1] (a JSON object naming
 * the backend by "url") and checks, on that backend, that a second owner is
 * refused while the first holds the key and takes it after the release.
 * argv[2] is "tokens" when the driver mints fencing tokens: then the second
 * holder's token must be the larger. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "zerotal_lock.h"

static int fail(const char *what, int rc) {
	printf("%s = %d (%s): %s\n", what, rc, zl_strerror(rc), zl_last_error());
	return 1;
}

int main(int argc, char **argv) {
	if (argc != 3) {
		return 2;
	}
	int tokens = strcmp(argv[2], "tokens") == 0;
	zl_manager m;
	int rc = zl_open(argv[1], &m);
	if (rc != ZL_OK) {
		return fail("zl_open", rc);
	}
	zl_lock a, b;
	if ((rc = zl_make(m, "by-url", 30000, &a)) != ZL_OK || (rc = zl_make(m, "by-url", 30000, &b)) != ZL_OK) {
		return fail("zl_make", rc);
	}
	int got = 0;
	if ((rc = zl_acquire(a, &got)) != ZL_OK || !got) {
		printf("first acquire: got %d\n", got);
		return fail("zl_acquire", rc);
	}
	uint64_t first = 0, second = 0;
	zl_token(a, &first);
	if ((rc = zl_acquire(b, &got)) != ZL_OK || got) {
		printf("second acquire while held: got %d, want 0\n", got);
		return fail("zl_acquire", rc);
	}
	if ((rc = zl_release(a)) != ZL_OK) {
		return fail("zl_release", rc);
	}
	if ((rc = zl_acquire(b, &got)) != ZL_OK || !got) {
		printf("second acquire after the release: got %d, want 1\n", got);
		return fail("zl_acquire", rc);
	}
	zl_token(b, &second);
	if (tokens && !(first > 0 && second > first)) {
		printf("tokens %llu then %llu: want increasing\n", (unsigned long long)first, (unsigned long long)second);
		return 1;
	}
	if ((rc = zl_release(b)) != ZL_OK) {
		return fail("zl_release", rc);
	}
	zl_free(a);
	zl_free(b);
	if ((rc = zl_close(m)) != ZL_OK) {
		return fail("zl_close", rc);
	}
	printf("ok: tokens %llu, %llu\n", (unsigned long long)first, (unsigned long long)second);
	return 0;
}
