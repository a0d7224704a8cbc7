/* One-line notes (see note.h). */
#include "note.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Static: any code may add a note, also code that has no context. */
static struct {
    int rank;
    int n;
    char lines[HB_MAX_NOTES][HB_NOTE_LEN];
} notes = {.rank = -1};

void hb_note_set_rank(int rank)
{
    notes.rank = rank;
}

void hb_note(const char *fmt, ...)
{
    char line[HB_NOTE_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (notes.rank == 0)
        fprintf(stderr, "hotbuf: %s\n", line);
    if (notes.n < HB_MAX_NOTES)
        memcpy(notes.lines[notes.n++], line, sizeof(line));
}

int hb_notes(const char (**lines)[HB_NOTE_LEN])
{
    *lines = (const char(*)[HB_NOTE_LEN])notes.lines;
    return notes.n;
}
