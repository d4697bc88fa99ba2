"""Read the finished report as a person would: headless Chromium renders ``results/report.html``
(Snakemake's self-contained report, a React page whose files are embedded as data URIs), shows
every embedded figure through the report's own viewer, and takes a screenshot.

:func:`check` copies the HTML to a scratch folder, appends a probe script that waits for the
report's ``app`` to start, then calls ``app.setView`` for each image result (what a click on its
"view" button does) and records the rendered ``<img>``'s natural size, and for each HTML result
(a table) whether its document holds a ``<table>``; the probe writes its findings as JSON into a
``<pre id="tileport-probe">`` that ``chromium --dump-dom`` returns. A second run of the same page
with ``--screenshot`` keeps a PNG of the report showing the first figure (or ``show``).

Debian's ``chromium`` package (``/usr/bin/chromium``); as root it needs ``--no-sandbox``.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

PROBE = """
<script>
(function () {
  var SHOW = %(show)s;
  function finish(out) {
    var pre = document.createElement('pre');
    pre.id = 'tileport-probe';
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }
  function start() {
    if (typeof app === 'undefined' || !app || typeof results === 'undefined') { return setTimeout(start, 100); }
    var keys = Object.keys(results);
    var images = keys.filter(function (k) { return (results[k].mime_type || '').indexOf('image/') === 0; });
    var htmls = keys.filter(function (k) { return results[k].mime_type === 'text/html'; });
    var out = {title: document.title, results: keys.length, categories: Object.keys(categories),
               app_text: document.getElementById('app').innerText.slice(0, 4000), images: {}, tables: {}};
    htmls.forEach(function (k) {
      var uri = results[k].data_uri, text = '';
      try { text = atob(uri.slice(uri.indexOf('base64,') + 7)); } catch (e) { text = ''; }
      out.tables[k] = {bytes: text.length, rows: (text.match(/<tr/g) || []).length};
    });
    var i = 0, tries = 0;
    function show(path, then) {
      app.setView({content: 'img', contentPath: results[path].data_uri, resultPath: path});
      tries = 0;
      (function wait() {
        var img = Array.prototype.find.call(document.querySelectorAll('img'), function (im) {
          return im.getAttribute('src') === results[path].data_uri; });
        if (img && img.complete && img.naturalWidth > 0) {
          return then({width: img.naturalWidth, height: img.naturalHeight, bytes: results[path].data_uri.length});
        }
        if (++tries > 100) { return then({width: 0, height: 0, bytes: results[path].data_uri.length,
                                           error: img ? 'image did not load' : 'no <img> shown'}); }
        setTimeout(wait, 50);
      })();
    }
    function next() {
      if (i >= images.length) {
        var last = SHOW && results[SHOW] ? SHOW : images[0];
        if (!last) { return finish(out); }
        // the screenshot's view: the result with its caption in the menu, as a click shows it
        var kind = results[last].mime_type === 'text/html' ? 'html' : 'img';
        app.setView({navbarMode: 'resultinfo', resultPath: last, content: kind,
                     contentPath: results[last].data_uri});
        return setTimeout(function () { finish(out); }, 500);
      }
      var p = images[i++];
      show(p, function (r) { out.images[p] = r; next(); });
    }
    next();
  }
  window.addEventListener('load', function () { setTimeout(start, 100); });
})();
</script>
"""


class BrowserError(RuntimeError):
    """Chromium is missing, failed, or the page did not render the probe's findings."""


def chromium() -> str:
    """Path of the Chromium binary (``$TILEPORT_CHROMIUM``, then ``chromium``,
    ``chromium-browser`` on PATH). Raises BrowserError naming the Debian package."""
    for c in (os.environ.get("TILEPORT_CHROMIUM"), "chromium", "chromium-browser"):
        if c and shutil.which(c):
            return shutil.which(c)
    raise BrowserError("chromium not found: install Debian's chromium package "
                       "(apt-get install chromium; make test-deps does)")


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    base = [chromium(), "--headless", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
            "--virtual-time-budget=30000", "--run-all-compositor-stages-before-draw"]
    if os.geteuid() == 0:
        base.append("--no-sandbox")
    with tempfile.TemporaryDirectory() as profile:
        try:
            return subprocess.run(base + [f"--user-data-dir={profile}", *args], capture_output=True,
                                  text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise BrowserError(f"chromium did not finish within {timeout} s") from exc


def check(report_html: str | Path, screenshot: str | Path | None = None, show: str | None = None,
          size: tuple[int, int] = (1400, 1000), timeout: float = 180) -> dict:
    """Render ``report_html`` in headless Chromium and return the probe's findings:
    ``{"title", "results" (embedded files), "categories", "app_text" (the page's visible text),
    "images": {path: {"width", "height", "bytes"[, "error"]}}, "tables": {path: {"bytes",
    "rows"}}}``. With ``screenshot``, also write a PNG (``size`` pixels) of the report showing
    the result ``show`` (a path as the report lists it, an image or an HTML table; default the
    first image) with its caption in the menu.

    Raises:
        BrowserError: no Chromium, Chromium failed, or the page never ran the probe (the report
            did not load).
    """
    html = Path(report_html).read_text()
    if "</body>" not in html:
        raise BrowserError(f"{report_html}: no </body>: not an HTML report")
    probe = PROBE % {"show": json.dumps(show)}
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        head, _, tail = html.rpartition("</body>")     # the page's own (libraries hold the string too)
        page.write_text(head + probe + "</body>" + tail)
        url = page.as_uri()
        p = _run(["--dump-dom", url], timeout)
        m = re.search(r'<pre id="tileport-probe">(.*?)</pre>', p.stdout, re.S)
        if not m:
            raise BrowserError(f"{report_html}: the page did not finish rendering in Chromium "
                               f"(exit {p.returncode}): {p.stderr.strip()[-800:]}")
        import html as _html

        found = json.loads(_html.unescape(m.group(1)))
        if screenshot:
            Path(screenshot).parent.mkdir(parents=True, exist_ok=True)
            s = _run([f"--screenshot={Path(screenshot).resolve()}", f"--window-size={size[0]},{size[1]}", url],
                     timeout)
            if not Path(screenshot).is_file():
                raise BrowserError(f"chromium wrote no screenshot (exit {s.returncode}): {s.stderr.strip()[-800:]}")
    return found


if __name__ == "__main__":
    import sys

    out = check(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
    print(json.dumps({k: v for k, v in out.items() if k != "app_text"}, indent=1))
