/*
 * rank: one rank of crashtui's built-in demo job. What it does depends on CRASHTUI_RANK, so
 * that eight ranks show every capability within 30 seconds:
 *
 *   0  threads blocked in read, nanosleep, futex and poll (the checkpoint view)
 *   1  drops to uid/gid 65534 (a red row and column in the matrix; needs root)
 *   2  a seccomp filter returning EPERM for process_vm_readv/writev, kcmp and ptrace, like a
 *      container profile without CAP_SYS_PTRACE (a red row)
 *   3  a safepoint: touches a PROT_NONE page every 2 s; its SIGSEGV handler makes the page
 *      readable and returns (handled, never a crash)
 *   4,5  NULL dereference in solver_step after 4 and 6 s (one crash site, two ranks)
 *   6  assert(residual < tolerance) fails after 8 s (an abort keyed by its message)
 *   7+ a worker blocked in poll
 * Every surviving rank runs until killed.
 */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int rank;

static void say(const char *what) {
    fprintf(stderr, "rank %d (pid %d): %s\n", rank, getpid(), what);
}

static void sleep_s(int s) {
    struct timespec ts = {s, 0};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* ---- rank 0: threads in syscalls ---- */
static int pipefd[2];
static int futex_word;

static void *in_read(void *a) { (void)a; char c; read(pipefd[0], &c, 1); return NULL; }
static void *in_sleep(void *a) { (void)a; struct timespec ts = {3600, 0}; nanosleep(&ts, NULL); return NULL; }
static void *in_futex(void *a) { (void)a; syscall(SYS_futex, &futex_word, FUTEX_WAIT, 0, NULL, NULL, 0); return NULL; }
static void *in_poll(void *a) { (void)a; struct pollfd p = {pipefd[0], POLLIN, 0}; poll(&p, 1, -1); return NULL; }

static void blocked_threads(void) {
    pthread_t t;
    pipe(pipefd);
    pthread_create(&t, NULL, in_read, NULL);
    pthread_create(&t, NULL, in_sleep, NULL);
    pthread_create(&t, NULL, in_futex, NULL);
    pthread_create(&t, NULL, in_poll, NULL);
}

/* ---- rank 2: container-like seccomp profile ---- */
static void deny_cma(void) {
#if defined(__x86_64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_AARCH64
#elif defined(__powerpc64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_PPC64LE
#endif
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_HERE, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 4, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_writev, 3, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_kcmp, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ptrace, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) say("seccomp filter refused");
    else say("seccomp filter: process_vm_readv, kcmp, ptrace -> EPERM");
}

/* ---- rank 3: safepoint ---- */
static char *safepoint;
static long pagesz;

static void on_segv(int sig, siginfo_t *si, void *uc) {
    (void)sig; (void)uc;
    char *p = si->si_addr;
    if (p >= safepoint && p < safepoint + pagesz) {
        mprotect(safepoint, pagesz, PROT_READ); /* the VM "arms" the safepoint page back */
        return;
    }
    signal(SIGSEGV, SIG_DFL); /* not ours: crash */
}

static void safepoints(void) {
    pagesz = sysconf(_SC_PAGESIZE);
    safepoint = mmap(NULL, pagesz, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGSEGV, &sa, NULL);
    for (;;) {
        mprotect(safepoint, pagesz, PROT_NONE); /* request a stop-the-world */
        volatile char c = *(volatile char *)safepoint;
        (void)c;
        sleep_s(2);
    }
}

/* ---- ranks 4-6: real crashes ---- */
struct grid { double *cells; int n; };

__attribute__((noinline)) static double solver_step(struct grid *g, int i) {
    return g->cells[i] * 0.5; /* g->cells is NULL: SIGSEGV here */
}

__attribute__((noinline)) static void check_residual(double residual, double tolerance) {
    assert(residual < tolerance);
}

int main(void) {
    const char *r = getenv("CRASHTUI_RANK");
    rank = r ? atoi(r) : 0;
    setvbuf(stderr, NULL, _IOLBF, 0);
    switch (rank) {
    case 0:
        blocked_threads();
        say("threads blocked in read, nanosleep, futex, poll");
        break;
    case 1:
        if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
            say("could not drop to uid 65534 (needs root): the matrix shows no uid row");
        else
            say("running as uid 65534");
        break;
    case 2:
        deny_cma();
        break;
    case 3:
        say("safepoint polling every 2 s");
        safepoints();
        break;
    case 4:
    case 5: {
        sleep_s(rank == 4 ? 4 : 6);
        struct grid g = {NULL, 16};
        say("solver step");
        printf("%f\n", solver_step(&g, rank));
        break;
    }
    case 6:
        sleep_s(8);
        say("checking the residual");
        check_residual(1e-3, 1e-6);
        break;
    default:
        say("worker waiting in poll");
        break;
    }
    for (;;) {
        struct pollfd p = {-1, 0, 0};
        poll(&p, 1, 60 * 1000);
    }
}
