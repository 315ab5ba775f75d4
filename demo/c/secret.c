/* secret: keeps a secret where a core must not show it, then crashes (issue 21).
 *
 *   secret dontdump   the secret in a page marked madvise(MADV_DONTDUMP), as OpenSSL's secure
 *                     heap, gpg and ssh-agent keep keys; a marker in an ordinary page
 *   secret nodump     the same, after prctl(PR_SET_DUMPABLE, 0): no core at all
 *
 * It prints "secret HEX" and "keep HEX", then dereferences NULL. Both strings are made from
 * getrandom() bytes inside their own page (no stdio, no stack copy): a core that holds the
 * secret can only have taken it from the DONTDUMP page, and one that lacks the marker
 * dumped nothing at all. */
#define _GNU_SOURCE
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <unistd.h>

/* fill writes prefix, then 16 random bytes as 32 hex digits, then a newline, into page. */
static size_t fill(char *page, const char *prefix) {
    size_t n = strlen(prefix);
    memcpy(page, prefix, n);
    unsigned char *raw = (unsigned char *)page + 2048;
    if (getrandom(raw, 16, 0) != 16)
        _exit(2);
    for (int i = 0; i < 16; i++) {
        page[n++] = "0123456789abcdef"[raw[i] >> 4];
        page[n++] = "0123456789abcdef"[raw[i] & 15];
    }
    memset(raw, 0, 16);
    page[n++] = '\n';
    return n;
}

__attribute__((noinline)) int crash_here(volatile int *p) { return *p + 1; }

int main(int argc, char **argv) {
    if (argc != 2 || (strcmp(argv[1], "dontdump") && strcmp(argv[1], "nodump")))
        _exit(2);
    long pg = sysconf(_SC_PAGESIZE);
    char *secret = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *keep = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (secret == MAP_FAILED || keep == MAP_FAILED || madvise(secret, pg, MADV_DONTDUMP) != 0)
        _exit(2);
    if (!strcmp(argv[1], "nodump") && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
        _exit(2);
    size_t n = fill(secret, "secret ");
    if (write(1, secret, n) != (ssize_t)n)
        _exit(2);
    n = fill(keep, "keep ");
    if (write(1, keep, n) != (ssize_t)n)
        _exit(2);
    return crash_here(NULL);
}
