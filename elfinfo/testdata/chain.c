/* A 4-deep call chain; the leaf stops the process with SIGSTOP (raise goes through libc's
 * pthread_kill, so unwinding has to cross libc's CFI to get back here). */
#include <signal.h>

__attribute__((noinline)) void leaf(void) { raise(SIGSTOP); }
__attribute__((noinline)) void depth3(void) { leaf(); }
__attribute__((noinline)) void depth2(void) { depth3(); }
__attribute__((noinline)) void depth1(void) { depth2(); }

int main(void) {
	depth1();
	return 0;
}
