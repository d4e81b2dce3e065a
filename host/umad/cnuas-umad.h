/*
 * Internals of Cnuas's libibumad.so.3: the process side of the emulated host's management
 * interfaces. Protocol: host/abi/cnuas-umad-abi.h.
 */
#ifndef CNUAS_UMAD_H
#define CNUAS_UMAD_H

#include "host/abi/cnuas-umad-abi.h"

#include <infiniband/umad.h>
#include <pthread.h>
#include <stdint.h>

#define CNUAS_EXPORT __attribute__((visibility("default")))

/* libibumad's own warning format, so that the messages look as programs expect them. */
#define IBWARN(fmt, ...)                                                                        \
    fprintf(stderr, "ibwarn: [%d] %s: " fmt "\n", (int)getpid(), __func__, ##__VA_ARGS__)

extern int cnuas_umad_debug_level;
#define DEBUG(fmt, ...)                                                                         \
    do {                                                                                        \
        if (cnuas_umad_debug_level)                                                             \
            IBWARN(fmt, ##__VA_ARGS__);                                                         \
    } while (0)

#endif
