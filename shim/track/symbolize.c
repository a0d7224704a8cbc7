/* Address to name, at exit only (see symbolize.h). */
#define _GNU_SOURCE
#include "symbolize.h"

#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct hb_symbolizer {
    Dwfl *dwfl;
};

/* libdw's callbacks take a char ** that must outlive every Dwfl; NULL (never
 * written) means the default debuginfo search path. */
static char *debuginfo_path;

struct hb_symbolizer *hb_symbolizer_open(void)
{
    static const Dwfl_Callbacks callbacks = {
        .find_elf = dwfl_linux_proc_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .debuginfo_path = &debuginfo_path,
    };
    struct hb_symbolizer *sym = calloc(1, sizeof(*sym));
    if (!sym)
        return NULL;
    sym->dwfl = dwfl_begin(&callbacks);
    if (!sym->dwfl || dwfl_linux_proc_report(sym->dwfl, getpid()) != 0 ||
        dwfl_report_end(sym->dwfl, NULL, NULL) != 0) {
        hb_symbolizer_close(sym);
        return NULL;
    }
    return sym;
}

void hb_symbolizer_close(struct hb_symbolizer *sym)
{
    if (!sym)
        return;
    if (sym->dwfl)
        dwfl_end(sym->dwfl);
    free(sym);
}

static const char *basename_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Without libdw: the dynamic symbol table through dladdr. */
static void name_by_dladdr(uintptr_t ret, char *buf, size_t len)
{
    Dl_info info;
    if (!dladdr((void *)ret, &info) || !info.dli_fname) {
        snprintf(buf, len, "?");
        return;
    }
    if (info.dli_sname)
        snprintf(buf, len, "%s+0x%lx (%s)", info.dli_sname,
                 (unsigned long)(ret - (uintptr_t)info.dli_saddr),
                 basename_of(info.dli_fname));
    else
        snprintf(buf, len, "0x%lx (%s)",
                 (unsigned long)(ret - (uintptr_t)info.dli_fbase),
                 basename_of(info.dli_fname));
}

void hb_symbolize(struct hb_symbolizer *sym, uintptr_t ret, char *buf,
                  size_t len)
{
    /* ret points after the call instruction; the call itself is at ret-1,
     * which matters when the call is the last instruction of a line. */
    Dwarf_Addr pc = ret - 1;
    Dwfl_Module *mod = sym ? dwfl_addrmodule(sym->dwfl, pc) : NULL;
    if (!mod) {
        name_by_dladdr(ret, buf, len);
        return;
    }
    const char *modname =
        dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    GElf_Off off = 0;
    GElf_Sym elfsym;
    const char *fn =
        dwfl_module_addrinfo(mod, pc, &off, &elfsym, NULL, NULL, NULL);
    Dwfl_Line *line = dwfl_module_getsrc(mod, pc);
    int lineno = 0;
    const char *file =
        line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
    if (fn && file)
        snprintf(buf, len, "%s (%s:%d)", fn, basename_of(file), lineno);
    else if (fn)
        snprintf(buf, len, "%s+0x%lx (%s)", fn, (unsigned long)off + 1,
                 basename_of(modname ? modname : "?"));
    else
        name_by_dladdr(ret, buf, len);
}

void hb_symbolize_frames(struct hb_symbolizer *sym, const uintptr_t *frames,
                         int n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < n && used + 4 < len; i++) {
        if (i) {
            snprintf(buf + used, len - used, " < ");
            used += strlen(buf + used);
        }
        hb_symbolize(sym, frames[i], buf + used, len - used);
        used += strlen(buf + used);
    }
}
