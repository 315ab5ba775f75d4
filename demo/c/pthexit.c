/* pthexit: the main thread calls pthread_exit while a worker runs on, so the leader stays a
 * zombie (state Z) while the process lives. SIGUSR1 makes the worker print "usr1 N"; a byte
 * on stdin makes it exit the process with status 7. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t n;
static void on_usr1(int s) { (void)s; n++; char b[32]; int l = snprintf(b, sizeof b, "usr1 %d\n", (int)n); write(1, b, l); }

static void *worker(void *a) {
    (void)a;
    char c;
    while (read(0, &c, 1) < 0) {}
    exit(7);
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    write(1, "ready\n", 6);
    pthread_exit(NULL);
}
