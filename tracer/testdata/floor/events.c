/*
 * events: a workload of N ptrace events of one kind, for the hot-path benchmark.
 *   events signal N    N signals delivered to its own handler (one signal-delivery-stop each)
 *   events thread N    N threads created and joined (a clone event and an exit stop each)
 *   events fork N      N fork + exec of /bin/true, each waited for
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t got;
static void handler(int sig) { (void)sig; got++; }
static void *nothing(void *arg) { return arg; }

int main(int argc, char **argv) {
    if (argc != 3)
        return 2;
    long n = atol(argv[2]);
    if (strcmp(argv[1], "signal") == 0) {
        signal(SIGUSR1, handler);
        for (long i = 0; i < n; i++)
            raise(SIGUSR1);
        return got == n ? 0 : 1;
    }
    if (strcmp(argv[1], "thread") == 0) {
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
