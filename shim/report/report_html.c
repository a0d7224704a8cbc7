/* Runs hotbuf-report for HOTBUF_REPORT=html (see report_html.h).
 *
 * The tool is found relative to this library, in both layouts:
 *   source tree  TOP/build/FLAVOUR/libhotbuf.so -> TOP/tools/hotbuf-report
 *   installed    PREFIX/lib/hotbuf/FLAVOUR/libhotbuf.so
 *                                       -> PREFIX/bin/hotbuf-report
 * It runs without LD_PRELOAD (a Python process needs no hotbuf), with its
 * output discarded: its exit status says what went wrong, and the job's
 * stderr gets one line of ours. */
#define _GNU_SOURCE
#include "report_html.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* hotbuf-report's exit status when matplotlib is missing. */
#define TOOL_NO_MATPLOTLIB 3

/* Fills path with the first existing candidate.  Returns 0 or -1. */
static int find_tool(char *path, size_t len)
{
    static const char *const rel[] = {"../../tools/hotbuf-report",
                                      "../../../bin/hotbuf-report"};
    Dl_info info;
    if (!dladdr((void *)hb_report_html, &info) || !info.dli_fname)
        return -1;
    char lib[PATH_MAX];
    if (!realpath(info.dli_fname, lib))
        return -1;
    char *slash = strrchr(lib, '/');
    if (!slash)
        return -1;
    *slash = 0;
    for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
        snprintf(path, len, "%s/%s", lib, rel[i]);
        if (access(path, X_OK) == 0)
            return 0;
    }
    return -1;
}

/* environ without LD_PRELOAD; NULL when out of memory. */
static char **child_env(void)
{
    size_t n = 0, k = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 1, sizeof(*env));
    for (size_t i = 0; env && i < n; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11))
            env[k++] = environ[i];
    return env;
}

/* The child's exit status, -1 (spawn failed, errno set) or -2 (killed
 * after the time-out). */
static int run(const char *tool, const char *json, const char *html)
{
    char *argv[] = {(char *)tool, (char *)json, "-o", (char *)html, NULL};
    char **env = child_env();
    posix_spawn_file_actions_t fa;
    pid_t pid;
    if (!env)
        return -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    int err = posix_spawn(&pid, tool, &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    if (err) {
        errno = err;
        return -1;
    }
    int status = 0;
    const struct timespec tick = {0, 50 * 1000 * 1000};
    for (int t = 0; t < HB_REPORT_HTML_TIMEOUT * 20; t++) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        if (w < 0 && errno != EINTR)
            return 128;
        nanosleep(&tick, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -2;
}

int hb_report_html(const char *json_path, const char *html_path)
{
    char tool[PATH_MAX + 64];
    if (find_tool(tool, sizeof(tool))) {
        fprintf(stderr,
                "hotbuf: no HTML page: hotbuf-report not found next to the "
                "library; the report is in %s\n",
                json_path);
        return -1;
    }
    int rc = run(tool, json_path, html_path);
    if (rc == 0)
        return 0;
    if (rc == TOOL_NO_MATPLOTLIB)
        fprintf(stderr,
                "hotbuf: no HTML page: matplotlib is missing (Debian: "
                "python3-matplotlib); the report is in %s\n",
                json_path);
    else if (rc == -1)
        fprintf(stderr,
                "hotbuf: no HTML page: cannot run %s (%s); the report "
                "is in %s\n",
                tool, strerror(errno), json_path);
    else if (rc == -2)
        fprintf(stderr,
                "hotbuf: no HTML page: hotbuf-report took over %d s and was "
                "stopped; the report is in %s\n",
                HB_REPORT_HTML_TIMEOUT, json_path);
    else
        fprintf(stderr,
                "hotbuf: no HTML page: hotbuf-report failed (exit %d; run it "
                "on %s to see why)\n",
                rc, json_path);
    return -1;
}
