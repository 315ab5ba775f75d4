/* inlined: crashes in a function inlined into main; gdb names the inlined function as the
 * innermost frame, and so must crashtui. */
#include <stdio.h>
#include <stdlib.h>

static inline __attribute__((always_inline)) int read_cell(volatile int *grid, int i) {
    return grid[i] * 2; /* the crash: grid is NULL */
}

int main(int argc, char **argv) {
    volatile int *grid = argc > 5 ? malloc(16) : NULL;
    (void)argv;
    return read_cell(grid, argc);
}
