/*
 * Which emulated host a process is in, for Cnuas's host libraries (libibverbs, libibumad,
 * librdmacm). `cnuas exec` and `cnuas rsh` name a host's sockets in the environment
 * (CNUAS_HCA_SOCKET, CNUAS_UMAD_SOCKET, CNUAS_CM_SOCKET). A launcher that hands its own
 * environment to the processes it starts on other machines (MPICH's hydra does by default,
 * Slurm's srun too) would give a rank on h1 the sockets of h0, where mpiexec ran: the rank
 * would use h0's adapter, silently. So exec also names the network namespace the values are
 * for (CNUAS_HOST_NETNS, its inode) and where each host's values are written
 * (CNUAS_HOST_MAP, a path prefix: PREFIX<inode>.env, one NAME=VALUE a line); a process in
 * another namespace takes that namespace's values instead.
 */
#ifndef CNUAS_HOST_ENV_H
#define CNUAS_HOST_ENV_H

#ifdef __cplusplus
extern "C" {
#endif

#define CNUAS_HOST_NETNS_ENV "CNUAS_HOST_NETNS"
#define CNUAS_HOST_MAP_ENV "CNUAS_HOST_MAP"

/*
 * The value of host-specific variable `name` for the host this process is in: the
 * environment's when it was set for this network namespace (or names none), else the value
 * written for this namespace (NULL if none was). The string lives as long as the process.
 */
const char *cnuas_host_getenv(const char *name);

#ifdef __cplusplus
}
#endif

#endif
