/*
 * forker: a job that forks a short-lived child every 2 ms, for the test that a --json reader
 * which does not read never stalls the tracer (every fork is a ptrace event crashtui must
 * answer before the parent runs on).
 *
 *   forker FILE   prints "ready PID", then forever: fork a child that exits at once, reap it,
 *                 and write the number of children so far to FILE (one line, rewritten).
 *   SIGUSR1: stop forking (after reaping the last child), print "quiet N" and sleep on.
 *   SIGTERM: exit.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t quiet;
static void on_usr1(int s) { (void)s; quiet = 1; }

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: forker FILE\n"); return 2; }
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { perror(argv[1]); return 1; }
    signal(SIGUSR1, on_usr1);
    printf("ready %d\n", getpid());
    fflush(stdout);
    struct timespec ts = {0, 2 * 1000 * 1000};
    unsigned long n;
    for (n = 1; !quiet; n++) {
        pid_t p = fork();
        if (p == 0) _exit(0);
        if (p > 0) waitpid(p, NULL, 0);
        char b[32];
        int l = snprintf(b, sizeof b, "%20lu\n", n); /* fixed width: a reader never sees a torn number */
        pwrite(fd, b, l, 0);
        nanosleep(&ts, NULL);
    }
    printf("quiet %lu\n", n - 1);
    fflush(stdout);
    for (;;) pause();
}
