/* eintr: one thread blocked in each call that a ptrace interrupt (PTRACE_INTERRUPT, a
 * group-stop) ends with EINTR whatever the handlers, signal(7)'s "never restarted" list:
 * recv, accept and read on sockets with SO_RCVTIMEO, epoll_wait, rt_sigtimedwait, semop,
 * io_uring_enter waiting for a completion. Each reports "bad eintr NAME" when its call fails
 * with EINTR: no signal is ever sent to this process, so an EINTR is the tracer's doing.
 * One more thread sleeps in nanosleep, which the kernel restarts (restart_syscall), so a
 * tracer has a thread it may stop.
 *
 * Output: "thread TID NAME" for each, "sem ID" (the SysV semaphore set, for the caller to
 * remove: it outlives a SIGKILL), "ready PID" when all are started.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static void say(const char *fmt, ...) {
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (write(1, buf, (size_t)n) < 0) _exit(3);
}

static volatile int started;
static int semid = -1;

static void hello(const char *name) {
	say("thread %ld %s\n", (long)syscall(SYS_gettid), name);
	__sync_fetch_and_add(&started, 1);
}

/* check reports an EINTR; any other failure but a timeout ends the program (a broken
 * victim proves nothing). */
static void check(const char *name, long r) {
	if (r >= 0) return;
	if (errno == EINTR) say("bad eintr %s\n", name);
	else if (errno != EAGAIN && errno != EWOULDBLOCK) {
		say("bad %s %d\n", name, errno);
		_exit(2);
	}
}

/* timed is a socket pair whose first end times out receiving after an hour: SO_RCVTIMEO is
 * what makes the kernel end its calls with EINTR on a stop (sock_intr_errno). */
static int timed(void) {
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) _exit(4);
	struct timeval tv = {3600, 0};
	setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return sv[0];
}

static void *t_recv(void *a) {
	(void)a;
	int s = timed();
	char c;
	hello("recv");
	for (;;) check("recv", recv(s, &c, 1, 0));
	return NULL;
}

static void *t_read(void *a) {
	(void)a;
	int s = timed();
	char c;
	hello("read");
	for (;;) check("read", read(s, &c, 1));
	return NULL;
}

static void *t_accept(void *a) {
	(void)a;
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	/* abstract name: nothing in the file system to clean up */
	snprintf(sa.sun_path + 1, sizeof sa.sun_path - 1, "crashtui-eintr-%d", getpid());
	if (bind(s, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(s, 1) < 0) _exit(4);
	struct timeval tv = {3600, 0};
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	hello("accept");
	for (;;) check("accept", accept(s, NULL, NULL));
	return NULL;
}

static void *t_epoll(void *a) {
	(void)a;
	int ep = epoll_create1(0);
	struct epoll_event ev;
	hello("epoll_wait");
	for (;;) check("epoll_wait", epoll_wait(ep, &ev, 1, -1));
	return NULL;
}

static void *t_sigtimedwait(void *a) {
	(void)a;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN + 1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	struct timespec ts = {3600, 0};
	hello("rt_sigtimedwait");
	for (;;) check("rt_sigtimedwait", sigtimedwait(&set, NULL, &ts));
	return NULL;
}

static void *t_semop(void *a) {
	(void)a;
	struct sembuf op = {0, -1, 0}; /* the semaphore is 0: wait for a post that never comes */
	hello("semop");
	for (;;) check("semop", semop(semid, &op, 1));
	return NULL;
}

static void *t_uring(void *a) {
	(void)a;
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	long fd = syscall(__NR_io_uring_setup, 4, &p);
	if (fd < 0) {
		/* io_uring off (kernel.io_uring_disabled, a seccomp profile): say so, block
		 * elsewhere so that the thread count stays the same. */
		say("no io_uring %d\n", errno);
		hello("io_uring_enter");
		for (;;) pause();
	}
	hello("io_uring_enter");
	for (;;) check("io_uring_enter", syscall(__NR_io_uring_enter, fd, 0, 1, IORING_ENTER_GETEVENTS, NULL, 0));
	return NULL;
}

static void *t_sleep(void *a) {
	(void)a;
	hello("nanosleep");
	for (;;) {
		struct timespec ts = {0, 20000000};
		check("nanosleep", nanosleep(&ts, NULL));
	}
	return NULL;
}

int main(void) {
	setvbuf(stdout, NULL, _IONBF, 0);
	semid = semget(IPC_PRIVATE, 1, 0600);
	if (semid < 0) return 4;
	say("sem %d\n", semid);
	void *(*fns[])(void *) = {t_recv, t_read, t_accept, t_epoll, t_sigtimedwait, t_semop, t_uring, t_sleep};
	int n = sizeof fns / sizeof fns[0];
	for (int i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, fns[i], NULL)) return 5;
	}
	while (started < n) usleep(1000);
	say("ready %d\n", getpid());
	for (;;) {
		struct timespec ts = {1, 0};
		check("main nanosleep", nanosleep(&ts, NULL));
	}
}
