/* Unit test of the point-to-point report section (shim/p2p/p2p_stats.c):
 * records of several ranks merge by sum, except the unexpected store's
 * high-water mark (the largest); text and JSON name every reason pull
 * was off, and give the ring's channels and slot utilization by bucket,
 * and the revokes and the channels they let go. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "p2p/p2p_stats.h"

static char *render(void (*fn)(FILE *, const void *, const struct hb_report *),
                    const void *acc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fn(f, acc, NULL);
    fclose(f);
    return buf;
}

int main(void)
{
    const struct hb_report_section *s = &hb_p2p_section;
    struct hb_p2p_summary a = {0}, r1 = {0}, r2 = {0};
    CHECK(s->record_size == sizeof(struct hb_p2p_summary));
    r1.comms_seen = 3, r1.comms_pulled = 2, r1.claimed = 10;
    r1.comms_off[HB_P2P_OFF_INTERCOMM] = 1, r1.unexp_hwm = 7, r1.migrated = 1;
    r2.comms_seen = 2, r2.comms_pulled = 1, r2.claimed = 5;
    r2.comms_off[HB_P2P_OFF_NO_HOOK] = 1, r2.unexp_hwm = 4;
    /* two channels of 28 KiB; bucket 1 (1 KiB slots): 3 + 1 records of
     * 2560 B in all: 62.5% of 4 KiB */
    r1.grants = 1, r1.chans = 1, r1.chan_bytes = 28672;
    r2.pairs_asked = 1, r2.chans = 1, r2.chan_bytes = 28672;
    /* rank 1 revoked twice, got both answers, freed one region */
    r1.revokes = 2, r1.chans_freed = 1, r1.chan_bytes_freed = 24576;
    r2.revoke_answers = 2;
    r1.slot_recs[1] = 3, r1.slot_msg_bytes[1] = 2000,
    r1.slot_cap_bytes[1] = 3072;
    r2.slot_recs[1] = 1, r2.slot_msg_bytes[1] = 560,
    r2.slot_cap_bytes[1] = 1024;
    s->merge(&a, &r1);
    s->merge(&a, &r2);
    CHECK_EQ_U64(a.comms_seen, 5);
    CHECK_EQ_U64(a.comms_pulled, 3);
    CHECK_EQ_U64(a.claimed, 15);
    CHECK_EQ_U64(a.unexp_hwm, 7);
    CHECK_EQ_U64(a.migrated, 1);
    char *t = render(s->render_text, &a), *j = render(s->render_json, &a);
    CHECK(strstr(t, "5 communicator(s) x ranks, 3 pulled") != NULL);
    CHECK(strstr(t, "intercomm 1") != NULL);
    CHECK(strstr(t, "no_progress_hook 1") != NULL);
    CHECK(strstr(t, "15 message(s) claimed") != NULL);
    CHECK(strstr(t, "1 pending receive(s) migrated") != NULL);
    CHECK(strstr(j, "\"pulled\": 3") != NULL);
    CHECK(strstr(j, "\"unexpected_hwm\": 7") != NULL);
    CHECK(strstr(j, "\"intercomm\": 1") != NULL);
    CHECK(strstr(t, "channels: 2, 57344 B registered (28672 B each)") != NULL);
    CHECK(strstr(t, "1024 B: 4, 62%") != NULL);
    CHECK(strstr(t, "revokes: 2 sent, 2 answered; channels freed: 1, 24576 B "
                    "back to the budget") != NULL);
    CHECK(strstr(j, "\"revokes\": 2, \"revoked\": 2, \"channels_freed\": 1, "
                    "\"channel_bytes_freed\": 24576") != NULL);
    CHECK(strstr(j, "\"channels\": 2, \"channel_bytes\": 57344") != NULL);
    CHECK(strstr(j, "\"slots\": [{\"capacity\": 1024, \"records\": 4, "
                    "\"msg_bytes\": 2560, \"utilization\": 62.5}]") != NULL);
    CHECK(j[0] == '{' && j[strlen(j) - 1] == '}');
    free(t);
    free(j);
    return check_failures;
}
