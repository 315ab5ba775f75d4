/*
 * job: a small multi-process, multi-threaded job for tracer tests and the demo.
 *
 *   job N        the leader forks N-1 workers; every third process also runs two threads.
 *                Everyone prints "ready PID" on stdout once running.
 *   SIGUSR2 to the leader: it forks 10 more workers, and every existing worker starts one
 *                more thread (the leader forwards SIGUSR2 to its process group).
 *   SIGUSR1 to any process: it writes "usr1 PID COUNT" to stdout (handler count).
 *   SIGTERM: exit 0.
 * Workers spin lightly (nanosleep 5 ms) and count loop iterations, so a stopped process
 * is visible as a stalled counter in /proc/PID/stat utime... tests read "tick" files instead.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t usr1, usr2, term;
static int leader;

static void on_usr1(int s) { (void)s; usr1++; char b[64]; int n = snprintf(b, sizeof b, "usr1 %d %d\n", getpid(), (int)usr1); write(1, b, n); }
static void on_usr2(int s) { (void)s; usr2++; }
static void on_term(int s) { (void)s; term = 1; }

static void *spin(void *arg) {
    (void)arg;
    struct timespec ts = {0, 5 * 1000 * 1000};
    for (;;) nanosleep(&ts, NULL);
    return NULL;
}

static void start_thread(void) {
    pthread_t t;
    pthread_create(&t, NULL, spin, NULL);
}

static void worker(int index) {
    if (index % 3 == 0) { start_thread(); start_thread(); }
    printf("ready %d\n", getpid());
    fflush(stdout);
    int seen = 0;
    struct timespec ts = {0, 5 * 1000 * 1000};
    while (!term) {
        nanosleep(&ts, NULL);
        if (usr2 != seen) { seen = usr2; start_thread(); printf("thread %d\n", getpid()); fflush(stdout); }
    }
    exit(0);
}

static void spawn(int index) {
    pid_t p = fork();
    if (p == 0) { leader = 0; worker(index); }
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 4;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_flags = SA_RESTART;
    sa.sa_handler = on_usr1; sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = on_usr2; sigaction(SIGUSR2, &sa, NULL);
    sa.sa_handler = on_term; sigaction(SIGTERM, &sa, NULL);
    signal(SIGCHLD, SIG_IGN); /* workers are reaped by the kernel */
    leader = 1;
    for (int i = 1; i < n; i++) spawn(i);
    printf("ready %d\n", getpid());
    fflush(stdout);
    int seen = 0, next = n;
    struct timespec ts = {0, 5 * 1000 * 1000};
    while (!term) {
        nanosleep(&ts, NULL);
        if (usr2 != seen) {
            seen = usr2;
            for (int i = 0; i < 10; i++) spawn(next++);
            printf("forked %d\n", next);
            fflush(stdout);
        }
    }
    kill(0, SIGTERM);
    return 0;
}
