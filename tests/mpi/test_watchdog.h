/* A watchdog over the parts of an MPI test program: a part in which nothing
 * completes for timeout_s seconds is taken for a deadlock, and the rank exits
 * (status 3) with a line naming the part instead of hanging until ctest's own
 * timeout. One per program: the state is static. */
#ifndef COLL_GPU_TEST_WATCHDOG_H
#define COLL_GPU_TEST_WATCHDOG_H

#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct {
    const char *program;
    int rank, timeout_s, verbose, in_part;
    char msg[256]; /* written by the signal handler: made before the alarm is set */
    size_t len;
    double start;
    char part[128];
} watchdog;

static void watchdog_on_alarm(int sig)
{
    (void)sig;
    ssize_t w = write(2, watchdog.msg, watchdog.len);
    (void)w;
    _exit(3);
}

/* `program` names the messages; verbose: each part's time at rank 0. */
static void watchdog_init(const char *program, int rank, int timeout_s, int verbose)
{
    watchdog.program = program;
    watchdog.rank = rank;
    watchdog.timeout_s = timeout_s < 1 ? 1 : timeout_s;
    watchdog.verbose = verbose;
    signal(SIGALRM, watchdog_on_alarm);
}

static void begin_part(const char *part)
{
    snprintf(watchdog.part, sizeof watchdog.part, "%s", part);
    watchdog.start = MPI_Wtime();
    int k = snprintf(watchdog.msg, sizeof watchdog.msg,
                     "%s: rank %d: deadlock? nothing completed for %d s in part %s: exiting\n", watchdog.program,
                     watchdog.rank, watchdog.timeout_s, part);
    watchdog.len = k > 0 && (size_t)k < sizeof watchdog.msg ? (size_t)k : strlen(watchdog.msg);
    watchdog.in_part = 1;
    alarm((unsigned)watchdog.timeout_s);
}

/* A result arrived: the part is moving. */
static void still_moving(void)
{
    if (watchdog.in_part) alarm((unsigned)watchdog.timeout_s);
}

static void end_part(void)
{
    alarm(0);
    watchdog.in_part = 0;
    if (watchdog.verbose && watchdog.rank == 0)
        printf("%s: %s: %.2f s\n", watchdog.program, watchdog.part, MPI_Wtime() - watchdog.start);
}

#endif
