#!/usr/bin/env python3
"""Drives kforge's HTML report in headless Chromium over the DevTools protocol.

The protocol runs over a pipe (--remote-debugging-pipe: commands on the browser's fd 3,
answers on its fd 4, each message JSON ended by a NUL byte), so it needs nothing but the
standard library and Debian's `chromium`: no websocket module, no npm, no browser download.
Input is real: clicks are mouse events dispatched at an element's position on the page.

    report_browser.py check REPORT.html      click a task, then a candidate, read its diff;
                                             hostile content must stay text (report_detail_test)
    report_browser.py measure REPORT.html    load and filter timings of a large report
    report_browser.py screenshots REPORT.html DIR TASK SAMPLE
                                             docs/img/report-{tasks,candidate,diff}.png

Exit status: 0 when every check held, 1 otherwise (each failure printed), 2 for bad usage.
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """One headless Chromium with one page, spoken to over the DevTools pipe."""

    def __init__(self, width=1400, height=900):
        chromium = find_chromium()
        if chromium is None:
            raise RuntimeError("chromium is not installed (scripts/install-deps.sh installs it)")
        self.profile = tempfile.mkdtemp(prefix="kforge-chromium-")
        to_browser_read, self.to_browser = os.pipe()
        self.from_browser, from_browser_write = os.pipe()

        def give_pipe_fds():
            # The browser reads commands on fd 3 and writes answers on fd 4.
            read, write = os.dup(to_browser_read), os.dup(from_browser_write)
            os.dup2(read, 3)
            os.dup2(write, 4)

        self.process = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-extensions", "--no-first-run", "--no-default-browser-check",
             "--user-data-dir=" + self.profile, f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=give_pipe_fds, close_fds=False)
        os.close(to_browser_read)
        os.close(from_browser_write)
        self.buffer = b""
        self.next_id = 0
        self.events = []
        self.requests = []
        target = next(t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=target["targetId"], flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Network"):
            self.call(domain + ".enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:  # the browser may be gone already; it is killed below either way
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self.to_browser)
        os.close(self.from_browser)
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read_message(self, deadline):
        while b"\0" not in self.buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from chromium")
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.buffer += chunk
        message, _, self.buffer = self.buffer.partition(b"\0")
        return json.loads(message)

    def _note(self, message):
        self.events.append(message)
        if message.get("method") == "Network.requestWillBeSent":
            self.requests.append(message["params"]["request"]["url"])

    def call(self, method, session=False, timeout=60, **params):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self._note(answer)

    def wait_event(self, method, timeout=120):
        for i, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            message = self._read_message(deadline)
            self._note(message)
            if message.get("method") == method:
                self.events.remove(message)
                return message

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, url):
        self.events.clear()
        started = time.monotonic()
        self.call("Page.navigate", session=True, url=url)
        self.wait_event("Page.loadEventFired")
        return time.monotonic() - started

    def wait_for(self, expression, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.05)
        raise TimeoutError(f"still false after {timeout} s: {expression}")

    def click(self, selector):
        """A real click: mouse pressed and released at the middle of the element."""
        box = self.evaluate(
            "(function () { var e = document.querySelector(%s); if (!e) return null;"
            " e.scrollIntoView({block: 'center'}); var r = e.getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()" % json.dumps(selector))
        if box is None:
            raise RuntimeError(f"nothing on the page matches {selector}")
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", session=True, type=kind, x=box[0], y=box[1], button="left",
                      clickCount=1)

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", session=True, format="png")["data"]
        with open(path, "wb") as out:
            out.write(base64.b64decode(data))


def text_of(browser, selector):
    return browser.evaluate("(function () { var e = document.querySelector(%s); return e ? e.textContent : null; })()"
                            % json.dumps(selector))


NOT_MEASURED = [["reference"] + ["-"] * 7, ["candidate"] + ["-"] * 7]


def timing_rows(browser):
    """The open candidate's timing table, row by row, its first cell the party."""
    return browser.evaluate("Array.from(document.querySelectorAll('#candidate table.timing tbody tr'),"
                            " r => Array.from(r.cells, c => c.textContent))")


def script_errors(browser):
    return browser.evaluate("document.documentElement.getAttribute('data-script-errors')")


def open_report(browser, path):
    seconds = browser.open("file://" + os.path.abspath(path))
    browser.wait_for("document.documentElement.getAttribute('data-tasks-ready') === 'yes'")
    return seconds


