/* libcrashdl.so: loaded with dlmopen(LM_ID_NEWLM), a second link-map namespace. */
__attribute__((noinline)) int crash_in_dl(int *p) { return *p + 5; }
