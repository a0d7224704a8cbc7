/* One-line notes: printed on rank 0 and kept for the report. */
#ifndef HOTBUF_NOTE_H
#define HOTBUF_NOTE_H

#include "report/report.h"

/* Which rank prints (only rank 0 does); before it is known nobody prints. */
void hb_note_set_rank(int rank);

/* One line, printed on rank 0 and kept (the first HB_MAX_NOTES) for the
 * report's notes. */
void hb_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The notes kept so far; returns how many. */
int hb_notes(const char (**lines)[HB_NOTE_LEN]);

#endif
