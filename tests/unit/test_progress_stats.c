/* The report's progress section (shim/core/progress_stats.c): merge of
 * several ranks' records and its text and JSON. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/progress_stats.h"

static void fill(struct hb_progress_record *p, int active, uint64_t passes,
                 const char *status)
{
    memset(p, 0, sizeof(*p));
    p->active = (uint64_t)active;
    p->passes = passes;
    strncpy(p->status, status, sizeof(p->status) - 1);
}

static char *render(void (*fn)(FILE *, const void *, const struct hb_report *),
                    const void *acc, const struct hb_report *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fn(f, acc, r);
    fclose(f);
    return buf;
}

static void test_merge_and_render(void)
{
    const struct hb_report_section *s = &hb_progress_section;
    struct hb_progress_record rec[3];
    struct hb_progress_report acc;
    struct hb_report r;
    memset(&acc, 0, sizeof(acc));
    memset(&r, 0, sizeof(r));
    r.nranks = 3;
    fill(&rec[0], 1, 100, "active: Open MPI's opal_progress");
    fill(&rec[1], 1, 50, "active: Open MPI's opal_progress");
    fill(&rec[2], 0, 0, "off: test switch \"X\"");
    memset(rec[2].status, 'z', sizeof(rec[2].status)); /* unterminated */
    for (int i = 0; i < 3; i++)
        s->merge(&acc, &rec[i]);
    CHECK_EQ_U64(acc.active, 2);
    CHECK_EQ_U64(acc.passes, 150);
    CHECK_STR(acc.status, "active: Open MPI's opal_progress");
    CHECK(strlen(acc.other) == HB_PROGRESS_STATUS_LEN - 1);

    char *text = render(s->render_text, &acc, &r);
    CHECK(strstr(text, "progress inside MPI: active: Open MPI's opal_progress; "
                       "active on 2 of 3 rank(s), 150 passes\n") != NULL);
    CHECK(strstr(text, "  on another rank: zzz") != NULL);
    free(text);

    fill(&rec[2], 0, 0, "off: test switch \"X\"");
    memset(&acc, 0, sizeof(acc));
    s->merge(&acc, &rec[2]);
    char *json = render(s->render_json, &acc, &r);
    CHECK_STR(
        json,
        "{\"status\": \"off: test switch \\\"X\\\"\", \"other_status\": \"\", "
        "\"ranks_active\": 0, \"passes\": 0}");
    free(json);
}

int main(void)
{
    test_merge_and_render();
    return check_failures;
}
