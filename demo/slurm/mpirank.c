/*
 * mpirank: an MPI rank for the Slurm stage (make test-slurm), built with mpicc by the test.
 *
 *   mpirank GOFILE   MPI_Init, prints "rank R of N pid P" on stdout (R from MPI_Comm_rank:
 *                    what the MPI library itself says), waits until GOFILE exists (at most
 *                    10 minutes), then MPI_Finalize.
 */
#include <mpi.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("rank %d of %d pid %d\n", rank, size, (int)getpid());
    fflush(stdout);
    struct timespec tick = {0, 20 * 1000 * 1000};
    for (int i = 0; argc > 1 && access(argv[1], F_OK) != 0 && i < 30000; i++)
        nanosleep(&tick, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
