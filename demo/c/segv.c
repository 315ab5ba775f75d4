/* segv: dereferences NULL in a named function, so every rank crashes at one site. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) int crash_here(int *p) { return *p + 1; }

int main(void) {
    const char *rank = getenv("CRASHTUI_RANK");
    fprintf(stderr, "segv rank=%s\n", rank ? rank : "-");
    volatile int *null = NULL;
    return crash_here((int *)null);
}
