/*
 * treerank: the job whose real agent stream the tree of reducing views is tested and
 * measured on (issue 27, cmd/crashtui/tree_test.go, make bench).
 *
 *   treerank N   forks N ranks (CRASHTUI_RANK 0..N-1, each exec'd so that /proc/PID/environ
 *                has it) in a process group of their own, prints "pgid P" once all have
 *                started, and reaps them. Every rank blocks reading fd 3 (the read end of a
 *                pipe the caller holds open) in one of three functions by rank % 3 (three
 *                stack classes: wait_halo, wait_reduce, wait_io); at the pipe's end it
 *                dereferences NULL at one of four sites by rank % 4 (update_halo,
 *                exchange_ghosts, solve_block, write_io).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
static volatile int sink;

__attribute__((noinline)) static void update_halo(int *p) { sink = *p; }
__attribute__((noinline)) static void exchange_ghosts(int *p) { sink = *p + 1; }
__attribute__((noinline)) static void solve_block(int *p) { sink = *p + 2; }
__attribute__((noinline)) static void write_io(int *p) { sink = *p + 3; }

__attribute__((noinline)) static void block(void) {
    char c;
    while (read(3, &c, 1) > 0) {
    }
}
__attribute__((noinline)) static void wait_halo(void) { block(); __asm__ volatile(""); }
__attribute__((noinline)) static void wait_reduce(void) { block(); __asm__ volatile(""); }
__attribute__((noinline)) static void wait_io(void) { block(); __asm__ volatile(""); }

static int rank_main(int rank) {
    void (*waits[3])(void) = {wait_halo, wait_reduce, wait_io};
    void (*sites[4])(int *) = {update_halo, exchange_ghosts, solve_block, write_io};
    waits[rank % 3]();
    sites[rank % 4](NULL);
    return 0;
}

int main(int argc, char **argv) {
    const char *r = getenv("CRASHTUI_RANK");
    if (argc == 2 && strcmp(argv[1], "rank") == 0 && r)
        return rank_main(atoi(r));
    if (argc != 2) {
        fprintf(stderr, "usage: treerank N\n");
        return 2;
    }
    int n = atoi(argv[1]);
    int nenv = 0;
    while (environ[nenv])
        nenv++;
    char **env = calloc(nenv + 2, sizeof *env);
    memcpy(env + 1, environ, nenv * sizeof *env);
    pid_t pgid = 0;
    for (int i = 0; i < n; i++) {
        char rankvar[32];
        snprintf(rankvar, sizeof rankvar, "CRASHTUI_RANK=%d", i);
        env[0] = rankvar;
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            setpgid(0, pgid);
            char *args[] = {"treerank", "rank", NULL};
            execve("/proc/self/exe", args, env);
            _exit(127);
        }
        if (pgid == 0)
            pgid = pid;
        setpgid(pid, pgid); /* both sides, as a shell does: no race with the child's exec */
    }
    close(3);
    printf("pgid %d\n", (int)pgid);
    fflush(stdout);
    while (wait(NULL) > 0) {
    }
    return 0;
}
