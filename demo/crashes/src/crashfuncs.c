/* libcrashfuncs.so: a crash inside an ordinary shared library. */
__attribute__((noinline)) int crash_in_lib(int *p) { return *p + 3; }
