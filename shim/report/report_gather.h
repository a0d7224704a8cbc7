/* Step 2 of the report: gather every rank's records on rank 0 and write
 * the report where HOTBUF_REPORT / HOTBUF_REPORT_FILE say. */
#ifndef HOTBUF_REPORT_MPI_H
#define HOTBUF_REPORT_MPI_H

/* Collective over hb_rt.comm; call before PMPI_Finalize. */
void hb_report_at_finalize(void);

#endif
