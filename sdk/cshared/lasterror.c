// The per-thread last error. A Go export runs on the calling thread for its
// whole duration, so a C thread-local written from Go lands on the thread
// that made the call, whatever goroutine served it.

#include <stddef.h>
#include <string.h>

// LAST_ERROR_MAX bounds a message; longer ones are cut, marked with "...".
#define LAST_ERROR_MAX 1024

static _Thread_local char last_error[LAST_ERROR_MAX];

__attribute__((visibility("hidden"))) void zl_cgo_set_last_error(const char *msg, size_t n) {
	if (n < sizeof last_error) {
		memcpy(last_error, msg, n);
		last_error[n] = '\0';
		return;
	}
	n = sizeof last_error - sizeof "...";
	// Never cut a UTF-8 sequence in two: back up to the start of the
	// character at the cut.
	while (n > 0 && ((unsigned char)msg[n] & 0xC0) == 0x80) {
		n--;
	}
	memcpy(last_error, msg, n);
	memcpy(last_error + n, "...", sizeof "...");
}

__attribute__((visibility("hidden"))) const char *zl_cgo_last_error(void) {
	return last_error;
}
