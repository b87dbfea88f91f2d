// bench times cycles through the C ABI on the memory driver, for
// BenchmarkCycle in bench_test.go:
//
//	bench acquire N   N zl_acquire + zl_release cycles on one handle
//	bench try N       N zl_try cycles running an empty callback
//
// It prints the mean nanoseconds per cycle.

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zerotal_lock.h"

static int empty(zl_lock l, void *user_data) {
	(void)l;
	(void)user_data;
	return 0;
}

static double now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int check(const char *what, int code) {
	if (code != ZL_OK) {
		fprintf(stderr, "%s: %s: %s\n", what, zl_strerror(code), zl_last_error());
		exit(1);
	}
	return code;
}

static void cycle(const char *mode, zl_manager m, zl_lock l) {
	int acquired = 0;
	if (strcmp(mode, "try") == 0) {
		check("zl_try", zl_try(m, "bench", 60000, NULL, empty, NULL));
		return;
	}
	check("zl_acquire", zl_acquire(l, &acquired));
	if (!acquired) {
		fprintf(stderr, "not acquired\n");
		exit(1);
	}
	check("zl_release", zl_release(l));
}

int main(int argc, char **argv) {
	if (argc != 3 || (strcmp(argv[1], "acquire") != 0 && strcmp(argv[1], "try") != 0)) {
		fprintf(stderr, "usage: bench acquire|try N\n");
		return 2;
	}
	long n = atol(argv[2]);
	zl_manager m;
	zl_lock l;
	check("zl_open", zl_open("{\"driver\":\"memory\"}", &m));
	check("zl_make", zl_make(m, "bench", 60000, &l));
	for (int i = 0; i < 10000; i++) { // warm up
		cycle(argv[1], m, l);
	}
	double start = now_ns();
	for (long i = 0; i < n; i++) {
		cycle(argv[1], m, l);
	}
	double elapsed = now_ns() - start;
	printf("%.1f\n", n > 0 ? elapsed / (double)n : 0);
	zl_free(l);
	zl_close(m);
	return 0;
}
