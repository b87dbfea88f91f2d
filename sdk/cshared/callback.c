// The callback trampoline: Go cannot call a C function pointer, so it calls
// this function, which does.

#include "zerotal_lock.h"

__attribute__((visibility("hidden"))) int zl_cgo_call(zl_callback fn, zl_lock l, void *user_data) {
	return fn(l, user_data);
}
