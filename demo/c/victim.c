/*
 * victim: a job that notices any harm done to it, for crashtui's "never harm the job" tests.
 *
 *   victim N     N processes in the caller's process group (this one and N-1 children)
 *
 * Every process has a SIGTRAP handler and an SA_RESTART SIGUSR1 handler, and four threads
 * whose every syscall result and register is checked:
 *   sleeper   nanosleep(1 ms) in a loop: must return 0 or EINTR
 *   poller    poll on its own empty pipe with a 1 ms timeout: 0, or EINTR
 *   reader    read on its own pipe, woken by the main thread each 20 ms: exactly one byte 'x'
 *   spinner   two copies of a pseudo-random sequence in registers, 100k steps then a 2 ms
 *             sleep (so twenty victims leave the machine usable): must stay equal
 *   signaller raises SIGTRAP at itself (its handler must have run when raise returns) and
 *             queues SIGRTMIN at the process (each must be delivered: real-time signals are
 *             not merged, so a count that falls short is a signal lost), every 2 ms
 *   main      writes to reader's pipe; on SIGUSR2 raises SIGTRAP (its handler must run: a
 *             handler reset to SIG_DFL kills the process), checks that every SIGRTMIN queued
 *             so far arrived, and reports
 * Output (stdout, one write per line):
 *   ready PID                        once per process
 *   bad PID WHAT VALUE               at once, when a check fails
 *   report PID traps=T bad=B loops=L after each SIGUSR2
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t traps, usr1, report;
static volatile long bad, loops;

static void say(const char *fmt, ...) {
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (write(1, buf, (size_t)n) < 0) _exit(3);
}

static void fail(const char *what, long v) {
    __atomic_add_fetch(&bad, 1, __ATOMIC_SEQ_CST);
    say("bad %d %s %ld\n", getpid(), what, v);
}

static __thread volatile long mytraps; /* this thread's SIGTRAPs: raise's handler runs in it */
static volatile long rt_sent, rt_got;

static void on_trap(int s) { (void)s; traps++; mytraps++; }
static void on_rt(int s) { (void)s; __atomic_add_fetch(&rt_got, 1, __ATOMIC_SEQ_CST); }
static void on_usr1(int s) { (void)s; usr1++; }
static void on_usr2(int s) { (void)s; report = 1; }

static void *sleeper(void *a) {
    (void)a;
    for (;;) {
        struct timespec ts = {0, 1000000};
        int r = nanosleep(&ts, NULL);
        if (r != 0 && errno != EINTR) fail("nanosleep", errno);
        __atomic_add_fetch(&loops, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void *poller(void *a) {
    (void)a;
    int p[2];
    if (pipe(p) < 0) _exit(4);
    for (;;) {
        struct pollfd fd = {p[0], POLLIN, 0};
        int r = poll(&fd, 1, 1);
        if (r != 0 && !(r < 0 && errno == EINTR)) fail("poll", r < 0 ? -errno : r);
    }
    return NULL;
}

static int rpipe[2];

static void *reader(void *a) {
    (void)a;
    for (;;) {
        char c = 0;
        ssize_t r = read(rpipe[0], &c, 1);
        if (r < 0 && errno == EINTR) continue;
        if (r != 1 || c != 'x') fail("read", r < 0 ? -errno : (r == 1 ? c : r));
    }
    return NULL;
}

static void *spinner(void *a) {
    (void)a;
    unsigned long x = 1, y = 1;
    for (unsigned long i = 0;; i++) {
        x = x * 6364136223846793005UL + 1442695040888963407UL;
        __asm__ volatile("" : "+r"(x));
        y = y * 6364136223846793005UL + 1442695040888963407UL;
        __asm__ volatile("" : "+r"(y));
        if (x != y) {
            fail("spinner", (long)i);
            y = x;
        }
        if (i % 100000 == 0) {
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

static void *signaller(void *a) {
    (void)a;
    union sigval v = {0};
    for (;;) {
        long before = mytraps;
        raise(SIGTRAP);
        if (mytraps != before + 1) fail("raise-sigtrap", mytraps - before);
        /* counted before it is queued: a handler that runs first finds it counted */
        __atomic_add_fetch(&rt_sent, 1, __ATOMIC_SEQ_CST);
        if (sigqueue(getpid(), SIGRTMIN, v) != 0) __atomic_sub_fetch(&rt_sent, 1, __ATOMIC_SEQ_CST);
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void run(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_trap;
    sigaction(SIGTRAP, &sa, NULL);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = on_usr2;
    sigaction(SIGUSR2, &sa, NULL);
    sa.sa_handler = on_rt;
    sigaction(SIGRTMIN, &sa, NULL);
    if (pipe(rpipe) < 0) _exit(4);
    pthread_t t;
    void *(*fns[])(void *) = {sleeper, poller, reader, spinner, signaller};
    for (unsigned i = 0; i < sizeof fns / sizeof fns[0]; i++)
        if (pthread_create(&t, NULL, fns[i], NULL) != 0) _exit(5);
    say("ready %d\n", getpid());
    for (;;) {
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
        if (write(rpipe[1], "x", 1) != 1) fail("write", errno);
        if (report) {
            report = 0;
            long before = mytraps;
            raise(SIGTRAP);
            if (mytraps != before + 1) fail("sigtrap", mytraps - before);
            /* Every SIGRTMIN queued before now arrives within a second (one in flight may
             * still be on its way to a thread); a shortfall after that is a signal lost. */
            long sent = rt_sent;
            for (int i = 0; i < 1000 && rt_got < sent; i++) {
                struct timespec ms = {0, 1000000};
                nanosleep(&ms, NULL);
            }
            if (rt_got < sent) fail("sigrtmin-lost", sent - rt_got);
            say("report %d traps=%d bad=%ld loops=%ld\n", getpid(), (int)traps, bad, loops);
        }
    }
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1;
    setvbuf(stdout, NULL, _IONBF, 0);
    for (int i = 1; i < n; i++) {
        pid_t p = fork();
        if (p < 0) _exit(6);
        if (p == 0) run();
    }
    run();
    return 0;
}
