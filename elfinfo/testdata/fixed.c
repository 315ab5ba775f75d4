/* Linked at a fixed address (-Wl,-Ttext-segment) so the dynamic linker maps it where it was
 * linked and l_addr is 0. */
__attribute__((noinline)) int fixed_func(int x) { return x * 5; }