def check(path):
    """The investigation path of report_detail_test's run (core/tests/support/investigation_run.hpp)."""
    problems = []

    def expect(condition, what):
        if not condition:
            problems.append(what)
        print(("ok   " if condition else "FAIL ") + what)

    browser = Browser()
    try:
        open_report(browser, path)
        rows = browser.evaluate("Array.from(document.querySelectorAll('#task-table tbody tr'), r => r.cells[0].textContent)")
        expect(rows == ["001_relu", "019_softmax", "666_hostile"], f"the task table lists the three tasks: {rows}")

        # Filter by status, then sort by a column: the table follows.
        browser.evaluate("(function () { var s = document.getElementById('filter-status');"
                         " s.value = Array.from(s.options).find(o => o.text === 'failed').value;"
                         " s.dispatchEvent(new Event('change')); })()")
        rows = browser.evaluate("Array.from(document.querySelectorAll('#task-table tbody tr'), r => r.cells[0].textContent)")
        expect(rows == ["666_hostile"], f"filtering on status 'failed' leaves the failed task: {rows}")
        browser.evaluate("(function () { var s = document.getElementById('filter-status'); s.value = '';"
                         " s.dispatchEvent(new Event('change')); })()")
        browser.click("#task-table th[data-key='id']")
        browser.click("#task-table th[data-key='id']")
        rows = browser.evaluate("Array.from(document.querySelectorAll('#task-table tbody tr'), r => r.cells[0].textContent)")
        expect(rows == ["666_hostile", "019_softmax", "001_relu"], f"two clicks on Task sort it descending: {rows}")

        # Task table -> task -> candidate -> its diff.
        browser.click("#task-table tbody tr[data-task='1'] td:nth-child(4)")
        browser.wait_for("!document.getElementById('detail-view').hidden")
        expect(text_of(browser, "#detail-view h2") == "Task 019_softmax", "a click on the row opens the task")
        expect(browser.evaluate("document.getElementById('overview').hidden"), "the overview is hidden meanwhile")
        browser.click("#candidate-table tr[data-sample='0'] a")
        browser.wait_for("document.querySelector('#candidate[data-sample=\"0\"] details.diff') !== null")
        diff = text_of(browser, "#candidate section.round[data-round='1'] pre.diff")
        expect(diff is not None and "-  return x;" in diff and "+  return exp(x) / sum;" in diff,
               f"the candidate's fix round shows its diff: {diff!r}")
        added = browser.evaluate("Array.from(document.querySelectorAll('#candidate pre.diff span.add'), s => s.textContent)")
        expect("+  return exp(x) / sum;" in (added or []), f"added lines are marked: {added}")
        heading = browser.evaluate("Array.from(document.querySelectorAll('#candidate table.timing thead th'),"
                                   " c => c.textContent)")
        expect(heading == ["", "mean (ms)", "std (ms)", "min (ms)", "median (ms)", "p90 (ms)", "max (ms)", "trials"],
               f"the timing table has a column per statistic: {heading}")
        timing = timing_rows(browser)
        expect(timing == [["reference", "2.1", "0.08", "1.8", "2", "2.2", "3", "100"],
                          ["candidate", "1.05", "0.04", "0.9", "1", "1.1", "1.5", "50"]],
               f"reference and candidate timings, every statistic: {timing}")
        facts = text_of(browser, "#candidate dl.facts")
        expect("glm-5.1" in facts and "$0.0120" in facts, f"model and cost: {facts!r}")
        browser.click("#candidate-table tr[data-sample='1'] a")
        browser.wait_for("document.querySelector('#candidate[data-sample=\"1\"]') !== null")
        log = browser.evaluate("Array.from(document.querySelectorAll('#candidate pre.log'), p => p.textContent).join('|')")
        expect("error: expected ';' before '}' token" in log, f"the compile log tail is there: {log!r}")
        summary = text_of(browser, "#candidate section.round[data-round='2'] details.code summary")
        expect(summary is not None and "unchanged from round 1" in summary, f"a fix that wrote nothing: {summary!r}")
        timing = timing_rows(browser)
        expect(timing == NOT_MEASURED, f"a candidate that never ran has a '-' for every statistic: {timing}")

        # What was not measured is a '-': a store from before the statistics (medians and p90s
        # only), a candidate measured for correctness without timing.
        browser.evaluate("location.hash = 'task=001_relu&sample=0'")
        browser.wait_for("document.querySelector('#candidate[data-sample=\"0\"]') !== null")
        timing = timing_rows(browser)
        expect(timing == [["reference", "-", "-", "-", "1", "1.1", "-", "-"],
                          ["candidate", "-", "-", "-", "0.8", "0.88", "-", "-"]],
               f"medians and p90s only: the other statistics are '-': {timing}")
        browser.evaluate("location.hash = 'task=001_relu&sample=1'")
        browser.wait_for("document.querySelector('#candidate[data-sample=\"1\"]') !== null")
        timing = timing_rows(browser)
        expect(timing == NOT_MEASURED, f"measured without timing: every statistic is '-': {timing}")
        stats = browser.evaluate("Array.from(document.querySelectorAll('#candidate table.stats tbody tr'),"
                                 " r => Array.from(r.cells, c => c.textContent))")
        expect(["max_abs_diff", "2.000e-6"] in (stats or []), f"its correctness statistics are still there: {stats}")

        # Back to the table, then to the hostile candidate: its markup stays text.
        browser.click("#back")
        browser.wait_for("!document.getElementById('overview').hidden")
        browser.click("#task-table tbody tr[data-task='2'] a")
        browser.wait_for("document.querySelector('#candidate') !== null")
        code = text_of(browser, "#candidate pre.code")
        expect(code is not None and code.startswith("</script><script>window.__pwned"),
               f"the hostile code is shown as text: {code!r}")
        message = text_of(browser, "#candidate dl.facts")
        expect("<img src=x onerror=" in message, "the hostile message is shown as text")
        timing = timing_rows(browser)
        expect(timing == NOT_MEASURED, f"the hostile candidate was not measured: {timing}")
        pwned = browser.evaluate("window.__pwned === undefined ? null : String(window.__pwned)")
        expect(pwned is None, f"no hostile script ran: window.__pwned = {pwned}")
        elements = browser.evaluate("document.querySelectorAll('img, svg[onload], #detail-view script').length")
        expect(elements == 0, f"no element came from candidate content: {elements}")

        errors = script_errors(browser)
        expect(errors is None, f"no script error on the page: {errors}")
        outside = [url for url in browser.requests if not url.startswith(("file://", "data:", "about:"))]
        expect(not outside, f"nothing is fetched from the network: {outside}")
    finally:
        browser.close()
    return 1 if problems else 0


