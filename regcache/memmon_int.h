/* Internal interface between memmon.c and the shmdt/shmat interposers in
 * memmon_shm.c.  Not for other callers. */
#ifndef HOTBUF_REGCACHE_MEMMON_INT_H
#define HOTBUF_REGCACHE_MEMMON_INT_H

#include <stdint.h>

enum hb_memmon_hook_kind { HB_MEMMON_HOOK_SHMDT, HB_MEMMON_HOOK_SHMAT };

/* A hook brackets its syscall: enter() before it (returns 1 if the monitor
 * runs; then the hook must call leave()), report() after it, leave() last.
 * All three are async-signal-safe, lock-free and allocation-free. */
int hb_memmon__hook_enter(void);
void hb_memmon__hook_report(enum hb_memmon_hook_kind kind, uintptr_t start,
                            uintptr_t end);
void hb_memmon__hook_leave(void);

/* memmon_shm.c: resolves the next shmdt/shmat definitions (called by
 * hb_memmon_start, outside any signal handler). */
void hb_memmon__shm_init(void);

#endif
