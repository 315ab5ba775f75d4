/*
 * floor: the minimal tracer of crashtui's design, the floor its hot path is measured against
 * (issue: the tracer's hot path at the floor). PTRACE_SEIZE with crashtui's options (follow
 * fork, vfork, clone and exec, stop at exit), one blocking waitpid loop over every tracee, no
 * /proc reads: each stop is resumed the way the kernel expects (an event with 0, a
 * signal-delivery-stop with its signal, a group-stop with PTRACE_LISTEN).
 *
 *   floor PROG [ARGS...]   runs PROG traced from its first instruction; exits with its status
 *   floor -attach PGID     seizes every thread of process group PGID, found by reading every
 *                          /proc/PID/stat and listing each member's task directory, again
 *                          until a round seizes nothing new (as crashtui does); prints
 *                          "attached PROCESSES THREADS MICROSECONDS" and exits, which
 *                          detaches them (exit_ptrace)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const long opts = PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
                         PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT;

/* pgrp_of returns the process group of pid from /proc/PID/stat, -1 if unreadable. */
static long pgrp_of(const char *pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* after comm: state ppid pgrp */
    char state;
    long ppid, pgrp;
    if (!p || sscanf(p + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3)
        return -1;
    return pgrp;
}

#define MAXT 65536
static char seized[MAXT * 8]; /* a bit per tid seen, for tids below MAXT*64 */

static int attach(long pgid) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long procs = 0, threads = 0, added;
    do {
        added = 0;
        DIR *d = opendir("/proc");
        struct dirent *e;
        while (d && (e = readdir(d))) {
            long pid = atol(e->d_name);
            if (pid <= 0 || pid >= MAXT * 64 || pid == getpid())
                continue;
            int known = seized[pid / 8] & (1 << (pid % 8));
            if (!known && pgrp_of(e->d_name) != pgid)
                continue;
            char path[64];
            snprintf(path, sizeof path, "/proc/%ld/task", pid);
            DIR *td = opendir(path);
            struct dirent *te;
            while (td && (te = readdir(td))) {
                long tid = atol(te->d_name);
                if (tid <= 0 || tid >= MAXT * 64 || (seized[tid / 8] & (1 << (tid % 8))))
                    continue;
                if (ptrace(PTRACE_SEIZE, tid, 0, opts) == 0) {
                    seized[tid / 8] |= 1 << (tid % 8);
                    threads++, added++;
                    procs += tid == pid;
                }
            }
            if (td)
                closedir(td);
        }
        if (d)
            closedir(d);
    } while (added > 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("attached %ld %ld %lld\n", procs, threads,
           (long long)(t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "-attach") == 0)
        return attach(atol(argv[2]));
    if (argc < 2) {
        fprintf(stderr, "usage: floor PROG [ARGS...] | floor -attach PGID\n");
        return 2;
    }
    pid_t child = fork();
    if (child == 0) {
        raise(SIGSTOP); /* wait to be seized */
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    int st;
    waitpid(child, &st, WUNTRACED);
    if (ptrace(PTRACE_SEIZE, child, 0, opts) != 0) {
        perror("seize");
        return 1;
    }
    kill(child, SIGCONT);
    /* Until nothing is left to wait for (ECHILD). Not a count of tasks, up at each clone
     * event and down at each exit: a new thread can start, run and exit before its creator's
     * clone event is reported, and the count then reached 0 while the job still ran; floor
     * exited, the job went on untraced and the benchmark found no time (1 run in some 100 of
     * `events thread 2000`). */
    int status = 0;
    for (;;) {
        pid_t pid = waitpid(-1, &st, __WALL);
        if (pid < 0)
            break;
        if (WIFEXITED(st) || WIFSIGNALED(st)) {
            if (pid == child)
                status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            continue;
        }
        int sig = WSTOPSIG(st), event = (unsigned)st >> 16;
        if (sig == SIGTRAP && event != 0) {
            ptrace(PTRACE_CONT, pid, 0, 0);
        } else if (event == PTRACE_EVENT_STOP) {
            ptrace(PTRACE_LISTEN, pid, 0, 0); /* group-stop */
        } else {
            ptrace(PTRACE_CONT, pid, 0, sig); /* signal-delivery-stop: deliver it */
        }
    }
    return status;
}
