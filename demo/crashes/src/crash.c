/* crash: the crash-pattern suite of issue 3 (Spindle's CRASH_TESTS, kernel.md §C), one mode per
 * pattern, run by crashtui's tests as N ranks (`crashtui run --json -n 6 -- crash MODE`).
 * CRASHTUI_RANK picks the rank's behaviour where ranks differ. Every crash happens in a named,
 * noinline function so keys, stacks and gdb's top frame can be checked by name. */
#define _GNU_SOURCE
#include <assert.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int crash_in_lib(int *p);   /* libcrashfuncs.so */
int crash_in_fixed(int *p); /* libcrashfixed.so, linked at a fixed address */

static int rank;
static volatile int sink;

#define NOINLINE __attribute__((noinline))

NOINLINE int crash_same(int *p) { return *p + 1; }
NOINLINE int crash_0(int *p) { return *p + 10; }
NOINLINE int crash_1(int *p) { return *p + 11; }
NOINLINE int crash_2(int *p) { return *p + 12; }
NOINLINE int crash_3(int *p) { return *p + 13; }
NOINLINE int crash_4(int *p) { return *p + 14; }
NOINLINE int crash_5(int *p) { return *p + 15; }
NOINLINE int crash_6(int *p) { return *p + 16; }
NOINLINE int crash_7(int *p) { return *p + 17; }
static int (*const crashers[8])(int *) = {crash_0, crash_1, crash_2, crash_3,
                                          crash_4, crash_5, crash_6, crash_7};

/* One faulting pc reached along two call paths: one site, two stacks (--group-by stack). */
NOINLINE int crash_common(int *p) { return *p + 2; }
NOINLINE int caller_a(int *p) { return crash_common(p) + 1; }
NOINLINE int caller_b(int *p) { return crash_common(p) + 2; }

NOINLINE void do_assert(void) { assert(rank < 0 && "rank must be negative"); }
NOINLINE void do_abort(void) { abort(); }

static void *thread_main(void *arg) {
	sink = crash_same((int *)arg);
	return NULL;
}

/* ---- safepoints (Java/Julia): a PROT_NONE page that a handler makes readable ---- */
static char *safepoint;
static long pagesz;
static int handled_faults;

static void safepoint_handler(int sig, siginfo_t *si, void *uc) {
	(void)uc;
	char *a = si->si_addr;
	if (a >= safepoint && a < safepoint + pagesz) {
		mprotect(safepoint, pagesz, PROT_READ | PROT_WRITE);
		handled_faults++;
		return;
	}
	/* Not ours: restore the default action and return, so the fault comes back and kills. */
	signal(sig, SIG_DFL);
}

NOINLINE int poll_safepoint(void) { return *(volatile int *)safepoint; }

/* safepoint-bad-write: the handler makes the page readable only, which does not repair a
 * write; the fault comes back, and the second time the handler gives up (default action). */
static int bad_write_tries;

static void bad_write_handler(int sig, siginfo_t *si, void *uc) {
	(void)uc;
	char *a = si->si_addr;
	if (a >= safepoint && a < safepoint + pagesz && bad_write_tries++ == 0) {
		mprotect(safepoint, pagesz, PROT_READ);
		return;
	}
	signal(sig, SIG_DFL);
}

NOINLINE void poke_safepoint(void) { *(volatile int *)safepoint = 1; }

/* safepoint-longjmp: the handler leaves through siglongjmp, never reaching rt_sigreturn. */
static sigjmp_buf safepoint_env;

static void longjmp_handler(int sig, siginfo_t *si, void *uc) {
	(void)sig;
	(void)uc;
	if ((char *)si->si_addr >= safepoint && (char *)si->si_addr < safepoint + pagesz) {
		handled_faults++;
		siglongjmp(safepoint_env, 1);
	}
	signal(sig, SIG_DFL);
}

static void install(int sig, void (*fn)(int, siginfo_t *, void *)) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

/* ---- SIGBUS past the end of a mapped file ---- */
static int bus_fd = -1;
static int bus_fix;

static void sigbus_handler(int sig, siginfo_t *si, void *uc) {
	(void)si;
	(void)uc;
	if (bus_fix) {
		if (ftruncate(bus_fd, 2 * pagesz) == 0)
			return;
	}
	/* Cannot repair it: re-raise with the default action (the crash belongs to the read). */
	signal(sig, SIG_DFL);
	raise(sig);
}

NOINLINE int read_page2(volatile char *m) { return m[pagesz]; }

