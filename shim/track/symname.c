/* Readable symbol names (see symname.h). */
#define _GNU_SOURCE
#include "symname.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

/* The C++ runtime's demangler, if the process has one: looked up rather
 * than linked, so a C or Fortran job does not load libstdc++ for it. */
static int demangle(const char *raw, char *buf, size_t len)
{
    demangle_fn fn = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
    int status = -1;
    if (!fn)
        return -1;
    char *out = fn(raw, NULL, NULL, &status);
    if (!out || status != 0) {
        free(out);
        return -1;
    }
    snprintf(buf, len, "%s", out);
    free(out);
    return 0;
}

/* gfortran's module procedures: __MODULE_MOD_PROC -> MODULE::PROC. */
static int fortran_module(const char *raw, char *buf, size_t len)
{
    if (strncmp(raw, "__", 2))
        return -1;
    const char *mod = strstr(raw + 2, "_MOD_");
    if (!mod || mod == raw + 2 || !mod[5])
        return -1;
    snprintf(buf, len, "%.*s::%s", (int)(mod - raw - 2), raw + 2, mod + 5);
    return 0;
}

void hb_symname(const char *raw, enum hb_src_lang lang, char *buf, size_t len)
{
    size_t n = strlen(raw);
    if (!strncmp(raw, "_Z", 2) && demangle(raw, buf, len) == 0)
        return;
    if (fortran_module(raw, buf, len) == 0)
        return;
    if (lang == HB_LANG_FORTRAN && n > 1 && raw[n - 1] == '_' &&
        raw[n - 2] != '_') { /* proc_ -> proc; MAIN__ stays */
        snprintf(buf, len, "%.*s", (int)(n - 1), raw);
        return;
    }
    snprintf(buf, len, "%s", raw);
}
