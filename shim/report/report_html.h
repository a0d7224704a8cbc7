/* HOTBUF_REPORT=html: the page tools/hotbuf-report draws from the JSON
 * report, run by rank 0 at MPI_Finalize.  MPI-free. */
#ifndef HOTBUF_REPORT_HTML_H
#define HOTBUF_REPORT_HTML_H

/* Seconds the drawing may take before it is stopped: the job waits. */
#define HB_REPORT_HTML_TIMEOUT 120

/* Runs hotbuf-report json_path -o html_path.  Returns 0, or -1 after one
 * line on stderr (tool or matplotlib missing, failure, time-out); the JSON
 * report is there either way. */
int hb_report_html(const char *json_path, const char *html_path);

#endif
