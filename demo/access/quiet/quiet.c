/* quiet: a process for the "injection leaves no trace" test of crashtui's access matrix
 * (kernel.md §A.5). Its main thread blocks in read() on a pipe with a distinctive signal mask,
 * over a stack filled with a canary pattern right down below its stack pointer (where the
 * injector puts its scratch iovecs); a second thread answers commands on stdin:
 *
 *	sum        prints "sum HEX": a checksum of the main thread's stack window (which holds
 *	           the blocked read's frame and the memory below it) and of a heap canary
 *	write N    writes the byte N into the pipe; the main thread then prints
 *	           "read ret=R errno=E byte=B" and blocks in read() again
 *	exit       exits
 *
 * At startup it prints "ready PID"; /proc/PID/syscall shows when the read has started.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WINDOW (16 << 10)
#define HEAP (64 << 10)

static int pipefd[2];
static volatile uintptr_t stack_lo, stack_hi;
static unsigned char *heap;
static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
	va_list ap;
	pthread_mutex_lock(&out_mu);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
	pthread_mutex_unlock(&out_mu);
}

/* FNV-1a over the window and the heap canary. */
static uint64_t checksum(void) {
	uint64_t h = 1469598103934665603ull;
	for (volatile unsigned char *p = (unsigned char *)stack_lo; p < (unsigned char *)stack_hi; p++)
		h = (h ^ *p) * 1099511628211ull;
	for (int i = 0; i < HEAP; i++)
		h = (h ^ heap[i]) * 1099511628211ull;
	return h;
}

/* gate fills the stack below its own frame with the canary, then blocks in read(). memset is a
 * leaf that only pushes its return address, so filling up to 256 bytes below this frame is safe;
 * the read wrapper's frame and the scratch below the red zone land inside the window. */
static __attribute__((noinline)) ssize_t gate(char *c, int *err) {
	char mark;
	uintptr_t hi = (uintptr_t)&mark & ~(uintptr_t)15;
	stack_hi = hi;
	stack_lo = hi - WINDOW;
	memset((void *)(hi - WINDOW), 0xa5, WINDOW - 256);
	ssize_t r = read(pipefd[0], c, 1);
	*err = r < 0 ? errno : 0;
	__asm__ volatile("" ::: "memory");
	return r;
}

static void *commands(void *arg) {
	(void)arg;
	char line[128];
	while (fgets(line, sizeof line, stdin)) {
		int n;
		if (strncmp(line, "sum", 3) == 0) {
			say("sum %016llx\n", (unsigned long long)checksum());
		} else if (sscanf(line, "write %d", &n) == 1) {
			unsigned char b = (unsigned char)n;
			if (write(pipefd[1], &b, 1) != 1)
				say("error write %d\n", errno);
		} else if (strncmp(line, "exit", 4) == 0) {
			exit(0);
		} else {
			say("error unknown command\n");
		}
	}
	exit(0);
}

int main(void) {
	if (pipe(pipefd) != 0) {
		perror("pipe");
		return 1;
	}
	heap = malloc(HEAP);
	for (int i = 0; i < HEAP; i++)
		heap[i] = (unsigned char)(i * 131 + 17);
	pthread_t th;
	if (pthread_create(&th, NULL, commands, NULL) != 0) {
		perror("pthread_create");
		return 1;
	}
	/* A mask the injector must give back exactly (it blocks everything while it runs). */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGWINCH);
	sigaddset(&set, SIGRTMIN + 3);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	/* The read may not have started when this line is read: /proc/PID/syscall says when. */
	say("ready %d\n", (int)getpid());
	for (;;) {
		char c = 0;
		int err = 0;
		ssize_t r = gate(&c, &err);
		say("read ret=%zd errno=%d byte=%d\n", r, err, (unsigned char)c);
	}
}
