/* loophandler: a fault whose handler returns without repairing it, so the same fault comes
 * straight back, forever (a safepoint handler that does not unprotect, a SIGBUS handler that
 * does not extend the file). crashtui delivers the fault as if no handler were installed once
 * the handler has failed (Spindle's rule), so the process dies of it; with --unrepaired=leave it
 * keeps looping, as it would without crashtui, and crashtui calls it a crash after three tries.
 *
 *   loophandler read|write|span|sigbus
 *     read    load from a PROT_NONE page
 *     write   store to a read-only page
 *     span    8-byte load across the end of a readable page into a PROT_NONE one
 *     sigbus  load from a page of a file mapping past the file's end
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile long handled;

static void on_fault(int sig) {
    (void)sig;
    handled++; /* returns: the faulting instruction runs again and faults again */
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "read";
    long page = sysconf(_SC_PAGESIZE);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fault;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    char *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 2;
    fprintf(stderr, "loophandler %s\n", mode);
    if (strcmp(mode, "read") == 0) {
        mprotect(p, page, PROT_NONE);
        return *(volatile char *)p;
    }
    if (strcmp(mode, "write") == 0) {
        mprotect(p, page, PROT_READ);
        *(volatile char *)p = 1;
        return 0;
    }
    if (strcmp(mode, "span") == 0) {
        mprotect(p + page, page, PROT_NONE);
        return (int)*(volatile long *)(p + page - 4);
    }
    if (strcmp(mode, "sigbus") == 0) {
        FILE *f = tmpfile();
        if (!f) return 2;
        char *q = mmap(NULL, page, PROT_READ, MAP_PRIVATE, fileno(f), 0); /* empty file */
        if (q == MAP_FAILED) return 2;
        return *(volatile char *)q;
    }
    return 2;
}
