/* Readable symbol names (shim/track/symname.c): Fortran's module
 * procedures and trailing underscores, and C++ demangled once the C++
 * runtime is in the process (a C++ program always has it; this C test
 * loads it). */
#include <dlfcn.h>

#include "check.h"
#include "track/symname.h"

static const char *name(const char *raw, enum hb_src_lang lang)
{
    static char buf[HB_SYMNAME_LEN];
    hb_symname(raw, lang, buf, sizeof(buf));
    return buf;
}

int main(void)
{
    CHECK_STR(name("__halo_mod_MOD_exchange", HB_LANG_FORTRAN),
              "halo_mod::exchange");
    CHECK_STR(name("__halo_mod_MOD_exchange", HB_LANG_OTHER),
              "halo_mod::exchange");
    CHECK_STR(name("plain_send_", HB_LANG_FORTRAN), "plain_send");
    CHECK_STR(name("plain_send_", HB_LANG_OTHER),
              "plain_send_"); /* C may end in _ */
    CHECK_STR(name("MAIN__", HB_LANG_FORTRAN), "MAIN__");
    CHECK_STR(name("__MOD_x", HB_LANG_OTHER), "__MOD_x");
    CHECK_STR(name("main", HB_LANG_OTHER), "main");
    /* without the C++ runtime: left as it is */
    if (!dlsym(RTLD_DEFAULT, "__cxa_demangle"))
        CHECK_STR(name("_ZN4halo9Exchanger7forwardEi", HB_LANG_OTHER),
                  "_ZN4halo9Exchanger7forwardEi");
    CHECK(dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL) != NULL);
    CHECK_STR(name("_ZN4halo9Exchanger7forwardEi", HB_LANG_OTHER),
              "halo::Exchanger::forward(int)");
    CHECK_STR(name("_ZN4halo9send_manyIiEEmiii", HB_LANG_OTHER),
              "unsigned long halo::send_many<int>(int, int, int)");
    CHECK_STR(name("_Znot_mangled", HB_LANG_OTHER), "_Znot_mangled");
    return CHECK_DONE();
}
