/*
 * mpi-collectives: the collectives a training job spends its network time in (allreduce above
 * all, then all-to-all and broadcast), each at growing sizes across every rank, each result
 * checked element by element. One line per operation and size: the mean time of one call (the
 * slowest rank's) and the bus bandwidth NCCL's tests report (the algorithm bandwidth, bytes /
 * time, scaled by 2(n-1)/n for allreduce and (n-1)/n for all-to-all, so that it compares with
 * a link's rate whatever the rank count). Exit status 0 only if every element was right; the
 * first wrong ones each rank finds are named on stderr.
 * Arguments: [ITERATIONS (20) [LARGEST BYTES PER RANK (1 MiB)]].
 *
 * On an emulated fabric (docs/emulation.md §8.7), started in one host, its ranks in four:
 *   cnuas exec h0 -- mpirun -np 4 --host h0,h1,h2,h3 mpi-collectives
 * (cnuas exec sets Open MPI up for the emulated adapters: UCX, `cnuas rsh`, root allowed).
 */
#include <mpi.h>

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
/* As in mpi-pingpong.c: Open MPI's own allocations left at MPI_Finalize are not this program's
 * leaks. Memory errors are still reported. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "detect_leaks=0";
}
#endif

/* What rank `rank` contributes at element `i` of iteration `iter`: integers, so that sums in
 * double are exact whatever order the library adds them in. */
static double contribution(int rank, size_t i, int iter)
{
    return (double)((i * 31 + (size_t)rank * 1009 + (size_t)iter * 7) % 65536);
}

/* The element rank `from` sends to rank `to` at position `i` of all-to-all iteration `iter`. */
static uint32_t a2a_word(int from, int to, size_t i, int iter)
{
    return (uint32_t)(((uint32_t)from << 24) ^ ((uint32_t)to << 16) ^ (uint32_t)(i * 2654435761u) ^
                      (uint32_t)iter);
}

struct op_result {
    double seconds; /* total over the iterations, the slowest rank's */
    long bad;       /* wrong elements, summed over ranks */
};

