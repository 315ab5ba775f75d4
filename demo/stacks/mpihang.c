/*
 * mpihang: a real Open MPI job that deadlocks, for crashtui stacks. With N ranks:
 *   0        MPI_Recv from rank N-1, which never sends
 *   1..N-2   MPI_Barrier, which rank 0 and rank N-1 never enter
 *   N-1      computes forever
 * Each rank prints "rank R pid P size N" once it is set up.
 */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

static volatile double sink;

__attribute__((noinline)) static void wait_for_halo(int from) {
    int buf;
    MPI_Recv(&buf, 1, MPI_INT, from, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

__attribute__((noinline)) static void sync_step(void) { MPI_Barrier(MPI_COMM_WORLD); }

__attribute__((noinline)) static double kernel(int n) {
    double x = 0;
    for (int i = 0; i < n; i++) x += (double)i / (n + 1);
    return x;
}

/* A call depth that changes from step to step: a rank that computes never shows the same
 * stack twice in a row, whatever pc the inner loop is at. */
__attribute__((noinline)) static double level(int depth, int n) {
    if (depth == 0) return kernel(n);
    return level(depth - 1, n) * 0.5;
}

__attribute__((noinline)) static void solve(void) {
    for (unsigned long i = 0;; i++) sink += level((int)(i % 11), 20000 + (int)(i % 17) * 1000);
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("rank %d pid %d size %d\n", rank, (int)getpid(), size);
    fflush(stdout);
    if (rank == 0)
        wait_for_halo(size - 1);
    else if (rank < size - 1)
        sync_step();
    else
        solve();
    MPI_Finalize();
    return 0;
}
