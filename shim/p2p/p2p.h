/* Point-to-point, receive side: hotbuf's own matcher over MPI's messages
 * ("pull", ../shared/P2P-DESIGN.md §5.7).
 *
 * On a communicator in pull, hotbuf decides which receive every message
 * goes to: it claims MPI's messages with PMPI_Improbe(ANY_SOURCE, ANY_TAG)
 * and receives each with PMPI_Imrecv straight into the receive it matched.
 * Part 2 merges ring messages into the same matcher.
 *
 * The bindings (pmpi/mpi_calls.def, "p2p:" hooks) call these functions
 * only while hb_p2p_engaged is nonzero: some communicator is in pull, or
 * hotbuf owns requests the application holds.  Otherwise they go straight
 * to PMPI and this subsystem costs one load and a branch per call.
 *
 * Every function here has the semantics of the MPI function it is named
 * after (arguments, return code, error handler), for every communicator:
 * the ones not in pull go to PMPI inside.
 */
#ifndef HOTBUF_P2P_H
#define HOTBUF_P2P_H

#include <mpi.h>

/* Nonzero while any wrapper must ask this subsystem (read inline by
 * every receive-side binding, which has no context). */
extern int hb_p2p_engaged;

/* Receives. */
int hb_p2p_recv(void *buf, MPI_Count count, MPI_Datatype type, int source,
                int tag, MPI_Comm comm, MPI_Status *st);
int hb_p2p_irecv(void *buf, MPI_Count count, MPI_Datatype type, int source,
                 int tag, MPI_Comm comm, MPI_Request *req);
int hb_p2p_recv_init(void *buf, MPI_Count count, MPI_Datatype type, int source,
                     int tag, MPI_Comm comm, MPI_Request *req);
int hb_p2p_start(MPI_Request *req);
int hb_p2p_startall(int n, MPI_Request reqs[]);
int hb_p2p_sendrecv(const void *sbuf, MPI_Count scount, MPI_Datatype stype,
                    int dest, int stag, void *rbuf, MPI_Count rcount,
                    MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,
                    MPI_Status *st);
int hb_p2p_sendrecv_replace(void *buf, MPI_Count count, MPI_Datatype type,
                            int dest, int stag, int source, int rtag,
                            MPI_Comm comm, MPI_Status *st);
/* MPI-4 (MPICH 4.0): nonblocking send + receive in one request. */
int hb_p2p_isendrecv(const void *sbuf, MPI_Count scount, MPI_Datatype stype,
                     int dest, int stag, void *rbuf, MPI_Count rcount,
                     MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,
                     MPI_Request *req);
int hb_p2p_isendrecv_replace(void *buf, MPI_Count count, MPI_Datatype type,
                             int dest, int stag, int source, int rtag,
                             MPI_Comm comm, MPI_Request *req);

/* Sends (part 2).  mode: which MPI function; req for the nonblocking
 * ones.  hb_p2p_send_init: MPI made a persistent send (mode: the
 * blocking function it stands for; ret: its caller), which each Start
 * sends on its pair. */
enum {
    HB_P2P_SEND,
    HB_P2P_SSEND,
    HB_P2P_RSEND,
    HB_P2P_BSEND,
    HB_P2P_ISEND,
    HB_P2P_ISSEND,
    HB_P2P_IRSEND,
    HB_P2P_IBSEND
};
int hb_p2p_send(int mode, const void *buf, int count, MPI_Datatype type,
                int dest, int tag, MPI_Comm comm, MPI_Request *req);
void hb_p2p_send_init(int mode, MPI_Request req, const void *buf, int count,
                      MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                      void *ret);
/* The large-count forms (MPI-4): as the int forms when count fits an
 * int, else by MPI with the pair's bookkeeping.  Not tracked. */
int hb_p2p_send_c(int mode, const void *buf, MPI_Count count, MPI_Datatype type,
                  int dest, int tag, MPI_Comm comm, MPI_Request *req);
void hb_p2p_send_init_c(int mode, MPI_Request req, const void *buf,
                        MPI_Count count, MPI_Datatype type, int dest, int tag,
                        MPI_Comm comm, void *ret);

/* Probes.  Matched probes hand out real MPI_Message handles: Mrecv and
 * Imrecv go to PMPI unchanged. */
int hb_p2p_probe(int source, int tag, MPI_Comm comm, MPI_Status *st);
int hb_p2p_iprobe(int source, int tag, MPI_Comm comm, int *flag,
                  MPI_Status *st);
int hb_p2p_mprobe(int source, int tag, MPI_Comm comm, MPI_Message *msg,
                  MPI_Status *st);
int hb_p2p_improbe(int source, int tag, MPI_Comm comm, int *flag,
                   MPI_Message *msg, MPI_Status *st);

/* A ring message handed out by a matched probe is a real MPI message on
 * a private communicator: these give it its sender back. */
int hb_p2p_mrecv(void *buf, MPI_Count count, MPI_Datatype type,
                 MPI_Message *msg, MPI_Status *st);
int hb_p2p_imrecv(void *buf, MPI_Count count, MPI_Datatype type,
                  MPI_Message *msg, MPI_Request *req);

/* Completion: arrays may mix hotbuf's requests and MPI's. */
int hb_p2p_wait(MPI_Request *req, MPI_Status *st);
int hb_p2p_test(MPI_Request *req, int *flag, MPI_Status *st);
int hb_p2p_waitall(int n, MPI_Request reqs[], MPI_Status sts[]);
int hb_p2p_testall(int n, MPI_Request reqs[], int *flag, MPI_Status sts[]);
int hb_p2p_waitany(int n, MPI_Request reqs[], int *index, MPI_Status *st);
int hb_p2p_testany(int n, MPI_Request reqs[], int *index, int *flag,
                   MPI_Status *st);
int hb_p2p_waitsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                    MPI_Status sts[]);
int hb_p2p_testsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                    MPI_Status sts[]);
int hb_p2p_request_get_status(MPI_Request req, int *flag, MPI_Status *st);
int hb_p2p_cancel(MPI_Request *req);
int hb_p2p_request_free(MPI_Request *req);

/* Communicators.  hb_p2p_comm_created runs after every successful
 * constructor (C and Fortran, engaged or not), with the new handle
 * (MPI_COMM_NULL on ranks that got none); hb_p2p_comm_free does the whole
 * MPI_Comm_free (hotbuf may keep the communicator until its pending
 * receives complete) and hb_p2p_comm_disconnect the whole
 * MPI_Comm_disconnect. */
void hb_p2p_comm_created(MPI_Comm comm);
int hb_p2p_comm_free(MPI_Comm *comm);
int hb_p2p_comm_disconnect(MPI_Comm *comm);

/* The whole MPI_Intercomm_create.  MPI runs the leaders' exchange by
 * point-to-point on peer_comm with the application's tag: on a pulled
 * peer_comm hotbuf would claim MPI's own message and the creation would
 * never complete.  The leaders use a communicator hotbuf never pulls. */
int hb_p2p_intercomm_create(MPI_Comm local_comm, int local_leader,
                            MPI_Comm peer_comm, int remote_leader, int tag,
                            MPI_Comm *newintercomm);

/* MPI_TAG_UB as the application sees it: one tag below MPI's is kept for
 * hotbuf's in-band markers (part 2) while point-to-point is on. */
int hb_p2p_tag_ub_hidden(void);

#endif
