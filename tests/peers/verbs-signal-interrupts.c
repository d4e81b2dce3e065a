/*
 * A signal ends a program's wait for a completion event or an asynchronous event: with a
 * handler installed without SA_RESTART, ibv_get_cq_event and ibv_get_async_event return -1
 * with errno EINTR, as rdma-core's read of the uverbs descriptors does (qperf ends its
 * event-driven tests that way, with SIGALRM).
 *
 *   verbs-signal-interrupts
 *
 * Arms a CQ with nothing to complete, sets an alarm of 200 ms and waits for its event, then the
 * same for the asynchronous events. Prints one line per wait and "signals: OK" (exit 0), or
 * what went wrong (exit 1). A library that retried the read would wait for ever (the caller's
 * timeout then ends it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
    (void)sig;
    ++alarms;
}

static void arm_alarm(void)
{
    struct itimerval t = {.it_value = {.tv_sec = 0, .tv_usec = 200000}};
    setitimer(ITIMER_REAL, &t, NULL);
}

static int check(const char *what, int ret, int err, int before)
{
    const int ok = ret == -1 && err == EINTR && alarms == before + 1;
    printf("%s: returned %d, errno %s, after the alarm: %s\n", what, ret, strerror(err),
           ok ? "as expected" : "WRONG");
    return ok ? 0 : 1;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm; /* no SA_RESTART: the interrupted read returns EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);

    int n = 0;
    struct ibv_device **devs = ibv_get_device_list(&n);
    struct ibv_context *ctx = (devs && n > 0) ? ibv_open_device(devs[0]) : NULL;
    if (!ctx) {
        perror("ibv_open_device");
        return 1;
    }
    struct ibv_comp_channel *channel = ibv_create_comp_channel(ctx);
    struct ibv_cq *cq = channel ? ibv_create_cq(ctx, 4, NULL, channel, 0) : NULL;
    if (!cq || ibv_req_notify_cq(cq, 0)) {
        perror("ibv_create_cq/ibv_req_notify_cq");
        return 1;
    }
    int failures = 0;

    struct ibv_cq *ev_cq = NULL;
    void *ev_ctx = NULL;
    int before = alarms;
    arm_alarm();
    int ret = ibv_get_cq_event(channel, &ev_cq, &ev_ctx);
    failures += check("ibv_get_cq_event", ret, errno, before);

    struct ibv_async_event ev;
    before = alarms;
    arm_alarm();
    ret = ibv_get_async_event(ctx, &ev);
    failures += check("ibv_get_async_event", ret, errno, before);

    ibv_destroy_cq(cq);
    ibv_destroy_comp_channel(channel);
    ibv_close_device(ctx);
    ibv_free_device_list(devs);
    printf("signals: %s\n", failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}
