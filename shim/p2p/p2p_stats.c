/* The point-to-point section of the report (see p2p_stats.h). */
#include <string.h>

#include "p2p_stats.h"

_Static_assert(sizeof(struct hb_p2p_summary) % 8 == 0,
               "records concatenate unpadded");

static const char *const off_names[] = {HB_P2P_OFF_REASONS(HB_REPORT_NAME)};
static const char *const refusal_names[] = {HB_P2P_REFUSALS(HB_REPORT_NAME)};

/* Sums every counter; the high-water mark is the largest of any rank. */
static void merge(void *acc, const void *rec)
{
    struct hb_p2p_summary *a = acc;
    const struct hb_p2p_summary *r = rec;
    uint64_t hwm = a->unexp_hwm > r->unexp_hwm ? a->unexp_hwm : r->unexp_hwm;
    uint64_t *av = acc;
    const uint64_t *rv = rec;
    for (size_t i = 0; i < sizeof(*a) / sizeof(uint64_t); i++)
        av[i] += rv[i];
    a->unexp_hwm = hwm;
}

/* Receive slots by bucket: records, capacity, message bytes / slot bytes
 * (every channel has the same layout, so capacity = slot bytes / records). */
static double utilization(const struct hb_p2p_summary *m, int b)
{
    return m->slot_cap_bytes[b] ? 100.0 * (double)m->slot_msg_bytes[b] /
                                      (double)m->slot_cap_bytes[b]
                                : 0.0;
}

static void slots_text(FILE *out, const struct hb_p2p_summary *m)
{
    if (!m->chans)
        return;
    fprintf(out, "  channels: %llu, %llu B registered (%llu B each)",
            (unsigned long long)m->chans, (unsigned long long)m->chan_bytes,
            (unsigned long long)(m->chan_bytes / m->chans));
    const char *sep = "; slots used (capacity: records, utilization): ";
    for (int b = 0; b < HB_SLOT_BUCKETS; b++) {
        if (!m->slot_recs[b])
            continue;
        fprintf(out, "%s%llu B: %llu, %.0f%%", sep,
                (unsigned long long)(m->slot_cap_bytes[b] / m->slot_recs[b]),
                (unsigned long long)m->slot_recs[b], utilization(m, b));
        sep = "; ";
    }
    fprintf(out, "\n");
    if (m->revokes || m->revoke_answers)
        fprintf(out,
                "  revokes: %llu sent, %llu answered; channels freed: %llu, "
                "%llu B back to the budget\n",
                (unsigned long long)m->revokes,
                (unsigned long long)m->revoke_answers,
                (unsigned long long)m->chans_freed,
                (unsigned long long)m->chan_bytes_freed);
}

static void slots_json(FILE *out, const struct hb_p2p_summary *m)
{
    const char *sep = "";
    fprintf(out, ", \"slots\": [");
    for (int b = 0; b < HB_SLOT_BUCKETS; b++) {
        if (!m->slot_recs[b])
            continue;
        fprintf(out,
                "%s{\"capacity\": %llu, \"records\": %llu, "
                "\"msg_bytes\": %llu, \"utilization\": %.1f}",
                sep,
                (unsigned long long)(m->slot_cap_bytes[b] / m->slot_recs[b]),
                (unsigned long long)m->slot_recs[b],
                (unsigned long long)m->slot_msg_bytes[b], utilization(m, b));
        sep = ", ";
    }
    fprintf(out, "]");
}

/* Part 2: pairs and the ring, when any pair was asked for. */
static void ring_text(FILE *out, const struct hb_p2p_summary *m)
{
    if (!m->pairs_asked && !m->grants)
        return;
    fprintf(out,
            "  pairs: %llu asked, %llu live, %llu back on MPI after a fault; "
            "refused: ",
            (unsigned long long)m->pairs_asked,
            (unsigned long long)m->pairs_live,
            (unsigned long long)m->pairs_dead);
    hb_report_text_counts(out, m->pairs_refused, 0, HB_P2P_NREFUSALS,
                          refusal_names);
    fprintf(
        out,
        "\n  ring: %llu message(s), %llu B (%llu zero-copy), %llu by MPI "
        "on live pairs, %llu marker(s), %llu resent, %llu credit(s), "
        "%llu synchronous; %llu persistent send buffer(s) registered at "
        "init\n",
        (unsigned long long)m->ring_msgs, (unsigned long long)m->ring_bytes,
        (unsigned long long)m->ring_zcopy, (unsigned long long)m->live_by_mpi,
        (unsigned long long)m->markers_out, (unsigned long long)m->ring_resends,
        (unsigned long long)m->ring_credits, (unsigned long long)m->ring_sync,
        (unsigned long long)m->psend_pinned);
    slots_text(out, m);
}

