/*
 * epollwait: a thread blocked in epoll_wait with no timeout, which a ptrace interrupt would
 * end with EINTR (signal(7)); the main thread blocks in read. Prints "ready PID", then
 * "epoll_wait returned R errno E" if the call ever returns. For the stacks test that
 * sampling never stops such a thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

__attribute__((noinline)) static void *event_loop(void *arg) {
    int ep = epoll_create1(0);
    struct epoll_event ev;
    (void)arg;
    for (;;) {
        int r = epoll_wait(ep, &ev, 1, -1);
        printf("epoll_wait returned %d errno %s\n", r, strerror(errno));
        fflush(stdout);
    }
    return NULL;
}

int main(void) {
    pthread_t t;
    char c;
    pthread_create(&t, NULL, event_loop, NULL);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    while (read(0, &c, 1) > 0) {
    }
    return 0;
}
