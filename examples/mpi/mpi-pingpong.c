/*
 * mpi-pingpong: two MPI ranks exchange messages of growing size, rank 1 changing every byte
 * before it answers, and rank 0 checking every byte it gets back. It prints one line per size:
 * the mean round trip and the one-way bandwidth that implies. Exit status 0 only if every byte
 * came back as it should. Arguments: [ROUNDS (50) [LARGEST SIZE IN BYTES (4 MiB)]].
 *
 * On an emulated fabric (docs/emulation.md §8.7), started in one host, its ranks in two:
 *   cnuas exec h0 -- mpirun -np 2 --host h0,h1 mpi-pingpong
 * Nothing in it knows the fabric: Open MPI's UCX layer finds the emulated adapter by itself.
 */
#include <mpi.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* The byte at `offset` of round `round`'s message, before rank 1 adds one to it. */
static unsigned char pattern(size_t offset, int round)
{
    return (unsigned char)(offset * 7 + (size_t)round * 13);
}

#if defined(__SANITIZE_ADDRESS__)
/* Built with AddressSanitizer (the Debug build): Open MPI leaves allocations of its own behind
 * at MPI_Finalize, some in components it has unloaded by then, which LeakSanitizer would report
 * as this program's and fail it for. Memory errors are still reported. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "detect_leaks=0";
}
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0;
    int ranks = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    if (ranks != 2) {
        if (rank == 0)
            fprintf(stderr, "mpi-pingpong: run it with exactly 2 ranks (mpirun -np 2)\n");
        MPI_Finalize();
        return 2;
    }
    const int rounds = argc > 1 ? atoi(argv[1]) : 50;
    const size_t largest = argc > 2 ? strtoull(argv[2], NULL, 0) : (size_t)1 << 22;
    if (rounds < 1 || largest < 1 || largest > INT_MAX) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi-pingpong [ROUNDS [LARGEST_BYTES]]\n");
        MPI_Finalize();
        return 2;
    }
    char host[MPI_MAX_PROCESSOR_NAME] = "";
    char peer[MPI_MAX_PROCESSOR_NAME] = "";
    int length = 0;
    MPI_Get_processor_name(host, &length);
    MPI_Sendrecv(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 1 - rank, 1, peer,
                 MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 1 - rank, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    unsigned char *buf = malloc(largest);
    if (!buf)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (rank == 0)
        printf("# rank 0 on %s, rank 1 on %s, %d round trips a size\n"
               "# %10s %14s %14s\n",
               host, peer, rounds, "bytes", "round trip us", "MB/s one way");
    long long bad = 0;
    for (size_t size = 1; size <= largest; size *= 4) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double start = MPI_Wtime();
        for (int r = 0; r < rounds; ++r) {
            if (rank == 0) {
                for (size_t i = 0; i < size; ++i)
                    buf[i] = pattern(i, r);
                MPI_Send(buf, (int)size, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(buf, (int)size, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                for (size_t i = 0; i < size; ++i)
                    bad += buf[i] != (unsigned char)(pattern(i, r) + 1);
            } else {
                MPI_Recv(buf, (int)size, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                for (size_t i = 0; i < size; ++i)
                    buf[i]++;
                MPI_Send(buf, (int)size, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            }
        }
        const double each = (MPI_Wtime() - start) / rounds;
        if (rank == 0)
            printf("  %10zu %14.1f %14.1f\n", size, each * 1e6, 2.0 * (double)size / each / 1e6);
    }
    if (rank == 0)
        printf("%lld bad bytes\n", bad);
    MPI_Bcast(&bad, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    free(buf);
    MPI_Finalize();
    return bad == 0 ? 0 : 1;
}
