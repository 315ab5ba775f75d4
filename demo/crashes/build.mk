# Crash-pattern suite (issue 3). Include from the top-level Makefile:
#   include demo/crashes/build.mk
# `make crashes` builds into $(CRASHES_OUT); the Go tests build their own copy with
# demo/crashes.Build, so they do not depend on this fragment having run.
CRASHES_SRC := demo/crashes/src
CRASHES_OUT ?= build/crashes
CRASHES_ABS := $(abspath $(CRASHES_OUT))
CRASHES_FIXED_BASE := 0x30000000

.PHONY: crashes
crashes: $(CRASHES_OUT)/crash_pie $(CRASHES_OUT)/crash_nopie $(CRASHES_OUT)/libcrashdl.so

$(CRASHES_OUT):
	mkdir -p $@

$(CRASHES_OUT)/libcrashfuncs.so: $(CRASHES_SRC)/crashfuncs.c | $(CRASHES_OUT)
	gcc -g -O0 -shared -fPIC -o $@ $<

$(CRASHES_OUT)/libcrashfixed.so: $(CRASHES_SRC)/crashfixed.c | $(CRASHES_OUT)
	gcc -g -O0 -shared -fPIC -Wl,-Ttext-segment=$(CRASHES_FIXED_BASE) -o $@ $<

$(CRASHES_OUT)/libcrashdl.so: $(CRASHES_SRC)/crashdl.c | $(CRASHES_OUT)
	gcc -g -O0 -shared -fPIC -o $@ $<

CRASHES_LINK = -L$(CRASHES_OUT) -lcrashfuncs -lcrashfixed -ldl -lpthread -Wl,-rpath,$(CRASHES_ABS)

$(CRASHES_OUT)/crash_pie: $(CRASHES_SRC)/crash.c $(CRASHES_OUT)/libcrashfuncs.so $(CRASHES_OUT)/libcrashfixed.so
	gcc -g -O0 -fPIE -pie -o $@ $< $(CRASHES_LINK)

$(CRASHES_OUT)/crash_nopie: $(CRASHES_SRC)/crash.c $(CRASHES_OUT)/libcrashfuncs.so $(CRASHES_OUT)/libcrashfixed.so
	gcc -g -O0 -fno-pie -no-pie -o $@ $< $(CRASHES_LINK)
