/* Host identity (see host.h). */
#include "host.h"

#include <unistd.h>

uint32_t hb_host_hash(void)
{
    char name[256] = "";
    uint32_t h = 2166136261u; /* FNV-1a */
    gethostname(name, sizeof(name) - 1);
    for (const char *p = name; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    return h;
}
