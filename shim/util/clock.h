/* The monotonic clocks every timing in hotbuf reads: timeouts and retries
 * in the transport, the monitor's waits, and the cost-model measurements.
 * CLOCK_MONOTONIC: never jumps with the wall clock, so a timeout cannot
 * fire early (or never) because of an NTP step. */
#ifndef HOTBUF_UTIL_CLOCK_H
#define HOTBUF_UTIL_CLOCK_H

#include <time.h>

/* Nanoseconds since an arbitrary fixed point, as a double: differences of
 * a few ns stay exact for years of uptime (53-bit mantissa). */
static inline double hb_clock_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline double hb_clock_us(void)
{
    return hb_clock_ns() * 1e-3;
}

static inline double hb_clock_s(void)
{
    return hb_clock_ns() * 1e-9;
}

/* Seconds, as of the kernel's last tick (1-4 ms old): for cadences and
 * timeouts of 10 ms and more, read in polling loops.  Why not
 * hb_clock_s there: where the clocksource is not the TSC (HPET or ACPI
 * PM, as in some virtual machines) CLOCK_MONOTONIC is a system call and a
 * device read; in the emulated test guest the transport's progress read
 * it about twice per rank and 4 KiB Allgather, read_hpet 1.1% of the
 * samples (README).  The coarse clock is the vDSO's copy of the tick's
 * time, never a device.  A kernel without it (before 2.6.32) gets the
 * precise one. */
static inline double hb_clock_coarse_s(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts))
        return hb_clock_s();
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
