/* Threads whose innermost functions were inlined (built -O2 -fomit-frame-pointer): gdb shows
 * every inlined call as a frame of its own, at the line of the call in its caller, and
 * TestInlinedFramesMatchGDB compares elfinfo's frames with gdb's.
 *   spinner: spins on inl_step, inlined into spin_loop.
 *   blocker: read(2) of a pipe nobody writes, from inl_read < inl_mid < inl_wait.
 *   waiter:  pthread_cond_wait (Debian libc's futex wait, itself inlined in libc).
 *   main:    pthread_join of blocker (another futex wait).
 * It prints "ready" once the threads are started; it never exits on its own. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

volatile unsigned long spins;
static int pipefd[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static inline __attribute__((always_inline)) void inl_step(volatile unsigned long *n) {
	*n += 3; /* enough work that a sample mostly lands inside inl_step */
	*n ^= 5;
	*n += 7;
	*n ^= 11;
	*n += 13;
	*n ^= 17;
}

__attribute__((noinline)) void *spin_loop(void *arg) {
	(void)arg;
	for (;;)
		inl_step(&spins);
	return NULL;
}

static inline __attribute__((always_inline)) long inl_read(int fd, char *buf) {
	return read(fd, buf, 1);
}

static inline __attribute__((always_inline)) long inl_mid(int fd, char *buf) {
	long n = inl_read(fd, buf);
	return n < 0 ? n : n + 1;
}

static inline __attribute__((always_inline)) long inl_wait(int fd) {
	char c;
	long n = inl_mid(fd, &c);
	return n * 2;
}

__attribute__((noinline)) void *block_read(void *arg) {
	(void)arg;
	long n = inl_wait(pipefd[0]);
	return (void *)n;
}

__attribute__((noinline)) void *cond_wait(void *arg) {
	(void)arg;
	pthread_mutex_lock(&mu);
	for (;;)
		pthread_cond_wait(&cv, &mu);
	return NULL;
}

int main(void) {
	pthread_t spin, blk, wt;
	if (pipe(pipefd) != 0)
		return 1;
	pthread_create(&spin, NULL, spin_loop, NULL);
	pthread_create(&blk, NULL, block_read, NULL);
	pthread_create(&wt, NULL, cond_wait, NULL);
	printf("ready\n");
	fflush(stdout);
	pthread_join(blk, NULL);
	return 0;
}
