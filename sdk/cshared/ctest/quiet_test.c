/* The library never writes on its host's stderr uninvited: with its Redis
 * server down, calls fail with ZL_DRIVER and print nothing. argv[1] is a
 * Redis URL nobody answers. */
#include <stdio.h>
#include <string.h>

#include "zerotal_lock.h"

int main(int argc, char **argv) {
	if (argc != 2) {
		return 2;
	}
	char config[256];
	snprintf(config, sizeof config, "{\"driver\":\"redis\",\"redis\":{\"url\":\"%s\"}}", argv[1]);
	zl_manager m;
	if (zl_open(config, &m) != ZL_OK) {
		printf("zl_open: %s\n", zl_last_error());
		return 1;
	}
	zl_lock l;
	zl_make(m, "quiet", 5000, &l);
	for (int i = 0; i < 3; i++) {
		int got = 0;
		int rc = zl_acquire(l, &got);
		if (rc != ZL_DRIVER) {
			printf("zl_acquire with the server down = %d, want ZL_DRIVER\n", rc);
			return 1;
		}
	}
	zl_free(l);
	zl_close(m);
	printf("ok\n");
	return 0;
}
