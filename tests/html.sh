# hotbuf-report's pages (issue 15), loaded in headless Chromium: the
# demo's report, a report of many call sites written by HOTBUF_REPORT=html
# itself, and a diff of two runs.  Each page must show its tables and
# plots in the DOM and fetch nothing (tests/check_html.py: no network
# reference in the file, no request of the page's own in Chromium's net
# log, with every host name unresolvable and a dead proxy besides); a
# page that does fetch must be caught.  Screenshots go to build/html/ to
# be looked at.  Also: without matplotlib, HOTBUF_REPORT=html still writes
# text and JSON and says so in one line.
# Sourced by tests/run-tests.sh: uses its top, work, pass, fail, selected,
# launcher.  Open MPI only (the page does not depend on the MPI).

# chromium with no way out and no background traffic of its own that
# could be mistaken for the page's.
html_chromium() { # ARGS...
    timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --disable-default-apps --disable-extensions --hide-scrollbars \
        '--host-resolver-rules=MAP * ~NOTFOUND' --proxy-server=127.0.0.1:9 \
        --user-data-dir="$work/html/chrome" --virtual-time-budget=3000 "$@" 2>>"$work/html/chromium.log"
}

# Loads PAGE: its DOM to PAGE.dom, its net log to PAGE.netlog, a
# screenshot to build/html/NAME.png; then tests/check_html.py with CHECKS.
html_load() { # NAME PAGE CHECKS...
    local name=$1 page=$2; shift 2
    rm -f "$page.netlog"
    html_chromium --log-net-log="$page.netlog" --dump-dom "file://$page" >"$page.dom" &&
        html_chromium --window-size=1400,3200 --screenshot="$top/build/html/$name.png" \
            "file://$page" >/dev/null &&
        python3 tests/check_html.py "$page" "$page.dom" "$page.netlog" "$@" \
            >"$work/html/$name.check" 2>&1
}

# The demo, plain and under hotbuf (same output), its JSON drawn by
# hotbuf-report.
html_demo() {
    local d=$work/html prog=build/openmpi/tools/hotbuf-demo l
    selected html/demo || return 0
    l=$(launcher openmpi 4)
    if ! timeout 120 $l $prog >"$d/demo.plain" 2>&1 ||
        ! HOTBUF_REPORT=json HOTBUF_REPORT_FILE=$d/demo timeout 120 \
            tools/hotbuf-run --mpi=openmpi -- $l $prog >"$d/demo.out" 2>"$d/demo.err"; then
        fail html/demo "the demo fails" "$d/demo.err"
    elif ! diff "$d/demo.plain" "$d/demo.out" >"$d/demo.diff"; then
        fail html/demo "output differs with hotbuf" "$d/demo.diff"
    elif ! tools/hotbuf-report "$d/demo.json" -o "$d/demo.html" 2>"$d/demo.err"; then
        fail html/demo "hotbuf-report fails" "$d/demo.err"
    elif ! html_load demo "$d/demo.html" --table classes:4 --table sites:6 --table config:30 \
        --svg 4 --text "Summary per operation" --text "buffers used once: nothing to gain" \
        --text "Cost model thresholds" --text "Failed peers"; then
        fail html/demo "the page in Chromium" "$d/demo.check"
    else
        pass html/demo
    fi
}

