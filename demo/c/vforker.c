/* vforker: waits for a byte on stdin, then vforks a child that sleeps 4 s before _exit; the
 * parent, stuck in vfork until then, afterwards prints "beat N" every 100 ms. A vfork parent
 * cannot be stopped by PTRACE_INTERRUPT until its child execs or exits. */
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    char c;
    read(0, &c, 1);
    pid_t p = vfork();
    if (p == 0) {
        struct timespec ts = {4, 0};
        nanosleep(&ts, NULL);
        _exit(0);
    }
    waitpid(p, NULL, 0);
    for (int i = 0;; i++) {
        printf("beat %d\n", i);
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
}