#define RING_JSON(f, key)                                                      \
    fprintf(out, "\"" key "\": %llu, ", (unsigned long long)m->f);
static void ring_json(FILE *out, const struct hb_p2p_summary *m)
{
    fprintf(out, ", \"ring\": {");
    HB_P2P_RING_COUNTERS(RING_JSON)
    fprintf(out, "\"refused\": ");
    hb_report_json_counts(out, m->pairs_refused, 0, HB_P2P_NREFUSALS,
                          refusal_names);
    fprintf(out, ", \"grants_refused\": ");
    hb_report_json_counts(out, m->grants_refused, 0, HB_P2P_NREFUSALS,
                          refusal_names);
    slots_json(out, m);
    fprintf(out, "}");
}

static void render_text(FILE *out, const void *acc, const struct hb_report *r)
{
    const struct hb_p2p_summary *m = acc;
    (void)r;
    if (!m->comms_seen)
        return;
    fprintf(out,
            "point-to-point: %llu communicator(s) x ranks, %llu pulled "
            "(hotbuf matches); not pulled: ",
            (unsigned long long)m->comms_seen,
            (unsigned long long)m->comms_pulled);
    hb_report_text_counts(out, m->comms_off, 0, HB_P2P_NREASONS, off_names);
    fprintf(out,
            "\n  %llu message(s) claimed from MPI (%llu to a posted receive), "
            "unexpected store up to %llu on a rank\n",
            (unsigned long long)m->claimed,
            (unsigned long long)m->matched_posted,
            (unsigned long long)m->unexp_hwm);
    if (m->migrated || m->migrate_matched)
        fprintf(out,
                "  %llu pending receive(s) migrated into pull, %llu already "
                "matched by MPI\n",
                (unsigned long long)m->migrated,
                (unsigned long long)m->migrate_matched);
    if (m->truncated || m->frees_deferred)
        fprintf(out,
                "  %llu truncated receive(s), %llu Comm_free(s) deferred\n",
                (unsigned long long)m->truncated,
                (unsigned long long)m->frees_deferred);
    ring_text(out, m);
}

static void render_json(FILE *out, const void *acc, const struct hb_report *r)
{
    const struct hb_p2p_summary *m = acc;
    (void)r;
    fprintf(
        out,
        "{\"comms\": %llu, \"pulled\": %llu, \"claimed\": %llu, "
        "\"claimed_bytes\": %llu, \"matched_posted\": %llu, "
        "\"migrated\": %llu, \"migrate_matched\": %llu, "
        "\"unexpected_hwm\": %llu, \"probes\": %llu, \"mprobes\": %llu, "
        "\"truncated\": %llu, \"frees_deferred\": %llu, \"off\": ",
        (unsigned long long)m->comms_seen, (unsigned long long)m->comms_pulled,
        (unsigned long long)m->claimed, (unsigned long long)m->claimed_bytes,
        (unsigned long long)m->matched_posted, (unsigned long long)m->migrated,
        (unsigned long long)m->migrate_matched,
        (unsigned long long)m->unexp_hwm,
        (unsigned long long)m->probes_answered, (unsigned long long)m->mprobes,
        (unsigned long long)m->truncated,
        (unsigned long long)m->frees_deferred);
    hb_report_json_counts(out, m->comms_off, 0, HB_P2P_NREASONS, off_names);
    ring_json(out, m);
    fprintf(out, "}");
}

/* clang-format off */
const struct hb_report_section hb_p2p_section = {
    .name = "p2p", .record_size = sizeof(struct hb_p2p_summary),
    .merge = merge, .render_text = render_text, .render_json = render_json,
};
/* clang-format on */
