/* usr1: prints "ready", then "usr1 N" from its SIGUSR1 handler each time one arrives. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t n;
static void on_usr1(int s) { (void)s; n++; char b[32]; int l = snprintf(b, sizeof b, "usr1 %d\n", (int)n); write(1, b, l); }

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    write(1, "ready\n", 6);
    for (;;) pause();
}
