/*
 * events: a workload of N ptrace events of one kind, for the hot-path benchmark.
 *   events signal N    N signals delivered to its own handler (one signal-delivery-stop each)
 *   events thread N    N threads created and joined (a clone event and an exit stop each)
 *   events fork N      N fork + exec of /bin/true, each waited for
 * With a third argument FILE, the workload's own wall time (CLOCK_MONOTONIC, nanoseconds,
 * from before the first event to after the last) is written to FILE: the time the job itself
 * sees, whatever the tracer's own start and end cost. Beside it, the CPU time the job spent
 * over the same span (its own and its reaped children's, user and system, nanoseconds): what
 * of the wall time was the job running, not waiting for its tracer.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got;
static void handler(int sig) { (void)sig; got++; }
static void *nothing(void *arg) { return arg; }

static long now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* cpu is the CPU time of this process and of its children reaped so far, in nanoseconds. */
static long cpu(void) {
    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    long us = (self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec + kids.ru_stime.tv_sec) * 1000000L +
              self.ru_utime.tv_usec + self.ru_stime.tv_usec + kids.ru_utime.tv_usec + kids.ru_stime.tv_usec;
    return us * 1000L;
}

static int work(const char *kind, long n) {
    if (strcmp(kind, "signal") == 0) {
        signal(SIGUSR1, handler);
        for (long i = 0; i < n; i++)
            raise(SIGUSR1);
        return got == n ? 0 : 1;
    }
    if (strcmp(kind, "thread") == 0) {
        for (long i = 0; i < n; i++) {
            pthread_t t;
            pthread_create(&t, NULL, nothing, NULL);
            pthread_join(t, NULL);
        }
        return 0;
    }
    for (long i = 0; i < n; i++) {
        pid_t p = fork();
        if (p == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        int st;
        waitpid(p, &st, 0);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4)
        return 2;
    long start = now(), cpu0 = cpu();
    int rc = work(argv[1], atol(argv[2]));
    long took = now() - start, used = cpu() - cpu0;
    if (argc == 4) {
        FILE *f = fopen(argv[3], "w");
        if (!f || fprintf(f, "%ld %ld\n", took, used) < 0 || fclose(f) != 0)
            return 3;
    }
    return rc;
}
