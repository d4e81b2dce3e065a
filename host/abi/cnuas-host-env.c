/*
 * Which emulated host a process is in (cnuas-host-env.h).
 */
#define _GNU_SOURCE
#include "cnuas-host-env.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* This namespace's values when the environment's are another's: the file's text, with each
 * line's end made a '\0', read once. */
static char *g_text;
static size_t g_len;
static int g_foreign; /* the environment was set for another namespace */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load(void)
{
    const char *netns = getenv(CNUAS_HOST_NETNS_ENV);
    const char *map = getenv(CNUAS_HOST_MAP_ENV);
    struct stat st;
    if (!netns || !*netns || !map || !*map || stat("/proc/self/ns/net", &st) != 0 ||
        strtoull(netns, NULL, 10) == (unsigned long long)st.st_ino)
        return;
    g_foreign = 1;
    char path[4096];
    if (snprintf(path, sizeof(path), "%s%llu.env", map, (unsigned long long)st.st_ino) >=
        (int)sizeof(path))
        return;
    FILE *f = fopen(path, "re");
    if (!f)
        return; /* a namespace no exec entered: no host's values */
    char buf[8192];
    const size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    g_text = malloc(n + 1);
    if (!g_text)
        return;
    memcpy(g_text, buf, n);
    g_text[n] = '\0';
    for (size_t i = 0; i < n; ++i)
        if (g_text[i] == '\n')
            g_text[i] = '\0';
    g_len = n;
}

const char *cnuas_host_getenv(const char *name)
{
    pthread_once(&g_once, load);
    if (!g_foreign)
        return getenv(name);
    const size_t k = strlen(name);
    for (size_t i = 0; g_text && i < g_len; i += strlen(g_text + i) + 1) {
        if (strncmp(g_text + i, name, k) == 0 && g_text[i + k] == '=')
            return g_text + i + k + 1;
    }
    return NULL;
}
