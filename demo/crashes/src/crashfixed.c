/* libcrashfixed.so: linked at a fixed address (-Wl,-Ttext-segment), so l_addr is 0 and the
 * runtime address equals the link-time one (Spindle's in-fixed-library). */
__attribute__((noinline)) int crash_in_fixed(int *p) { return *p + 4; }
