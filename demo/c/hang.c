/*
 * hang: one rank of a hung job, for crashtui stacks (STAT's classic picture). The rank is
 * CRASHTUI_RANK, else SLURM_PROCID (a task of srun), else argv[1]; with THREADS=n in the environment each rank also starts n-1
 * helper threads blocked in a condition variable.
 *
 *   0     waits in a receive that nobody sends: recv_message -> read on a pipe it owns
 *   1-4   wait in a barrier that never completes: barrier -> pthread_barrier_wait (futex)
 *   5+    keep computing: compute -> smooth/relax, a stack that changes all the time
 *
 * It prints "ready RANK" once in place and then never returns.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile double sink;

__attribute__((noinline)) static void recv_message(int fd) {
    char c;
    printf("ready %s\n", getenv("CRASHTUI_RANK") ? getenv("CRASHTUI_RANK") : "?");
    fflush(stdout);
    while (read(fd, &c, 1) != 0) {
    }
}

__attribute__((noinline)) static void barrier(void) {
    static pthread_barrier_t b;
    pthread_barrier_init(&b, NULL, 2); /* two parties; only this one ever arrives */
    printf("ready %s\n", getenv("CRASHTUI_RANK") ? getenv("CRASHTUI_RANK") : "?");
    fflush(stdout);
    pthread_barrier_wait(&b);
}

__attribute__((noinline)) static double relax(int n) {
    double x = 0;
    for (int i = 0; i < n; i++) x += (double)i / (n + 1);
    return x;
}

__attribute__((noinline)) static double smooth(int depth, int n) {
    if (depth == 0) return relax(n);
    return smooth(depth - 1, n) + 1;
}

__attribute__((noinline)) static void compute(void) {
    printf("ready %s\n", getenv("CRASHTUI_RANK") ? getenv("CRASHTUI_RANK") : "?");
    fflush(stdout);
    for (unsigned long i = 0;; i++) sink += smooth((int)(i % 11), 20000 + (int)(i % 13) * 1000);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void *helper(void *arg) {
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) pthread_cond_wait(&cv, &mu);
    return NULL;
}

int main(int argc, char **argv) {
    const char *r = getenv("CRASHTUI_RANK");
    if (!r) r = getenv("SLURM_PROCID");
    int rank = atoi(r ? r : argc > 1 ? argv[1] : "0");
    int threads = getenv("THREADS") ? atoi(getenv("THREADS")) : 1;
    for (int i = 1; i < threads; i++) {
        pthread_t t;
        pthread_create(&t, NULL, helper, NULL);
    }
    if (rank == 0) {
        int p[2];
        if (pipe(p) != 0) return 1;
        recv_message(p[0]);
    } else if (rank <= 4) {
        barrier();
    } else {
        compute();
    }
    return 0;
}
