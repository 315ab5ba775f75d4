/* An ordinary shared library the test programs link against. */
__attribute__((noinline)) int lib_func(int x) { return x * 3 + 1; }
