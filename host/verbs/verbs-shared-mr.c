/*
 * Registered memory shared with the emulated HCA.
 *
 * A real adapter reaches a registered region by DMA into its pinned pages; the daemon reaches
 * a process's memory otherwise through /proc/PID/mem, two system calls per packet (one to read
 * the sender's buffer, one to write the receiver's), which was half of the daemon's time in an
 * ib_write_bw run. Here ibv_reg_mr moves the pages of a region into a sealed memfd mapped at
 * the same addresses (the contents copied first, the switch made atomically with mremap), and
 * hands the memfd to the daemon, which maps it too: from then on a packet's data moves with a
 * memcpy, and a one-sided WRITE still lands while the process makes no call at all.
 *
 * What is shared: private anonymous memory (malloc'd, heap, anonymous mmap) with uniform
 * permissions; anything else (a file mapping, the stack, a region across mappings of different
 * kinds, a range overlapping a shared one only partly) keeps the /proc/PID/mem path, so the
 * fallback is always there. Pages stay shared after ibv_dereg_mr (a later registration of the
 * same buffer reuses them); the daemon unmaps its side when the last region on them goes.
 *
 * Two differences from private memory, and how they are handled:
 *  - fork(): MAP_SHARED pages would be shared with the child, so a pthread_atfork handler gives
 *    the child private copies (posix_spawn and vfork share the address space anyway);
 *  - anything written to the pages between the copy and the switch would be lost, and the
 *    page-rounded range holds more than the region (malloc's neighbours of a heap buffer; UCX
 *    rounds every registration out to whole pages itself). Writers are the daemon, delivering
 *    into a region registered earlier on the /proc/PID/mem path that shares these pages, a
 *    signal handler, and the program's other threads. Pages that a registration on the
 *    /proc/PID/mem path touches are never moved; signals are blocked during the move; and by
 *    default a program that has other threads keeps all its regions on the /proc/PID/mem path
 *    (CNUAS_SHARE_MR unset): Open MPI over UCX (UCX's async thread, Open MPI's own) registers
 *    heap buffers whose pages those threads write. With every region moved, 16 ranks of
 *    examples/mpi/mpi-collectives on a 2-core machine found wrong elements in 3 runs of one
 *    series of 6 (4 words of an all-to-all, once), the daemon's lag under 150 ms; none in the
 *    30 runs since these rules (which writer it was is not known). CNUAS_SHARE_MR=1 moves a
 *    multithreaded program's regions too (it promises no other thread writes near a buffer
 *    it registers), =0 keeps every region on the /proc/PID/mem path (docs/emulation.md §8.1).
 *    On hardware registration does not move pages.
 */
#define _GNU_SOURCE /* memfd_create, MREMAP_FIXED, file seals */
#include "cnuas-verbs.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CNUAS_MAX_SHARED_RANGES 256
/* A region larger than this is not moved (the copy would briefly double its memory). */
#define CNUAS_MAX_SHARED_BYTES (1ull << 32)
#define CNUAS_MEMFD_NAME "cnuas-mr"

struct shared_range {
    uint64_t base;
    uint64_t len;
    int fd;
    int prot;
    ino_t ino;
};

/* The pages of a live registration the daemon reaches through /proc/PID/mem. */
struct page_span {
    uint64_t lo;
    uint64_t hi;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shared_range g_ranges[CNUAS_MAX_SHARED_RANGES];
static int g_count;
static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;
/* Live registrations on the /proc/PID/mem path (a multiset: a buffer may be registered twice).
 * g_untracked: one could not be remembered (out of memory), so no page is moved any more. */
static struct page_span *g_unshared;
static size_t g_unshared_count;
static size_t g_unshared_cap;
static int g_untracked;

static int sharing_enabled(void);

static void page_span_of(const void *addr, size_t length, uint64_t *lo, uint64_t *hi)
{
    const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    const uint64_t start = (uint64_t)(uintptr_t)addr;
    *lo = start & ~(page - 1);
    *hi = (start + length + page - 1) & ~(page - 1);
}

/* Under g_lock. */
static int overlaps_unshared(uint64_t lo, uint64_t hi)
{
    for (size_t i = 0; i < g_unshared_count; ++i)
        if (lo < g_unshared[i].hi && g_unshared[i].lo < hi)
            return 1;
    return 0;
}

/* Under g_lock. */
static void note_unshared(uint64_t lo, uint64_t hi)
{
    if (g_unshared_count == g_unshared_cap) {
        const size_t cap = g_unshared_cap ? g_unshared_cap * 2 : 64;
        struct page_span *grown = realloc(g_unshared, cap * sizeof(*grown));
        if (!grown) {
            g_untracked = 1;
            return;
        }
        g_unshared = grown;
        g_unshared_cap = cap;
    }
    g_unshared[g_unshared_count++] = (struct page_span){lo, hi};
}

void cnuas_forget_unshared(const void *addr, size_t length)
{
    if (length == 0 || !sharing_enabled())
        return; /* as cnuas_share_region: never remembered */
    uint64_t lo, hi;
    page_span_of(addr, length, &lo, &hi);
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_unshared_count; ++i) {
        if (g_unshared[i].lo == lo && g_unshared[i].hi == hi) {
            g_unshared[i] = g_unshared[--g_unshared_count];
            break;
        }
    }
    pthread_mutex_unlock(&g_lock);
}

