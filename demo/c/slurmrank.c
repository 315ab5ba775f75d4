/*
 * slurmrank: one task of the Slurm stage's job (make test-slurm), rank SLURM_PROCID.
 *
 *   slurmrank GOFILE   prints "ready RANK PID JOBID" on stdout ("-" for a variable it lacks),
 *                      waits until GOFILE exists (at most 10 minutes, then exits 0), then
 *                      crashes: even ranks dereference NULL in even_rank_fault, odd ranks in
 *                      odd_rank_fault (two crash sites, two ranks each in a 4-task job).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) int even_rank_fault(volatile int *p) { return *p + 2; }
__attribute__((noinline)) int odd_rank_fault(volatile int *p) { return *p + 1; }

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: slurmrank GOFILE\n");
        return 2;
    }
    const char *rank = getenv("SLURM_PROCID"), *job = getenv("SLURM_JOB_ID");
    printf("ready %s %d %s\n", rank ? rank : "-", (int)getpid(), job ? job : "-");
    fflush(stdout);
    struct timespec tick = {0, 20 * 1000 * 1000};
    for (int i = 0; access(argv[1], F_OK) != 0; i++) {
        if (i > 30000)
            return 0;
        nanosleep(&tick, NULL);
    }
    volatile int *null = NULL;
    if (rank && atoi(rank) % 2 == 1)
        return odd_rank_fault(null);
    return even_rank_fault(null);
}
