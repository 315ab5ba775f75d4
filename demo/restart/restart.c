/*
 * restart: threads blocked in interruptible syscalls, for crashtui's simulated checkpoint
 * (issue 5, seed 002, kernel.md §B).
 *
 *   restart        one thread per case below, plus the main thread reading commands on stdin
 *   restart sem    one thread in glibc's sem_wait (a futex wait): a restorer that leaks
 *                  ERESTARTSYS makes glibc abort with "The futex facility returned an
 *                  unexpected error code." -- the exact message of seed 002
 *
 * Every syscall is made with syscall(2), so the number in /proc/PID/task/TID/syscall is the one
 * printed, and a leaked kernel-internal code (512 ERESTARTSYS, 514 ERESTARTNOHAND, 516
 * ERESTART_RESTARTBLOCK) shows up as errno unchanged.
 *
 * Protocol (stdout, one line per write, so threads never interleave):
 *   pid=P threads=N                      first line
 *   ready name=NAME tid=T nr=NR          N lines, printed just before the blocking call
 *   result name=NAME tid=T ret=R errno=E ok=0|1
 *   verdict ok | verdict bad=K           last line; exit status 0 for ok, 1 for bad
 * stdin: "go" (or EOF) wakes every thread the normal way:
 *   read, poll, ppoll   a byte is written to its pipe
 *   futex, futex-timed  the word is set and FUTEX_WAKE
 *   *-sa  (SIGUSR1, handler with SA_RESTART) and *-nosa (SIGUSR2, handler without): the signal
 *         is sent with pthread_kill; both handlers write a byte to the thread's pipe, so the
 *         thread ends whether the kernel restarts the call or returns EINTR
 *   nanosleep           SIGUSR1: a sleep ends with EINTR when a handler runs, SA_RESTART or not
 * A result is ok when the call succeeded or failed with EINTR, EAGAIN or ETIMEDOUT: what user
 * code expects. Anything else (512..516 above all) is a restore bug.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_poll
#define NO_SYS_POLL 1 /* arm64 has only ppoll */
#endif

enum kind { K_READ, K_FUTEX, K_FUTEX_TIMED, K_NANOSLEEP, K_PPOLL, K_POLL, K_SEM };

struct tcase {
    const char *name;
    enum kind kind;
    int wake_sig; /* 0: woken by a byte / FUTEX_WAKE; SIGUSR1 or SIGUSR2: by that signal */
    int pipe[2];
    int futex_word;
    pthread_t thread;
    int tid;
    long ret;
    int err;
    int done;
};

static struct tcase cases_all[] = {
    {.name = "read", .kind = K_READ, .wake_sig = 0},
    {.name = "read-sa", .kind = K_READ, .wake_sig = SIGUSR1},
    {.name = "read-nosa", .kind = K_READ, .wake_sig = SIGUSR2},
    {.name = "futex", .kind = K_FUTEX, .wake_sig = 0},
    {.name = "futex-timed", .kind = K_FUTEX_TIMED, .wake_sig = 0},
    {.name = "nanosleep", .kind = K_NANOSLEEP, .wake_sig = SIGUSR1},
    {.name = "ppoll", .kind = K_PPOLL, .wake_sig = 0},
    {.name = "ppoll-sa", .kind = K_PPOLL, .wake_sig = SIGUSR1},
    {.name = "poll", .kind = K_POLL, .wake_sig = 0},
};
static struct tcase cases_sem[] = {
    {.name = "sem_wait", .kind = K_SEM, .wake_sig = 0},
};
static struct tcase *cases;
static int ncases;
static sem_t sem;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ndone, nready;
static int quitp[2];

static __thread int sig_wfd = -1;