/* Moves `len` bytes between `buf` and the start of file `fd` (into the file when `to_file`).
 * Whole pages are copied, and they extend past the program's allocation on both sides. A
 * sanitizer's memcpy interceptor in the program (AddressSanitizer) would report the bytes beyond
 * it as an overflow, so the kernel copies them: raw pread/pwrite system calls, which no
 * interceptor sees. Returns 1 when all `len` bytes moved. */
static int kernel_file_copy(int fd, uint8_t *buf, size_t len, int to_file)
{
    size_t done = 0;
    while (done < len) {
        const long n = syscall(to_file ? SYS_pwrite64 : SYS_pread64, fd, buf + done, len - done,
                               (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        done += (size_t)n;
    }
    return 1;
}

enum share_mode {
    SHARE_NEVER,         /* CNUAS_SHARE_MR=0 */
    SHARE_ALWAYS,        /* CNUAS_SHARE_MR=1 */
    SHARE_SINGLE_THREAD, /* unset: while the program has no other thread */
};

static enum share_mode share_mode(void)
{
    const char *e = getenv("CNUAS_SHARE_MR");
    if (e && strcmp(e, "0") == 0)
        return SHARE_NEVER;
    if (e && strcmp(e, "1") == 0)
        return SHARE_ALWAYS;
    return SHARE_SINGLE_THREAD;
}

static int sharing_enabled(void)
{
    return share_mode() != SHARE_NEVER;
}

/* Whether this process has threads besides the caller (the Threads: line of
 * /proc/self/status); 1 when it cannot tell. */
static int other_threads(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return 1;
    char line[128];
    long threads = 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "Threads: %ld", &threads) == 1)
            break;
    fclose(f);
    return threads != 1;
}

/* Moves the mapping at `from` to `to` (MREMAP_FIXED), replacing whatever was there. A raw
 * system call, not libc's mremap: a program may interpose mremap, and UCX 1.13's memory hooks
 * (Debian 12's libucx0, loaded by Open MPI and ucx_perftest) forward only four of its five
 * arguments, dropping MREMAP_FIXED's new address; the move then lands elsewhere while the
 * program's pages at `to` stay private, so every byte the daemon wrote was invisible to it.
 * Nothing at `to` changes from the program's point of view (same contents, same permissions),
 * so a hook has nothing to learn from the move. */
static int remap_fixed(void *from, size_t len, uint64_t to)
{
    const long r = syscall(SYS_mremap, from, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
                           (void *)(uintptr_t)to);
    return r != -1 && (uint64_t)r == to;
}

/* The child of a fork() gets private copies of the shared pages: after fork, memory is the
 * child's own (POSIX), and the daemon knows nothing of the child's mappings. */
static void atfork_child(void)
{
    for (int i = 0; i < g_count; ++i) {
        struct shared_range *r = &g_ranges[i];
        void *copy = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (copy != MAP_FAILED) {
            /* The memfd holds exactly the shared pages. */
            kernel_file_copy(r->fd, copy, r->len, 0);
            if (r->prot != (PROT_READ | PROT_WRITE))
                mprotect(copy, r->len, r->prot);
            if (!remap_fixed(copy, r->len, r->base))
                munmap(copy, r->len);
        }
        close(r->fd);
    }
    g_count = 0;
    pthread_mutex_unlock(&g_lock); /* locked by atfork_prepare */
}

/* The table is consistent in the child: fork waits for any registration in progress. */
static void atfork_prepare(void)
{
    pthread_mutex_lock(&g_lock);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&g_lock);
}

