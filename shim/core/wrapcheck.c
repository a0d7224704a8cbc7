/* See wrapcheck.h. */
#include "wrapcheck.h"

#include <string.h>

#include "note.h"

/* Static: set by the bindings, which have no context, once per process. */
static struct {
    int checked;
    char why[160];
} wrapcheck;

void hb_wrapcheck_set(int checked, const char *why)
{
    wrapcheck.checked = checked;
    strncpy(wrapcheck.why, why, sizeof(wrapcheck.why) - 1);
}

int hb_bindings_checked(void)
{
    return wrapcheck.checked;
}

void hb_wrapcheck_note(void)
{
    if (!wrapcheck.checked)
        hb_note("point-to-point rerouting stays off: %s", wrapcheck.why);
}