static void say(const char *fmt, ...) {
    char b[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof b - 1) n = sizeof b - 1;
    ssize_t off = 0;
    while (off < n) {
        ssize_t w = write(1, b + off, n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += w;
    }
}

/* Both handlers write a byte to the interrupted thread's pipe (async-signal-safe). */
static void on_sig(int s) {
    (void)s;
    int e = errno;
    if (sig_wfd >= 0) {
        char c = 's';
        (void)!write(sig_wfd, &c, 1);
    }
    errno = e;
}

static int normal(long ret, int err) {
    return ret >= 0 || err == EINTR || err == EAGAIN || err == ETIMEDOUT;
}

static long blocking_call(struct tcase *c) {
    struct timespec long_ts = {60, 0};
    struct pollfd pfd = {c->pipe[0], POLLIN, 0};
    char buf[1];
    switch (c->kind) {
    case K_READ:
        return syscall(SYS_read, c->pipe[0], buf, 1);
    case K_FUTEX: /* no timeout: the kernel returns ERESTARTSYS when interrupted */
        return syscall(SYS_futex, &c->futex_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    case K_FUTEX_TIMED: /* a timeout makes it a restart block: ERESTART_RESTARTBLOCK */
        return syscall(SYS_futex, &c->futex_word, FUTEX_WAIT_PRIVATE, 0, &long_ts, NULL, 0);
    case K_NANOSLEEP:
        return syscall(SYS_nanosleep, &long_ts, NULL);
    case K_PPOLL: /* poll_select_finish leaves ERESTARTNOHAND as it is */
        return syscall(SYS_ppoll, &pfd, 1, NULL, NULL, 8);
    case K_POLL:
#ifdef NO_SYS_POLL
        return syscall(SYS_ppoll, &pfd, 1, NULL, NULL, 8);
#else
        /* poll(2) always sets up a restart block (fs/select.c), even without a timeout:
         * ERESTART_RESTARTBLOCK */
        return syscall(SYS_poll, &pfd, 1, -1);
#endif
    case K_SEM:
        return sem_wait(&sem);
    }
    errno = EINVAL;
    return -1;
}

static int call_nr(enum kind k) {
    switch (k) {
    case K_READ: return SYS_read;
    case K_FUTEX: case K_FUTEX_TIMED: case K_SEM: return SYS_futex;
    case K_NANOSLEEP: return SYS_nanosleep;
    case K_PPOLL: return SYS_ppoll;
#ifdef NO_SYS_POLL
    case K_POLL: return SYS_ppoll;
#else
    case K_POLL: return SYS_poll;
#endif
    }
    return -1;
}

static void *worker(void *arg) {
    struct tcase *c = arg;
    c->tid = (int)syscall(SYS_gettid);
    sig_wfd = c->pipe[1];
    say("ready name=%s tid=%d nr=%d\n", c->name, c->tid, call_nr(c->kind));
    pthread_mutex_lock(&mu);
    nready++;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    errno = 0;
    long r = blocking_call(c);
    int e = r < 0 ? errno : 0;
    say("result name=%s tid=%d ret=%ld errno=%d ok=%d\n", c->name, c->tid, r, e, normal(r, e));
    pthread_mutex_lock(&mu);
    c->ret = r;
    c->err = e;
    c->done = 1;
    ndone++;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    /* Stay alive until main is done sending signals, so pthread_kill never sees a dead thread. */
    char b;
    for (;;) {
        ssize_t n = read(quitp[0], &b, 1);
        if (n == 0 || (n < 0 && errno == EBADF)) break;
    }
    return NULL;
}

static void wake(struct tcase *c) {
    char b = 'g';
    if (c->wake_sig) {
        pthread_kill(c->thread, c->wake_sig);
        return;
    }
    switch (c->kind) {
    case K_FUTEX:
    case K_FUTEX_TIMED:
        __atomic_store_n(&c->futex_word, 1, __ATOMIC_SEQ_CST);
        syscall(SYS_futex, &c->futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        break;
    case K_SEM:
        sem_post(&sem);
        break;
    default:
        (void)!write(c->pipe[1], &b, 1);
    }
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "sem") == 0) {
        cases = cases_sem;
        ncases = 1;
    } else if (argc > 1) {
        fprintf(stderr, "usage: restart [sem]\n");
        return 2;
    } else {
        cases = cases_all;
        ncases = sizeof cases_all / sizeof cases_all[0];
    }
    sem_init(&sem, 0, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sig;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_flags = 0;
    sigaction(SIGUSR2, &sa, NULL);
    if (pipe(quitp) < 0) {
        perror("pipe");
        return 2;
    }

    say("pid=%d threads=%d\n", getpid(), ncases + 1);
    for (int i = 0; i < ncases; i++) {
        if (pipe(cases[i].pipe) < 0) {
            perror("pipe");
            return 2;
        }
        if (pthread_create(&cases[i].thread, NULL, worker, &cases[i]) != 0) {
            perror("pthread_create");
            return 2;
        }
    }

    pthread_mutex_lock(&mu);
    while (nready < ncases) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);

    /* The main thread is a case too: it waits for "go" in read(0). */
    int bad = 0;
    say("ready name=main tid=%d nr=%d\n", getpid(), SYS_read);
    char line[64];
    size_t have = 0;
    for (;;) {
        long n = syscall(SYS_read, 0, line + have, sizeof line - 1 - have);
        if (n < 0) {
            int e = errno;
            if (!normal(n, e)) {
                say("result name=main tid=%d ret=%ld errno=%d ok=0\n", getpid(), n, e);
                bad++;
            }
            continue;
        }
        if (n == 0) break;
        have += n;
        line[have] = 0;
        if (strchr(line, '\n') || have >= sizeof line - 1) break;
    }

    for (int i = 0; i < ncases; i++) wake(&cases[i]);
    pthread_mutex_lock(&mu);
    while (ndone < ncases) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    close(quitp[1]);
    for (int i = 0; i < ncases; i++) {
        pthread_join(cases[i].thread, NULL);
        if (!normal(cases[i].ret, cases[i].err)) bad++;
    }
    if (bad) {
        say("verdict bad=%d\n", bad);
        return 1;
    }
    say("verdict ok\n");
    return 0;
}
