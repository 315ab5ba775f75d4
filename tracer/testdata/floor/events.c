/*
 * events: a workload of N ptrace events of one kind, for the hot-path benchmark.
 *   events signal N    N signals delivered to its own handler (one signal-delivery-stop each)
 *   events thread N    N threads created and joined (a clone event and an exit stop each)
 *   events fork N      N fork + exec of /bin/true, each waited for
 * With a third argument FILE, the workload's own wall time (CLOCK_MONOTONIC, nanoseconds,
 * from before the first event to after the last) is written to FILE: the time the job itself
 * sees, whatever the tracer's own start and end cost.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
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
    long start = now();
    int rc = work(argv[1], atol(argv[2]));
    long took = now() - start;
    if (argc == 4) {
        FILE *f = fopen(argv[3], "w");
        if (!f || fprintf(f, "%ld\n", took) < 0 || fclose(f) != 0)
            return 3;
    }
    return rc;
}