def measure(path):
    """Load, filter and open times of a (large) report, printed as one JSON object."""
    browser = Browser()
    try:
        browser.call("Performance.enable", session=True)
        load = open_report(browser, path)
        # The renderer's main-thread busy time: on a loaded machine the wall clock also counts
        # the wait for a core.
        busy = {m["name"]: m["value"] for m in browser.call("Performance.getMetrics", session=True)["metrics"]}
        tasks = browser.evaluate("JSON.parse(document.getElementById('kf-index').textContent).tasks.length")
        ready = int(browser.evaluate("document.documentElement.getAttribute('data-tasks-ready-ms')"))
        filter_ms = browser.evaluate(
            "(function () { var s = document.getElementById('filter-status'), t = performance.now();"
            " s.value = Array.from(s.options).find(o => o.text === 'failed').value;"
            " s.dispatchEvent(new Event('change'));"
            " return performance.now() - t; })()")
        search_ms = browser.evaluate(
            "(function () { var s = document.getElementById('filter-text'), t = performance.now();"
            " s.value = '99'; s.dispatchEvent(new Event('input')); return performance.now() - t; })()")
        sort_ms = browser.evaluate(
            "(function () { var t = performance.now(); document.querySelector(\"#task-table th[data-key='best_speedup']\").click();"
            " return performance.now() - t; })()")
        open_ms = browser.evaluate(
            "(function () { var t = performance.now(); location.hash = document.querySelector('#task-table tbody a').getAttribute('href');"
            " return new Promise(r => setTimeout(() => r(performance.now() - t), 0)); })()")
        rows = browser.evaluate("document.querySelectorAll('#task-table tbody tr').length")
        print(json.dumps({"tasks": tasks, "load_event_s": round(load, 3), "table_ready_ms": ready,
                          "main_thread_busy_s": round(busy.get("TaskDuration", 0), 2),
                          "script_s": round(busy.get("ScriptDuration", 0), 2),
                          "filter_status_ms": round(filter_ms, 1), "search_ms": round(search_ms, 1),
                          "sort_ms": round(sort_ms, 1), "open_task_ms": round(open_ms, 1),
                          "table_rows_in_dom": rows, "script_errors": script_errors(browser),
                          "html_mb": round(os.path.getsize(path) / 2**20, 1)}))
    finally:
        browser.close()
    return 0


def screenshots(path, directory, task, sample):
    browser = Browser(width=1280, height=1000)
    try:
        open_report(browser, path)
        browser.evaluate("document.getElementById('task-browser').scrollIntoView()")
        browser.screenshot(os.path.join(directory, "report-tasks.png"))
        browser.evaluate("location.hash = 'task=' + encodeURIComponent(%s) + '&sample=' + %s"
                         % (json.dumps(task), json.dumps(str(sample))))
        browser.wait_for("document.querySelector('#candidate') !== null")
        browser.evaluate("document.getElementById('candidate').scrollIntoView()")
        browser.screenshot(os.path.join(directory, "report-candidate.png"))
        browser.evaluate("(function () { var d = document.querySelector('#candidate details.diff');"
                         " if (d) { d.scrollIntoView(); window.scrollBy(0, -40); } })()")
        browser.screenshot(os.path.join(directory, "report-diff.png"))
    finally:
        browser.close()
    return 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "check":
        return check(argv[1])
    if len(argv) >= 2 and argv[0] == "measure":
        return measure(argv[1])
    if len(argv) == 5 and argv[0] == "screenshots":
        return screenshots(*argv[1:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
