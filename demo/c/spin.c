/* spin: CPU-bound work for overhead benchmarks: ITER rounds of an xorshift loop, no syscalls. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    long iter = argc > 1 ? atol(argv[1]) : 100000000L;
    unsigned long x = 88172645463325252UL;
    for (long i = 0; i < iter; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; }
    return (int)(x & 1) * 0; /* use x so the loop is not removed */
}
