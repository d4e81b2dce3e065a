/*
 * The check every test peer prints: "ok NAME", or "FAIL NAME: why" (a printf format and its
 * arguments) and one more failure counted in `failures`, which the peer reports at its end.
 * Flushed at once, so that a peer stopped midway shows how far it got.
 */
#ifndef CNUAS_PEER_CHECK_H
#define CNUAS_PEER_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(name, cond, ...)                                                                  \
    do {                                                                                        \
        if (cond) {                                                                             \
            printf("ok %s\n", name);                                                            \
        } else {                                                                                \
            printf("FAIL %s: ", name);                                                          \
            printf(__VA_ARGS__);                                                                \
            printf("\n");                                                                       \
            failures++;                                                                         \
        }                                                                                       \
        fflush(stdout);                                                                         \
    } while (0)

#endif
