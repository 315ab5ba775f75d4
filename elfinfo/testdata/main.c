/* Prints the runtime addresses of functions in the exe, a linked library, a fixed-address
 * library and a dlmopen'ed library, then blocks in read(0) until the test kills it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

int lib_func(int);
int fixed_func(int);

__attribute__((noinline)) int exe_func(int x) { return x + 1; }

int main(int argc, char **argv) {
	void *h = dlmopen(LM_ID_NEWLM, argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlmopen: %s\n", dlerror());
		return 2;
	}
	printf("%p %p %p %p\n", (void *)exe_func, dlsym(RTLD_DEFAULT, "lib_func"),
	       dlsym(RTLD_DEFAULT, "fixed_func"), dlsym(h, "dl_func"));
	fflush(stdout);
	char c;
	if (read(0, &c, 1) < 0)
		return 1;
	return exe_func(lib_func(fixed_func(0)));
}