# reuse_known (many sites, each with known advice) under
# HOTBUF_REPORT=html: the page written at MPI_Finalize next to the text
# and the JSON.
html_mode() {
    local d=$work/html prog=build/openmpi/tests/reuse_known l
    selected html/report_mode || return 0
    l=$(launcher openmpi 2)
    if ! timeout 120 $l $prog >"$d/rk.plain" 2>&1 ||
        ! HOTBUF_THRESHOLD=100 HOTBUF_REPORT=html HOTBUF_REPORT_FILE=$d/rk timeout 200 \
            tools/hotbuf-run --mpi=openmpi -- $l $prog >"$d/rk.out" 2>"$d/rk.err"; then
        fail html/report_mode "reuse_known fails" "$d/rk.err"
    elif ! diff "$d/rk.plain" "$d/rk.out" >"$d/rk.diff"; then
        fail html/report_mode "output differs with hotbuf" "$d/rk.diff"
    elif [ ! -s "$d/rk.txt" ] || [ ! -s "$d/rk.json" ] || [ ! -s "$d/rk.html" ]; then
        ls -l "$d"/rk.* >"$d/rk.ls" 2>&1
        fail html/report_mode "PREFIX.txt, .json and .html not all written" "$d/rk.ls"
    elif ! html_load report_mode "$d/rk.html" --table classes:4 --table sites:9 --svg 4 \
        --text "reused (up to 10 uses), but below the threshold at this size (100 at 512 B)" \
        --text "persistent request, reused (up to 25 uses)" --text "reuse_known.c:26"; then
        fail html/report_mode "the page in Chromium" "$d/report_mode.check"
    else
        pass html/report_mode
    fi
}

# The site table sorts: a copy of html/report_mode's page with a click on
# its "calls" heading added after the page's own script.
html_sort() {
    local d=$work/html
    selected html/sort || return 0
    [ -s "$d/rk.html" ] || { fail html/sort "needs html/report_mode's page"; return; }
    sed 's|</body>|<script>document.querySelector("#sites thead th:nth-child(3)").click();</script></body>|' \
        "$d/rk.html" >"$d/sorted.html"
    if ! grep -q 'nth-child(3)").click' "$d/sorted.html"; then
        fail html/sort "the click was not added" "$d/sorted.html"
    elif html_load sort "$d/sorted.html" --table sites:9 --sorted sites:3; then
        pass html/sort
    else
        fail html/sort "the table did not sort by calls" "$d/sort.check"
    fi
}

# Before and after tuning: reuse_known at the default threshold and at
# HOTBUF_THRESHOLD=100 (html_mode's JSON), compared as text and as a page.
html_diff() {
    local d=$work/html prog=build/openmpi/tests/reuse_known
    selected html/diff || return 0
    [ -s "$d/rk.json" ] || { fail html/diff "needs html/report_mode's report"; return; }
    if ! HOTBUF_REPORT=json HOTBUF_REPORT_FILE=$d/rk-default timeout 200 \
        tools/hotbuf-run --mpi=openmpi -- $(launcher openmpi 2) $prog >/dev/null 2>"$d/diff.err"; then
        fail html/diff "reuse_known fails" "$d/diff.err"
    elif ! tools/hotbuf-report diff "$d/rk-default.json" "$d/rk.json" -o "$d/diff.html" \
        >"$d/diff.txt" 2>"$d/diff.err"; then
        fail html/diff "hotbuf-report diff fails" "$d/diff.err"
    elif ! grep -q '^site .*reuse_known.c:26' "$d/diff.txt" ||
        ! grep -q '^class *put' "$d/diff.txt"; then
        fail html/diff "the text lists no site or class" "$d/diff.txt"
    elif ! html_load diff "$d/diff.html" --table diff:13 --svg 1 --text "reuse_known.c:26"; then
        fail html/diff "the page in Chromium" "$d/diff.check"
    else
        pass html/diff
    fi
}

# The check itself: a page that fetches must fail it.
html_catches_fetch() {
    local d=$work/html
    selected html/catches_fetch || return 0
    printf '%s\n' '<!DOCTYPE html><html><body><p>x</p>' \
        '<img src="https://example.com/a.png"><script src="http://example.org/x.js"></script>' \
        '</body></html>' >"$d/fetch.html"
    if html_load catches_fetch "$d/fetch.html"; then
        fail html/catches_fetch "a page that fetches passed the check" "$d/catches_fetch.check"
    elif grep -q "fetched.*example.com" "$d/catches_fetch.check" &&
        grep -q "references the network" "$d/catches_fetch.check"; then
        pass html/catches_fetch
    else
        fail html/catches_fetch "the check failed for another reason" "$d/catches_fetch.check"
    fi
}

