/* Core's entry in the subsystem list for the progress hook: the runtime
 * installs and removes the hook itself (after every subsystem started,
 * first thing at finalize); this entry only gives the report its progress
 * section. */
#include <string.h>

#include "progress.h"
#include "progress_stats.h"
#include "subsys.h"

static void summarize(const struct hb_ctx *ctx, void *rec)
{
    struct hb_progress_record *p = rec;
    (void)ctx;
    p->active = (uint64_t)hb_progress_hook_was_active();
    p->passes = hb_progress_hook_passes();
    strncpy(p->status, hb_progress_hook_status(), sizeof(p->status) - 1);
}

/* clang-format off */
const struct hb_subsys hb_progress_subsys = {
    .name = "progress", .section = &hb_progress_section, .summarize = summarize,
};
/* clang-format on */
