/*
 * hiccup: a job of N processes for the attach/detach benchmark, P of which measure how long
 * they are kept from running.
 *   hiccup N P   forks N-1 processes (the leader is one of the N); the last P are probes,
 *                the others sleep in pause(). Each prints "ready PID" once running.
 * A probe sleeps 1 ms at a time and keeps the largest overshoot: a ptrace stop of the probe
 * (or anything else keeping it off a CPU) shows as an overshoot of that length. SIGUSR1 to
 * a probe makes it print "max PID MICROSECONDS" and start again from 0. SIGTERM ends all.
 * A probe runs SCHED_FIFO where it may (root): a ptrace stop keeps it from running, but the
 * tracer's own use of the CPUs does not, so what it reports is stops and the machine's noise.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t report;
static void on_usr1(int s) { (void)s; report = 1; }

static long long now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

int main(int argc, char **argv) {
    if (argc != 3)
        return 2;
    int n = atoi(argv[1]), probes = atoi(argv[2]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    int i = 0;
    for (i = 1; i < n; i++)
        if (fork() == 0)
            break;
    if (i == n)
        i = 0; /* the leader */
    signal(SIGUSR1, on_usr1);
    printf("ready %d\n", getpid());
    if (i < n - probes || i == 0) {
        for (;;)
            pause();
    }
    struct sched_param sp = {.sched_priority = 1};
    sched_setscheduler(0, SCHED_FIFO, &sp); /* where allowed; else CPU contention shows too */
    long long worst = 0, last = now_us();
    struct timespec ts = {0, 1000 * 1000};
    for (;;) {
        nanosleep(&ts, NULL);
        long long t = now_us(), over = t - last - 1000;
        if (over > worst)
            worst = over;
        last = t;
        if (report) {
            report = 0;
            printf("max %d %lld\n", getpid(), worst);
            worst = 0;
            last = now_us();
        }
    }
}
