/* A process whose main thread exits while another thread keeps running:
 * the thread-group leader shows as a zombie, but the process is alive.
 * The worker thread prints "ready" and exits the process when stdin closes. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *worker(void *arg) {
	char buf[64];
	(void)arg;
	while (read(0, buf, sizeof buf) > 0) {
	}
	exit(0);
	return NULL;
}

int main(void) {
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL) != 0) {
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	pthread_exit(NULL);
}