static int sigbus(int fix) {
	char path[] = "/tmp/crashtui-sigbus-XXXXXX";
	bus_fd = mkstemp(path);
	if (bus_fd < 0) {
		perror("mkstemp");
		return 2;
	}
	unlink(path);
	if (ftruncate(bus_fd, pagesz) != 0) {
		perror("ftruncate");
		return 2;
	}
	char *m = mmap(NULL, 2 * pagesz, PROT_READ | PROT_WRITE, MAP_SHARED, bus_fd, 0);
	if (m == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	bus_fix = fix;
	install(SIGBUS, sigbus_handler);
	sink = read_page2(m);
	fprintf(stderr, "sigbus repaired rank=%d\n", rank);
	return 0;
}

/* wait_for polls for a file to exist, so ranks crash together (the crash storm). */
static void wait_for(const char *path) {
	struct timespec ts = {0, 1000000};
	while (access(path, F_OK) != 0)
		nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
	const char *r = getenv("CRASHTUI_RANK");
	rank = r ? atoi(r) : 0;
	pagesz = sysconf(_SC_PAGESIZE);
	const char *mode = argc > 1 ? argv[1] : "same";
	int *null = NULL;

	if (!strcmp(mode, "same"))
		return crash_same(null);
	if (!strcmp(mode, "different"))
		return crashers[rank % 8](null);
	if (!strcmp(mode, "two"))
		return rank % 2 ? crash_1(null) : crash_0(null);
	if (!strcmp(mode, "abort-segv")) {
		if (rank % 2 == 0)
			do_assert();
		return crash_same(null);
	}
	if (!strcmp(mode, "abort")) /* abort() without a message: keyed by its caller */
		do_abort();
	if (!strcmp(mode, "stack"))
		return rank % 2 ? caller_b(null) : caller_a(null);
	if (!strcmp(mode, "lib"))
		return crash_in_lib(null);
	if (!strcmp(mode, "fixed-lib"))
		return crash_in_fixed(null);
	if (!strcmp(mode, "dlmopen")) {
		if (argc < 3) {
			fprintf(stderr, "dlmopen needs the library path\n");
			return 2;
		}
		void *h = dlmopen(LM_ID_NEWLM, argv[2], RTLD_NOW);
		if (!h) {
			fprintf(stderr, "dlmopen: %s\n", dlerror());
			return 2;
		}
		int (*fn)(int *) = (int (*)(int *))dlsym(h, "crash_in_dl");
		if (!fn) {
			fprintf(stderr, "dlsym: %s\n", dlerror());
			return 2;
		}
		return fn(null);
	}
	if (!strcmp(mode, "thread")) {
		pthread_t th;
		pthread_create(&th, NULL, thread_main, null);
		pthread_join(th, NULL);
		return 0;
	}
	if (!strcmp(mode, "safepoint") || !strcmp(mode, "safepoint-crash")) {
		safepoint = mmap(NULL, pagesz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (safepoint == MAP_FAILED) {
			perror("mmap");
			return 2;
		}
		install(SIGSEGV, safepoint_handler);
		sink = poll_safepoint();
		sink = poll_safepoint(); /* repaired: no second fault */
		fprintf(stderr, "safepoint rank=%d handled=%d\n", rank, handled_faults);
		if (!strcmp(mode, "safepoint-crash"))
			return crash_same(null);
		return 0;
	}
	/* safepoint-spin: repaired, then computes without a syscall until killed: only the
	 * passing of time (and the thread's CPU time) can tell the tracer the fault was handled. */
	if (!strcmp(mode, "safepoint-spin")) {
		safepoint = mmap(NULL, pagesz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (safepoint == MAP_FAILED) {
			perror("mmap");
			return 2;
		}
		install(SIGSEGV, safepoint_handler);
		sink = poll_safepoint();
		for (;;)
			sink++;
	}
	if (!strcmp(mode, "safepoint-bad-write")) {
		safepoint = mmap(NULL, pagesz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (safepoint == MAP_FAILED) {
			perror("mmap");
			return 2;
		}
		install(SIGSEGV, bad_write_handler);
		poke_safepoint();
		return 0;
	}
	if (!strcmp(mode, "safepoint-longjmp")) {
		safepoint = mmap(NULL, pagesz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (safepoint == MAP_FAILED) {
			perror("mmap");
			return 2;
		}
		install(SIGSEGV, longjmp_handler);
		if (sigsetjmp(safepoint_env, 1) == 0)
			sink = poll_safepoint();
		fprintf(stderr, "safepoint-longjmp rank=%d handled=%d\n", rank, handled_faults);
		return handled_faults == 1 ? 0 : 3;
	}
	if (!strcmp(mode, "sigbus-fixed"))
		return sigbus(1);
	if (!strcmp(mode, "sigbus-bad"))
		return sigbus(0);
	if (!strcmp(mode, "kill")) { /* wait to be killed from outside */
		fprintf(stderr, "ready pid=%d rank=%d\n", getpid(), rank);
		for (;;)
			pause();
	}
	if (!strcmp(mode, "storm")) { /* wait for the go file, then crash at one of 4 sites */
		if (argc < 3) {
			fprintf(stderr, "storm needs the go file\n");
			return 2;
		}
		wait_for(argv[2]);
		return crashers[rank % 4](null);
	}
	if (!strcmp(mode, "exit"))
		return 0;
	fprintf(stderr, "unknown mode %s\n", mode);
	return 2;
}
