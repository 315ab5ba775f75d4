/* seccompworker: a process whose worker thread alone has a seccomp filter (or syscall user
 * dispatch) on the calls crashtui injects to measure the access matrix, while its main thread
 * sits in epoll_wait (which crashtui never interrupts: an interrupt would end it with EINTR),
 * so a measurement would run in the worker. Filters are per thread (kernel.md D.1): the main
 * thread's /proc/PID/status says nothing of the worker's.
 *
 *   seccompworker MODE
 *     kill_process  kcmp and process_vm_readv kill the whole process (SECCOMP_RET_KILL_PROCESS)
 *     kill_thread   ... kill the worker (SECCOMP_RET_KILL_THREAD)
 *     trap          ... raise SIGSYS in the worker (SECCOMP_RET_TRAP; no handler: it kills)
 *     user_notif    ... are handed to a supervisor thread (SECCOMP_RET_USER_NOTIF), which
 *                   prints "bad notified NR" for each and answers EPERM
 *     errno         ... fail with EPERM (SECCOMP_RET_ERRNO)
 *     ip            kcmp kills the process when made from the vDSO's addresses (where
 *                   crashtui's guard goes), and only then: an evaluation without the real
 *                   instruction pointer would let it through
 *     sud           syscall user dispatch on in the worker, every syscall outside libc's text
 *                   blocked (SIGSYS)
 *     sigaction     the worker catches SIGUSR1 (counting) and rt_sigaction kills the process:
 *                   a checkpoint that read a handler with an injected rt_sigaction would kill it
 * Output: "ready PID" once the worker's filter is in place, "worker TID"; "bad WHAT" when
 * something crashtui must never do happened (the worker's own nanosleep keeps checking).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH 59
#define PR_SYS_DISPATCH_ON 1
#define SYSCALL_DISPATCH_FILTER_BLOCK 1
#endif

#if defined(__x86_64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_AARCH64
#elif defined(__powerpc64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_PPC64LE
#endif

static const char *mode;
static volatile int ready;
static int notify_fd = -1;
static volatile char selector = 0;

static void say(const char *fmt, ...) {
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (write(1, buf, (size_t)n) < 0) _exit(3);
}

/* install puts the filter of mode on the calling thread alone (no TSYNC). */
static int install(void) {
	unsigned action;
	if (!strcmp(mode, "kill_process") || !strcmp(mode, "ip")) action = SECCOMP_RET_KILL_PROCESS;
	else if (!strcmp(mode, "kill_thread")) action = SECCOMP_RET_KILL_THREAD;
	else if (!strcmp(mode, "trap")) action = SECCOMP_RET_TRAP;
	else if (!strcmp(mode, "user_notif")) action = SECCOMP_RET_USER_NOTIF;
	else action = SECCOMP_RET_ERRNO | EPERM;
	unsigned nr1 = SYS_kcmp, nr2 = SYS_process_vm_readv;
	if (!strcmp(mode, "sigaction")) action = SECCOMP_RET_KILL_PROCESS, nr1 = nr2 = SYS_rt_sigaction;
	unsigned long vdso = getauxval(AT_SYSINFO_EHDR);
	struct sock_filter ip[] = {
		/* ip mode: only a kcmp made from [vdso, vdso + 64 KiB) is killed. */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_kcmp, 0, 5),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer) + 4),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)(vdso >> 32), 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer)),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (unsigned)vdso + 0x10000, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (unsigned)vdso, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	};
	struct sock_filter calls[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_HERE, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr1, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr2, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, action),
	};
	struct sock_fprog prog = {sizeof calls / sizeof calls[0], calls};
	if (!strcmp(mode, "ip")) prog = (struct sock_fprog){sizeof ip / sizeof ip[0], ip};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) return -1;
	unsigned flags = !strcmp(mode, "user_notif") ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0;
	long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
	if (r < 0) return -1;
	if (flags) notify_fd = (int)r;
	return 0;
}

/* dispatch turns syscall user dispatch on for the calling thread: every syscall made outside
 * libc's executable mapping raises SIGSYS (selector BLOCK). */
static int dispatch(void) {
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f) return -1;
	char line[512];
	unsigned long lo = 0, hi = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long a, b;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &a, &b, perms) == 3 && perms[2] == 'x' && strstr(line, "/libc.so")) {
			lo = a, hi = b;
			break;
		}
	}
	fclose(f);
	if (!lo) return -1;
	selector = SYSCALL_DISPATCH_FILTER_BLOCK;
	return prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, lo, hi - lo, &selector);
}

static void *supervisor(void *a) {
	(void)a;
	while (notify_fd < 0) usleep(1000);
	/* It waits in epoll_wait, which an interrupt would end with EINTR, so crashtui measures
	 * in the worker (whose filter notifies us) and never in this thread. */
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN};
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, notify_fd, &ev) < 0) {
		say("bad supervisor epoll %d\n", errno);
		_exit(2);
	}
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	for (;;) {
		if (epoll_wait(ep, &ev, 1, -1) < 0) {
			if (errno == EINTR) say("bad eintr supervisor epoll_wait\n");
			continue;
		}
		memset(&req, 0, sizeof req);
		if (ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) continue;
		say("bad notified %d\n", req.data.nr);
		memset(&resp, 0, sizeof resp);
		resp.id = req.id;
		resp.error = -EPERM;
		ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
	return NULL;
}

static volatile long usr1;
static void onusr1(int sig) {
	(void)sig;
	usr1++;
}

static void *worker(void *a) {
	(void)a;
	if (!strcmp(mode, "sigaction")) {
		struct sigaction sa = {.sa_handler = onusr1, .sa_flags = SA_RESTART};
		sigaction(SIGUSR1, &sa, NULL);
	}
	int r = !strcmp(mode, "sud") ? dispatch() : install();
	if (r < 0) {
		say("bad install %d\n", errno);
		_exit(2);
	}
	say("worker %ld\n", (long)syscall(SYS_gettid));
	ready = 1;
	for (;;) {
		struct timespec ts = {0, 1000000};
		int e = nanosleep(&ts, NULL);
		if (e != 0 && errno != EINTR) say("bad nanosleep %d\n", errno);
	}
	return NULL;
}

int main(int argc, char **argv) {
	mode = argc > 1 ? argv[1] : "kill_process";
	setvbuf(stdout, NULL, _IONBF, 0);
	pthread_t t;
	if (!strcmp(mode, "user_notif") && pthread_create(&t, NULL, supervisor, NULL)) return 5;
	if (pthread_create(&t, NULL, worker, NULL)) return 5;
	while (!ready) usleep(1000);
	say("ready %d\n", getpid());
	int ep = epoll_create1(0);
	struct epoll_event ev;
	for (;;) {
		int n = epoll_wait(ep, &ev, 1, -1);
		if (n < 0 && errno == EINTR) say("bad eintr epoll_wait\n");
	}
}
