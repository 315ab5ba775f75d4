/* Writes through a NULL pointer two calls below main: the SIGSEGV's PC is in crash_here. */
__attribute__((noinline)) void crash_here(volatile int *p) { *p = 42; }
__attribute__((noinline)) void crash_caller(volatile int *p) { crash_here(p); }

int main(void) {
	crash_caller(0);
	return 0;
}
