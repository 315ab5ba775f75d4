/* A thread inside a signal handler: the SIGALRM handler blocks in read(2) of a pipe nobody
 * writes, having interrupted interrupted_work. gdb shows the handler's frames, "<signal
 * handler called>", then the interrupted function at the instruction the signal hit. It
 * prints "ready" from the handler; it never exits on its own. */
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static int pipefd[2];
volatile unsigned long work;

__attribute__((noinline)) void in_handler(void) {
	char c;
	(void)!write(1, "ready\n", 6);
	(void)!read(pipefd[0], &c, 1);
}

static void on_alarm(int sig) {
	(void)sig;
	in_handler();
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
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	interrupted_work();
	return 0;
}
