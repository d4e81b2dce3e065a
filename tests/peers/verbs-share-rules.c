/*
 * Which registered regions Cnuas's libibverbs moves into memory shared with the emulated HCA
 * (host/verbs/verbs-shared-mr.c), seen from inside a program through /proc/self/maps: a
 * region's pages are moved when nothing else can write them during the move.
 *
 *   verbs-share-rules [--threaded-ok]
 *
 * Run in an emulated host (`cnuas exec`), on Cnuas's library. Single-threaded first:
 *   1. a fresh anonymous region is moved;
 *   2. a region overlapping it in part stays where it is (the /proc/PID/mem path), and so does
 *      a later region on the pages that one touches beyond the first (the daemon may be writing
 *      them through /proc/PID/mem: a move would lose what it writes meanwhile);
 *   3. once the overlapping region is deregistered, those pages may be moved again;
 * then with a second thread running:
 *   4. a fresh region is not moved (the other thread could write its pages during the move),
 *      unless --threaded-ok (the program runs with CNUAS_SHARE_MR=1), when it is.
 * Prints one line per check and "share rules: OK" (exit 0), or what went wrong (exit 1).
 */
#define _GNU_SOURCE
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int failures;

/* Whether every page of [addr, addr+len) is mapped from the library's memfd ("cnuas-mr"). */
static int moved(const void *addr, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return 0;
    const uintptr_t lo = (uintptr_t)addr;
    const uintptr_t hi = lo + len;
    uintptr_t covered = lo;
    char line[512];
    while (covered < hi && fgets(line, sizeof(line), f)) {
        uintptr_t a, b;
        if (sscanf(line, "%lx-%lx", &a, &b) != 2 || b <= covered || a > covered)
            continue;
        if (!strstr(line, "cnuas-mr"))
            break;
        covered = b;
    }
    fclose(f);
    return covered >= hi;
}

static struct ibv_mr *reg(struct ibv_pd *pd, void *addr, size_t len)
{
    struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (!mr) {
        perror("ibv_reg_mr");
        exit(1);
    }
    return mr;
}

static void expect(const char *what, int got, int want)
{
    printf("%s: %s (%s)\n", what, got ? "moved" : "not moved", got == want ? "as expected" : "WRONG");
    failures += got != want;
}

static void *idle_thread(void *arg)
{
    (void)arg;
    pause();
    return NULL;
}

int main(int argc, char **argv)
{
    const int threaded_ok = argc > 1 && strcmp(argv[1], "--threaded-ok") == 0;
    int n = 0;
    struct ibv_device **devs = ibv_get_device_list(&n);
    if (!devs || n == 0) {
        fprintf(stderr, "verbs-share-rules: no device\n");
        return 1;
    }
    struct ibv_context *ctx = ibv_open_device(devs[0]);
    struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
    if (!pd) {
        fprintf(stderr, "verbs-share-rules: cannot open %s\n", ibv_get_device_name(devs[0]));
        return 1;
    }
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    /* Eight pages of our own; guard pages around them keep the kernel from merging the
     * mapping with a neighbour. */
    uint8_t *area = mmap(NULL, 10 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED || mprotect(area + page, 8 * page, PROT_READ | PROT_WRITE) != 0) {
        perror("mmap");
        return 1;
    }
    uint8_t *buf = area + page;
    memset(buf, 0x5a, 8 * page);

    struct ibv_mr *first = reg(pd, buf, 2 * page);
    expect("1. a fresh region (pages 0-1)", moved(buf, 2 * page), 1);
    struct ibv_mr *across = reg(pd, buf + page + 100, 2 * page);
    expect("2. a region across its end (pages 1-3)", moved(buf + 2 * page, page), 0);
    struct ibv_mr *beyond = reg(pd, buf + 3 * page, page);
    expect("2. a region on a page that one touches (page 3)", moved(buf + 3 * page, page), 0);
    ibv_dereg_mr(beyond);
    ibv_dereg_mr(across);
    struct ibv_mr *again = reg(pd, buf + 3 * page, page);
    expect("3. the same page once that one is gone (page 3)", moved(buf + 3 * page, page), 1);
    ibv_dereg_mr(again);
    ibv_dereg_mr(first);

    pthread_t t;
    if (pthread_create(&t, NULL, idle_thread, NULL) != 0) {
        perror("pthread_create");
        return 1;
    }
    struct ibv_mr *threaded = reg(pd, buf + 5 * page, 2 * page);
    expect(threaded_ok ? "4. a fresh region with another thread running, CNUAS_SHARE_MR=1"
                       : "4. a fresh region with another thread running",
           moved(buf + 5 * page, 2 * page), threaded_ok);
    ibv_dereg_mr(threaded);
    for (size_t i = 0; i < 8 * page; ++i) {
        if (buf[i] != 0x5a) {
            printf("byte %zu changed by the moves\n", i);
            ++failures;
            break;
        }
    }
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(devs);
    printf("share rules: %s\n", failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}