static void install_atfork(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

enum maps_check {
    MAPS_PRIVATE_ANONYMOUS, /* movable: private anonymous memory with one set of permissions */
    MAPS_OUR_MEMFD,         /* still the pages of the memfd with inode `ino` */
};

/* Walks /proc/self/maps over [lo, hi): whether every byte is what `check` asks for (for
 * MAPS_PRIVATE_ANONYMOUS: no path, or [heap]; the permissions in *prot). Returns 1 when so. */
static int check_maps(uint64_t lo, uint64_t hi, enum maps_check check, ino_t ino, int *prot)
{
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return 0;
    char line[512];
    uint64_t covered = lo;
    int ok = 1;
    int first_prot = -1;
    while (covered < hi && fgets(line, sizeof(line), f)) {
        uint64_t a, b, off;
        char perms[8] = {0};
        unsigned maj, min;
        unsigned long inode;
        int pathpos = 0;
        if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %lu %n", &a, &b, perms, &off,
                   &maj, &min, &inode, &pathpos) < 7)
            continue;
        if (b <= covered)
            continue;
        if (a > covered) {
            ok = 0; /* a hole */
            break;
        }
        char *path = pathpos > 0 ? line + pathpos : line + strlen(line);
        path[strcspn(path, "\n")] = '\0';
        int p = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
                (perms[2] == 'x' ? PROT_EXEC : 0);
        if (check == MAPS_PRIVATE_ANONYMOUS) {
            const int anonymous = inode == 0 && (path[0] == '\0' || strcmp(path, "[heap]") == 0);
            if (!anonymous || perms[3] != 'p' || !(p & PROT_READ) || (p & PROT_EXEC) ||
                (first_prot >= 0 && p != first_prot)) {
                ok = 0;
                break;
            }
            first_prot = p;
        } else {
            if ((ino_t)inode != ino || perms[3] != 's' || !strstr(path, CNUAS_MEMFD_NAME)) {
                ok = 0;
                break;
            }
        }
        covered = b;
    }
    fclose(f);
    if (covered < hi)
        ok = 0;
    if (ok && prot)
        *prot = first_prot;
    return ok;
}

static void drop_range(int i)
{
    close(g_ranges[i].fd);
    g_ranges[i] = g_ranges[--g_count];
}

/* Moves [lo, hi) into a new sealed memfd mapped at the same place. Returns the memfd or -1
 * (the memory is then untouched). */
static int move_into_memfd(uint64_t lo, uint64_t hi, int prot)
{
    const size_t len = (size_t)(hi - lo);
    int fd = memfd_create(CNUAS_MEMFD_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -1;
    void *tmp = MAP_FAILED;
    if (ftruncate(fd, (off_t)len) != 0 ||
        /* The daemon relies on the size: sealed, the file can never shrink under its mapping. */
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
        goto fail;
    if (!kernel_file_copy(fd, (uint8_t *)(uintptr_t)lo, len, 1))
        goto fail;
    tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (tmp == MAP_FAILED)
        goto fail;
    if (prot != (PROT_READ | PROT_WRITE) && mprotect(tmp, len, prot) != 0)
        goto fail;
    /* mremap replaces the old pages in one step; had it failed, they would still be there. */
    if (!remap_fixed(tmp, len, lo))
        goto fail;
    return fd;
fail:
    if (tmp != MAP_FAILED)
        munmap(tmp, len);
    close(fd);
    return -1;
}

/* Returns a descriptor of the memfd holding the pages of [addr, addr+length) (the caller closes
 * it) and the range it maps in *base, *len; or -1 when the region stays unshared. */
int cnuas_share_region(const void *addr, size_t length, uint64_t *base, uint64_t *len)
{
    if (length == 0 || !sharing_enabled())
        return -1; /* nothing is ever moved: no need to remember */
    const uint64_t start = (uint64_t)(uintptr_t)addr;
    uint64_t lo, hi;
    page_span_of(addr, length, &lo, &hi);
    int fd = -1;
    pthread_mutex_lock(&g_lock);
    if (start + length < start || length > CNUAS_MAX_SHARED_BYTES)
        goto done;
    for (int i = 0; i < g_count; ++i) {
        struct shared_range *r = &g_ranges[i];
        if (hi <= r->base || lo >= r->base + r->len)
            continue;
        /* Still the pages this library shared? (The program may have unmapped them and mapped
         * something else there since.) */
        if (!check_maps(r->base, r->base + r->len, MAPS_OUR_MEMFD, r->ino, NULL)) {
            drop_range(i--);
            continue;
        }
        if (lo >= r->base && hi <= r->base + r->len) {
            fd = fcntl(r->fd, F_DUPFD_CLOEXEC, 0);
            *base = r->base;
            *len = r->len;
        }
        goto done; /* inside a shared range, or overlapping one in part: not moved again */
    }
    int prot = 0;
    /* A move: not of pages the daemon may be writing through /proc/PID/mem, nor while another
     * thread could write them. */
    if (g_count < CNUAS_MAX_SHARED_RANGES && !g_untracked && !overlaps_unshared(lo, hi) &&
        (share_mode() == SHARE_ALWAYS || !other_threads()) &&
        check_maps(lo, hi, MAPS_PRIVATE_ANONYMOUS, 0, &prot)) {
        /* No signal handler writes these pages between the copy and the switch. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        fd = move_into_memfd(lo, hi, prot);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (fd >= 0) {
            struct stat st;
            fstat(fd, &st);
            g_ranges[g_count++] = (struct shared_range){lo, hi - lo, fd, prot, st.st_ino};
            pthread_once(&g_atfork_once, install_atfork);
            fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
            *base = lo;
            *len = hi - lo;
        }
    }
done:
    if (fd < 0)
        note_unshared(lo, hi);
    pthread_mutex_unlock(&g_lock);
    return fd;
}