static struct op_result allreduce(int rank, int ranks, size_t count, int iterations,
                                  double *in, double *out)
{
    struct op_result r = {0, 0};
    double elapsed = 0;
    for (int iter = 0; iter < iterations; ++iter) {
        for (size_t i = 0; i < count; ++i)
            in[i] = contribution(rank, i, iter);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        MPI_Allreduce(in, out, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        elapsed += MPI_Wtime() - t0;
        for (size_t i = 0; i < count; ++i) {
            double want = 0;
            for (int k = 0; k < ranks; ++k)
                want += contribution(k, i, iter);
            if (out[i] != want && r.bad++ < 4)
                fprintf(stderr, "mpi-collectives: rank %d: allreduce of %zu B, call %d: "
                        "element %zu is %g, not %g\n", rank, count * 8, iter, i, out[i], want);
        }
    }
    MPI_Allreduce(&elapsed, &r.seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &r.bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    return r;
}

static struct op_result alltoall(int rank, int ranks, size_t words, int iterations,
                                 uint32_t *in, uint32_t *out)
{
    struct op_result r = {0, 0};
    double elapsed = 0;
    for (int iter = 0; iter < iterations; ++iter) {
        for (int to = 0; to < ranks; ++to)
            for (size_t i = 0; i < words; ++i)
                in[(size_t)to * words + i] = a2a_word(rank, to, i, iter);
        memset(out, 0, (size_t)ranks * words * sizeof(*out));
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        MPI_Alltoall(in, (int)words, MPI_UINT32_T, out, (int)words, MPI_UINT32_T,
                     MPI_COMM_WORLD);
        elapsed += MPI_Wtime() - t0;
        for (int from = 0; from < ranks; ++from)
            for (size_t i = 0; i < words; ++i) {
                const uint32_t got = out[(size_t)from * words + i];
                const uint32_t want = a2a_word(from, rank, i, iter);
                if (got != want && r.bad++ < 4)
                    fprintf(stderr, "mpi-collectives: rank %d: alltoall of %zu B, call %d: "
                            "word %zu from rank %d is %#x, not %#x\n", rank,
                            words * 4 * (size_t)ranks, iter, i, from, got, want);
            }
    }
    MPI_Allreduce(&elapsed, &r.seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &r.bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    return r;
}

static struct op_result bcast(int rank, int ranks, size_t bytes, int iterations,
                              unsigned char *buf)
{
    struct op_result r = {0, 0};
    double elapsed = 0;
    for (int iter = 0; iter < iterations; ++iter) {
        const int root = iter % ranks; /* every rank roots in turn */
        for (size_t i = 0; i < bytes; ++i)
            buf[i] = rank == root ? (unsigned char)(i * 13 + (size_t)iter * 5 + 1) : 0;
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD);
        elapsed += MPI_Wtime() - t0;
        for (size_t i = 0; i < bytes; ++i) {
            const unsigned char want = (unsigned char)(i * 13 + (size_t)iter * 5 + 1);
            if (buf[i] != want && r.bad++ < 4)
                fprintf(stderr, "mpi-collectives: rank %d: bcast of %zu B from rank %d, call "
                        "%d: byte %zu is %#x, not %#x\n", rank, bytes, root, iter, i, buf[i],
                        want);
        }
    }
    MPI_Allreduce(&elapsed, &r.seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &r.bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    return r;
}

static void report(int rank, const char *op, size_t bytes, int iterations, double factor,
                   struct op_result r)
{
    if (rank != 0)
        return;
    const double per_call = r.seconds / iterations;
    const double algbw = per_call > 0 ? bytes / per_call / 1e6 : 0;
    printf("%-10s %9zu %12.1f %12.1f %8ld\n", op, bytes, per_call * 1e6, algbw * factor, r.bad);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0;
    int ranks = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    const int iterations = argc > 1 ? atoi(argv[1]) : 20;
    const size_t largest = argc > 2 ? strtoull(argv[2], NULL, 0) : (size_t)1 << 20;
    if (iterations < 1 || largest < 8 || largest > INT_MAX / 8 || ranks < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np N (N >= 2) mpi-collectives [ITERATIONS "
                            "[LARGEST_BYTES_PER_RANK (8..%d)]]\n", INT_MAX / 8);
        MPI_Finalize();
        return 2;
    }
    /* Where every rank runs, as the launcher placed it. */
    char host[MPI_MAX_PROCESSOR_NAME] = "";
    int length = 0;
    MPI_Get_processor_name(host, &length);
    char *hosts = rank == 0 ? malloc((size_t)ranks * MPI_MAX_PROCESSOR_NAME) : NULL;
    MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%d ranks:", ranks);
        for (int k = 0; k < ranks; ++k)
            printf(" %d on %s%s", k, hosts + (size_t)k * MPI_MAX_PROCESSOR_NAME,
                   k + 1 < ranks ? "," : "\n");
        printf("%-10s %9s %12s %12s %8s\n", "operation", "bytes", "time (us)", "busbw (MB/s)",
               "bad");
        free(hosts);
    }
    double *din = malloc(largest);
    double *dout = malloc(largest);
    uint32_t *win = malloc(largest * (size_t)ranks);
    uint32_t *wout = malloc(largest * (size_t)ranks);
    if (!din || !dout || !win || !wout) {
        fprintf(stderr, "mpi-collectives: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const double n = ranks;
    long bad = 0;
    for (size_t bytes = 8; bytes <= largest; bytes *= 4) {
        const struct op_result r = allreduce(rank, ranks, bytes / 8, iterations, din, dout);
        report(rank, "allreduce", bytes, iterations, 2 * (n - 1) / n, r);
        bad += r.bad;
    }
    for (size_t bytes = 8; bytes <= largest; bytes *= 4) {
        /* `bytes` per destination: each rank sends and receives ranks * bytes. */
        const struct op_result r = alltoall(rank, ranks, bytes / 4, iterations, win, wout);
        report(rank, "alltoall", bytes * (size_t)ranks, iterations, (n - 1) / n, r);
        bad += r.bad;
    }
    for (size_t bytes = 8; bytes <= largest; bytes *= 4) {
        const struct op_result r = bcast(rank, ranks, bytes, iterations, (unsigned char *)din);
        report(rank, "bcast", bytes, iterations, 1, r);
        bad += r.bad;
    }
    if (rank == 0)
        printf("%ld bad elements\n", bad);
    free(din);
    free(dout);
    free(win);
    free(wout);
    MPI_Finalize();
    return bad == 0 ? 0 : 1;
}
