/*
 * storm: one rank of a crash storm, for the recorded session demo/sessions/crash-storm.jsonl.
 * By CRASHTUI_RANK % 4, after a short wait that staggers the ranks:
 *   0  NULL dereference in update_halo          (one site for a quarter of the ranks)
 *   1  NULL dereference in exchange_ghosts      (a second site)
 *   2  a safepoint: three faults on a PROT_NONE page, each repaired by the SIGSEGV handler
 *      (handled, not crashes), then a clean exit
 *   3  assert(residual < tolerance) fails       (an abort keyed by its message)
 */
#define _GNU_SOURCE
#include <assert.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static char *page;
static volatile int sink;

static void safepoint_handler(int sig, siginfo_t *si, void *ctx) {
    (void)sig, (void)si, (void)ctx;
    mprotect(page, 4096, PROT_READ | PROT_WRITE); /* repaired: the access runs again */
}

__attribute__((noinline)) static void update_halo(int *p) { sink = *p; }
__attribute__((noinline)) static void exchange_ghosts(int *p) { *p = sink; }

int main(void) {
    const char *r = getenv("CRASHTUI_RANK");
    int rank = r ? atoi(r) : 0;
    struct timespec ts = {0, 200000000L + (rank % 8) * 50000000L};
    nanosleep(&ts, NULL);
    switch (rank % 4) {
    case 0:
        update_halo(NULL);
        break;
    case 1:
        exchange_ghosts(NULL);
        break;
    case 2: {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = safepoint_handler;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGSEGV, &sa, NULL);
        page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        for (int i = 0; i < 3; i++) {
            page[0] = (char)i; /* faults, handler unprotects, the store completes */
            mprotect(page, 4096, PROT_NONE);
        }
        return 0;
    }
    default: {
        double residual = 1.0, tolerance = 1e-6;
        assert(residual < tolerance);
    }
    }
    return 0;
}
