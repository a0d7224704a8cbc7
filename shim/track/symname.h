/* Names people recognise, from the linker's symbol names: C++ demangled
 * ("ns::Class::method(int)"), Fortran as written ("mod::proc", "proc").
 * Pure apart from finding __cxa_demangle in the process (present whenever
 * the program is C++, the only case with C++ names to demangle). */
#ifndef HOTBUF_SYMNAME_H
#define HOTBUF_SYMNAME_H

#include <stddef.h>

/* Room for a readable name (C++ signatures are long). */
#define HB_SYMNAME_LEN 512

enum hb_src_lang { HB_LANG_OTHER, HB_LANG_FORTRAN };

/* Writes the readable form of symbol raw into buf (raw itself when there
 * is none).  lang: the source language of the code, when known (libdw's
 * compile unit); Fortran's trailing underscore is only stripped then,
 * since a C function may end in one too. */
void hb_symname(const char *raw, enum hb_src_lang lang, char *buf, size_t len);

#endif
