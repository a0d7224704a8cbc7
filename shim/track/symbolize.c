/* Address to name, at exit only (see symbolize.h). */
#define _GNU_SOURCE
#include "symbolize.h"
#include "symname.h"

#include <dlfcn.h>
#include <dwarf.h>
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
    char name[HB_SYMNAME_LEN];
    if (!dladdr((void *)ret, &info) || !info.dli_fname) {
        snprintf(buf, len, "?");
        return;
    }
    if (info.dli_sname) {
        hb_symname(info.dli_sname, HB_LANG_OTHER, name, sizeof(name));
        snprintf(buf, len, "%s+0x%lx (%s)", name,
                 (unsigned long)(ret - (uintptr_t)info.dli_saddr),
                 basename_of(info.dli_fname));
    } else
        snprintf(buf, len, "0x%lx (%s)",
                 (unsigned long)(ret - (uintptr_t)info.dli_fbase),
                 basename_of(info.dli_fname));
}

static int is_fortran(Dwarf_Die *cu)
{
    switch (dwarf_srclang(cu)) {
    case DW_LANG_Fortran77:
    case DW_LANG_Fortran90:
    case DW_LANG_Fortran95:
    case DW_LANG_Fortran03:
    case DW_LANG_Fortran08: return 1;
    default: return 0;
    }
}

/* A Fortran procedure as its source names it, from the debug info:
 * "proc", "mod::proc", the main program by its name (gfortran's MAIN__).
 * Returns 0, or -1 when the debug info does not say. */
static int fortran_name(Dwarf_Die *cu, Dwarf_Addr pc, char *buf, size_t len)
{
    Dwarf_Die *scopes = NULL;
    int n = dwarf_getscopes(cu, pc, &scopes), rc = -1;
    for (int i = 0; i < n && rc; i++) {
        const char *name = dwarf_diename(&scopes[i]);
        if (dwarf_tag(&scopes[i]) != DW_TAG_subprogram || !name)
            continue;
        const char *mod =
            i + 1 < n && dwarf_tag(&scopes[i + 1]) == DW_TAG_module
                ? dwarf_diename(&scopes[i + 1])
                : NULL;
        if (mod)
            snprintf(buf, len, "%s::%s", mod, name);
        else
            snprintf(buf, len, "%s", name);
        rc = 0;
    }
    free(scopes);
    return rc;
}

/* The function's readable name: demangled C++, Fortran as written. */
static void function_name(Dwfl_Module *mod, Dwarf_Addr pc, const char *raw,
                          char *buf, size_t len)
{
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, pc, &bias);
    int fortran = cu && is_fortran(cu);
    if (fortran && fortran_name(cu, pc - bias, buf, len) == 0)
        return;
    hb_symname(raw, fortran ? HB_LANG_FORTRAN : HB_LANG_OTHER, buf, len);
}

void hb_symbolize(struct hb_symbolizer *sym, uintptr_t ret, char *buf,
                  size_t len)
{
    char name[HB_SYMNAME_LEN];
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
    if (fn)
        function_name(mod, pc, fn, name, sizeof(name));
    if (fn && file)
        snprintf(buf, len, "%s (%s:%d)", name, basename_of(file), lineno);
    else if (fn)
        snprintf(buf, len, "%s+0x%lx (%s)", name, (unsigned long)off + 1,
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
