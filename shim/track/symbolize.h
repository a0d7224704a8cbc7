/* Turns return addresses into "function (file:line)" at exit.
 *
 * Uses elfutils libdw on the live process.  Names are rank-independent
 * (no absolute addresses, which differ between ranks under ASLR), so rank 0
 * can merge the call sites of all ranks by name.
 */
#ifndef HOTBUF_SYMBOLIZE_H
#define HOTBUF_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

struct hb_symbolizer;

struct hb_symbolizer *hb_symbolizer_open(void);
void hb_symbolizer_close(struct hb_symbolizer *sym);

/* Writes a name for the return address ret into buf: "func (file.c:12)",
 * "func+0x1f (libx.so)" without debug info, "0x1234 (module)" without
 * symbols.  sym may be NULL (then dladdr alone is used). */
void hb_symbolize(struct hb_symbolizer *sym, uintptr_t ret, char *buf,
                  size_t len);

/* Joins the names of several frames, innermost first, with " < ". */
void hb_symbolize_frames(struct hb_symbolizer *sym, const uintptr_t *frames,
                         int n, char *buf, size_t len);

#endif
