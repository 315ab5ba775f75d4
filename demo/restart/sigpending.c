/*
 * sigpending: threads blocked in glibc's own wrappers -- read, sem_wait (a futex wait),
 * nanosleep and poll -- the shape of CRIU's zdtm/static/sigpending, which caught the ppc64le
 * scv restore bug on POWER10 (seed 002). Unlike restart.c it makes no syscall(2) call: every
 * blocking call is entered the way glibc 2.36 enters it, so on ppc64le it is `scv 0` where
 * AT_HWCAP2 has PPC_FEATURE2_SCV (POWER9 and later) and `sc` elsewhere (POWER8). Built static
 * (`-static -O1 -pthread`) for the QEMU guests, which have no libc of their own.
 *
 *   sigpending [-s SECONDS] [futex] [nanosleep] [poll]
 *
 * The named threads are started (all three when none is named), each blocking in its call;
 * the main thread blocks in read(0): stdin is the control pipe. nanosleep sleeps SECONDS
 * (default 30).
 *
 * Protocol (stdout, one write(2) per line, so threads never interleave):
 *   ready name=NAME tid=T nr=NR a1=A    just before the blocking call: its syscall number and
 *                                       first argument, as /proc/PID/task/T/syscall shows them
 *   result name=NAME ret=R errno=E      as soon as the call returns (read adds byte=B)
 *   done                                after every thread has returned; exit status 0
 * When the main thread's read returns (a byte, EOF or an error), it releases the others the
 * normal way: sem_post, and a byte on the poll thread's pipe. A sleep is left to run out.
 * A kernel-internal code leaked by a restorer (512 ERESTARTSYS, 514 ERESTARTNOHAND, 516
 * ERESTART_RESTARTBLOCK) shows up as errno unchanged, except in sem_wait: glibc's futex
 * wrapper treats it as impossible and aborts with "The futex facility returned an unexpected
 * error code." (futex_fatal_error).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static sem_t sem;
static int pollp[2];
static struct pollfd pfd;
static long sleep_s = 30;

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

static int gettid_(void) { return (int)syscall(SYS_gettid); }

static void *futex_main(void *arg) {
    (void)arg;
    /* new_sem_wait_slow waits on the semaphore's value word, its first 4 bytes on a
     * little-endian 64-bit machine, with FUTEX_WAIT_BITSET and no timeout: ERESTARTSYS. */
    say("ready name=futex tid=%d nr=%d a1=%#lx\n", gettid_(), SYS_futex, (unsigned long)&sem);
    int r = sem_wait(&sem);
    say("result name=futex ret=%d errno=%d\n", r, r < 0 ? errno : 0);
    return NULL;
}

static void *nanosleep_main(void *arg) {
    (void)arg;
    struct timespec ts = {sleep_s, 0};
    /* glibc's nanosleep is clock_nanosleep(CLOCK_REALTIME, 0, ...): ERESTART_RESTARTBLOCK. */
    say("ready name=nanosleep tid=%d nr=%d a1=%#lx\n", gettid_(), SYS_clock_nanosleep, (unsigned long)CLOCK_REALTIME);
    int r = nanosleep(&ts, NULL);
    say("result name=nanosleep ret=%d errno=%d\n", r, r < 0 ? errno : 0);
    return NULL;
}

static void *poll_main(void *arg) {
    (void)arg;
    pfd.fd = pollp[0];
    pfd.events = POLLIN;
    /* glibc calls poll(2) where the kernel has it (ppc64le: fs/select.c always sets up a
     * restart block, ERESTART_RESTARTBLOCK) and ppoll(2) where it does not (arm64:
     * ERESTARTNOHAND). */
#ifdef SYS_poll
    int nr = SYS_poll;
#else
    int nr = SYS_ppoll;
#endif
    say("ready name=poll tid=%d nr=%d a1=%#lx\n", gettid_(), nr, (unsigned long)&pfd);
    int r = poll(&pfd, 1, -1);
    say("result name=poll ret=%d errno=%d\n", r, r < 0 ? errno : 0);
    return NULL;
}

int main(int argc, char **argv) {
    int want_futex = 0, want_sleep = 0, want_poll = 0, named = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-s") && i + 1 < argc) {
            sleep_s = atol(argv[++i]);
        } else if (!strcmp(argv[i], "futex")) {
            want_futex = named = 1;
        } else if (!strcmp(argv[i], "nanosleep")) {
            want_sleep = named = 1;
        } else if (!strcmp(argv[i], "poll")) {
            want_poll = named = 1;
        } else {
            fprintf(stderr, "usage: sigpending [-s SECONDS] [futex] [nanosleep] [poll]\n");
            return 2;
        }
    }
    if (!named) want_futex = want_sleep = want_poll = 1;
    if (sem_init(&sem, 0, 0) != 0 || pipe(pollp) != 0) {
        perror("sigpending: setup");
        return 2;
    }
    pthread_t th[3];
    int n = 0;
    if (want_futex && pthread_create(&th[n++], NULL, futex_main, NULL) != 0) return 2;
    if (want_sleep && pthread_create(&th[n++], NULL, nanosleep_main, NULL) != 0) return 2;
    if (want_poll && pthread_create(&th[n++], NULL, poll_main, NULL) != 0) return 2;

    char c = 0;
    say("ready name=read tid=%d nr=%d a1=%#lx\n", gettid_(), SYS_read, 0UL);
    ssize_t r = read(0, &c, 1);
    say("result name=read ret=%zd errno=%d byte=%d\n", r, r < 0 ? errno : 0, r == 1 ? c : -1);

    if (want_futex) sem_post(&sem);
    if (want_poll) (void)!write(pollp[1], "p", 1);
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    say("done\n");
    return 0;
}
