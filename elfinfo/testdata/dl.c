/* Loaded with dlmopen(LM_ID_NEWLM): a second link-map namespace. */
__attribute__((noinline)) int dl_func(int x) { return x - 7; }
