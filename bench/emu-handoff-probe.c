/*
 * What one hand-off between two processes costs on this machine, the building block of every
 * hop through the emulation daemon (a doorbell is an eventfd write the daemon's epoll sees; a
 * completion is a store into shared memory the program's poll sees). Two processes ping-pong
 * ITERS times through:
 *   (a) an eventfd each way, both sides asleep in epoll_wait (the daemon when it does not spin),
 *   (b) the same with both sides spinning epoll_wait(timeout 0) (the daemon's spin),
 *   (c) a word of shared memory, both sides spinning (a CQE and a polling program).
 * Prints the round trip (two hand-offs) in microseconds: mean and percentiles.
 *
 *   cc -O2 -o /tmp/handoff bench/emu-handoff-probe.c && /tmp/handoff [ITERS]
 *   GAP_US=2000 /tmp/handoff 1000     # a 2 ms pause before each round trip (ping's interval),
 *                                     # so that idle virtual CPUs halt between them
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int compare_double(const void *x, const void *y)
{
    const double d = *(const double *)x - *(const double *)y;
    return d < 0 ? -1 : d > 0;
}

static int watch(int fd)
{
    const int ep = epoll_create1(0);
    struct epoll_event e = {.events = EPOLLIN, .data.fd = fd};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) != 0) {
        perror("epoll");
        exit(1);
    }
    return ep;
}

static void wait_fd(int ep, int fd, int spin)
{
    struct epoll_event e;
    for (;;) {
        if (epoll_wait(ep, &e, 1, spin ? 0 : -1) > 0) {
            uint64_t v;
            if (read(fd, &v, sizeof(v)) != sizeof(v))
                continue;
            return;
        }
    }
}

static void ring(int fd)
{
    const uint64_t one = 1;
    if (write(fd, &one, sizeof(one)) != sizeof(one)) {
        perror("eventfd write");
        exit(1);
    }
}

int main(int argc, char **argv)
{
    const int iters = argc > 1 ? atoi(argv[1]) : 20000;
    const char *gap_env = getenv("GAP_US");
    const long gap_us = gap_env ? atol(gap_env) : 0;
    static const char *names[] = {"eventfd, both asleep in epoll", "eventfd, both spin epoll(0)",
                                  "shared memory, both spin"};
    if (iters < 1) {
        fprintf(stderr, "usage: %s [ITERS >= 1]\n", argv[0]);
        return 2;
    }
    for (int mode = 0; mode < 3; ++mode) {
        const int to_child = eventfd(0, EFD_NONBLOCK), to_parent = eventfd(0, EFD_NONBLOCK);
        volatile uint32_t *word =
            mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (to_child < 0 || to_parent < 0 || word == MAP_FAILED) {
            perror("setup");
            return 1;
        }
        const pid_t child = fork();
        if (child == 0) {
            const int ep = watch(to_child);
            for (int i = 0; i < iters; ++i) {
                if (mode == 2) {
                    while (*word != (uint32_t)(2 * i + 1))
                        ;
                    *word = (uint32_t)(2 * i + 2);
                } else {
                    wait_fd(ep, to_child, mode == 1);
                    ring(to_parent);
                }
            }
            _exit(0);
        }
        const int ep = watch(to_parent);
        double *rtt = malloc(sizeof(double) * (size_t)iters);
        double sum = 0;
        for (int i = 0; i < iters; ++i) {
            if (gap_us > 0) {
                const struct timespec g = {gap_us / 1000000, (gap_us % 1000000) * 1000};
                nanosleep(&g, NULL);
            }
            const double t = now_us();
            if (mode == 2) {
                *word = (uint32_t)(2 * i + 1);
                while (*word != (uint32_t)(2 * i + 2))
                    ;
            } else {
                ring(to_child);
                wait_fd(ep, to_parent, mode == 1);
            }
            rtt[i] = now_us() - t;
            sum += rtt[i];
        }
        waitpid(child, NULL, 0);
        qsort(rtt, (size_t)iters, sizeof(double), compare_double);
        printf("%-32s round trip mean %8.2f us  p50 %7.2f  p90 %7.2f  p99 %8.2f\n", names[mode],
               sum / iters, rtt[iters / 2], rtt[iters * 9 / 10], rtt[iters * 99 / 100]);
        free(rtt);
        close(to_child);
        close(to_parent);
        close(ep);
    }
    return 0;
}
