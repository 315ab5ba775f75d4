/*
 * floor: the minimal tracer of crashtui's design, the floor its hot path is measured against
 * (issue: the tracer's hot path at the floor). PTRACE_SEIZE with crashtui's options (follow
 * fork, vfork, clone and exec, stop at exit), one blocking waitpid loop over every tracee, no
 * /proc reads: each stop is resumed the way the kernel expects (an event with 0, a
 * signal-delivery-stop with its signal, a group-stop with PTRACE_LISTEN).
 *
 *   floor PROG [ARGS...]   runs PROG traced from its first instruction; exits with its status
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: floor PROG [ARGS...]\n");
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
    long opts = PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC |
                PTRACE_O_TRACEEXIT;
    if (ptrace(PTRACE_SEIZE, child, 0, opts) != 0) {
        perror("seize");
        return 1;
    }
    kill(child, SIGCONT);
    int status = 0, live = 1;
    while (live > 0) {
        pid_t pid = waitpid(-1, &st, __WALL);
        if (pid < 0)
            break;
        if (WIFEXITED(st) || WIFSIGNALED(st)) {
            if (pid == child)
                status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            live--;
            continue;
        }
        int sig = WSTOPSIG(st), event = (unsigned)st >> 16;
        if (sig == SIGTRAP && event != 0) {
            if (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK || event == PTRACE_EVENT_CLONE)
                live++;
            ptrace(PTRACE_CONT, pid, 0, 0);
        } else if (event == PTRACE_EVENT_STOP) {
            ptrace(PTRACE_LISTEN, pid, 0, 0); /* group-stop */
        } else {
            ptrace(PTRACE_CONT, pid, 0, sig); /* signal-delivery-stop: deliver it */
        }
    }
    return status;
}
