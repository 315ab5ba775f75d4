/* threxec MODE PROG [ARGS...]: prints "ready", waits for a byte on stdin, then execs PROG.
 * MODE "thread": a second thread execs while the main thread waits in pause(), so the exec
 * comes from a thread that is not the process's leader (fs/exec.c de_thread gives it the
 * leader's tid and ends the main thread). MODE "main": the only thread execs. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char **prog;

static void *execer(void *a) {
    (void)a;
    char c;
    while (read(0, &c, 1) < 0) {}
    execv(prog[0], prog);
    perror("execv");
    _exit(127);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: threxec thread|main PROG [ARGS...]\n");
        return 2;
    }
    prog = argv + 2;
    if (strcmp(argv[1], "thread") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, execer, NULL);
        write(1, "ready\n", 6);
        for (;;)
            pause();
    }
    write(1, "ready\n", 6);
    execer(NULL);
    return 0;
}