# Without matplotlib (hidden by a stand-in that fails to import), the job
# is unharmed: same output, text and JSON written, one line, no page.
html_no_matplotlib() {
    local d=$work/html/nompl prog=build/openmpi/tests/reuse_known l
    selected html/no_matplotlib || return 0
    mkdir -p "$d/py/matplotlib"
    echo 'raise ImportError("hidden by tests/html.sh")' >"$d/py/matplotlib/__init__.py"
    l=$(launcher openmpi 2)
    if ! timeout 120 $l $prog >"$d/plain" 2>&1 ||
        ! PYTHONPATH=$d/py HOTBUF_REPORT=html HOTBUF_REPORT_FILE=$d/r timeout 200 \
            tools/hotbuf-run --mpi=openmpi -- $l $prog >"$d/out" 2>"$d/err"; then
        fail html/no_matplotlib "the job fails" "$d/err"
    elif ! diff "$d/plain" "$d/out" >"$d/diff"; then
        fail html/no_matplotlib "output differs with hotbuf" "$d/diff"
    elif [ ! -s "$d/r.txt" ] || [ ! -s "$d/r.json" ] || [ -e "$d/r.html" ]; then
        ls -l "$d" >"$d/ls" 2>&1
        fail html/no_matplotlib "want text and JSON, no page" "$d/ls"
    elif [ "$(grep -c 'hotbuf: no HTML page: matplotlib is missing' "$d/err")" != 1 ] ||
        [ "$(grep -c 'HTML\|matplotlib' "$d/err")" != 1 ]; then
        fail html/no_matplotlib "want exactly one line about it" "$d/err"
    else
        pass html/no_matplotlib
    fi
}

# HOTBUF_REPORT=html from an installed tree with the source tree hidden
# (tests/install.sh's install_hidden): the library finds the installed
# PREFIX/bin/hotbuf-report.
html_installed() {
    local d=$work/html/installed p=$work/html/installed/prefix l prog
    selected html/installed || return 0
    mkdir -p "$d"
    make --no-print-directory -s install PREFIX="$p" >"$d/install.log" 2>&1 ||
        { fail html/installed "make install" "$d/install.log"; return; }
    prog=$p/libexec/hotbuf/openmpi/hotbuf-demo
    l=$(launcher openmpi 2)
    timeout 120 $l "$prog" >"$d/plain" 2>&1
    HOTBUF_REPORT=html HOTBUF_REPORT_FILE=$d/r install_hidden timeout 200 \
        "$p/bin/hotbuf-run" --mpi=openmpi -- $l "$prog" >"$d/out" 2>"$d/err"
    local rc=$?
    if [ $rc = 125 ]; then
        fail html/installed "cannot hide the source tree (unshare --mount)" "$d/err"
    elif [ $rc != 0 ] || ! cmp -s "$d/plain" "$d/out"; then
        fail html/installed "the demo fails (exit $rc) or differs under hotbuf" "$d/err"
    elif [ ! -s "$d/r.html" ] || ! grep -q '<svg' "$d/r.html"; then
        fail html/installed "no page from the installed hotbuf-report" "$d/err"
    else
        pass html/installed
    fi
    rm -rf "$p"
}

html_tests() {
    local t any=
    for t in demo report_mode sort diff catches_fetch no_matplotlib installed; do
        selected "html/$t" && any=1
    done
    [ -n "$any" ] || return 0
    if ! command -v chromium >/dev/null || ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
        echo "SKIP html/*: chromium or python3-matplotlib is not installed (scripts/install-deps.sh installs both)"
        return 0
    fi
    mkdir -p "$work/html" "$top/build/html"
    html_demo
    html_mode
    html_sort
    html_diff
    html_catches_fetch
    html_no_matplotlib
    declare -F install_hidden >/dev/null && html_installed
}
