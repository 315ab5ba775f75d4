/* A thread inside a signal handler: the SIGALRM handler blocks in read(2) of a pipe nobody
 * writes, having interrupted interrupted_work's loop (once work has counted nothing else runs
 * on the thread). gdb shows the handler's frames, "<signal handler called>", then the
 * interrupted function at the instruction the signal hit. It prints "ready PC UC" from the
 * handler: where the signal hit as its ucontext says (read with libc's own ucontext_t) and
 * where that ucontext is, in hex; it never exits on its own. */
#define _GNU_SOURCE
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>
#if defined(__powerpc64__)
#include <asm/ptrace.h> /* PT_NIP */
#endif

static int pipefd[2];
volatile unsigned long work;

static int hex(char *out, unsigned long v) { /* no stdio: async-signal-safe */
	int n = 0;
	out[n++] = '0';
	out[n++] = 'x';
	for (int shift = 60; shift >= 0; shift -= 4)
		out[n++] = "0123456789abcdef"[(v >> shift) & 0xf];
	return n;
}

__attribute__((noinline)) void in_handler(unsigned long pc, void *uc) {
	char c, line[64] = "ready ";
	int n = 6;
	n += hex(line + n, pc);
	line[n++] = ' ';
	n += hex(line + n, (unsigned long)uc);
	line[n++] = '\n';
	(void)!write(1, line, n);
	(void)!read(pipefd[0], &c, 1);
}

static unsigned long interrupted_pc(const ucontext_t *uc) {
#if defined(__x86_64__)
	return uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	return uc->uc_mcontext.pc;
#elif defined(__powerpc64__)
	return uc->uc_mcontext.gp_regs[PT_NIP];
#else
#error "sighandler.c: no ucontext pc for this architecture"
#endif
}

static void on_alarm(int sig, siginfo_t *si, void *uc) {
	(void)sig;
	(void)si;
	if (work == 0) { /* it hit main before interrupted_work's loop (setitimer's return): again */
		struct itimerval it = {.it_value = {.tv_usec = 1000}};
		setitimer(ITIMER_REAL, &it, NULL);
		return;
	}
	in_handler(interrupted_pc(uc), uc);
}

__attribute__((noinline)) void interrupted_work(void) {
	for (;;)
		work++;
}

int main(void) {
	struct sigaction sa;
	struct itimerval it = {.it_value = {.tv_usec = 1000}};
	if (pipe(pipefd) != 0)
		return 1;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_alarm;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	interrupted_work();
	return 0;
}
