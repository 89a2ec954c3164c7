"""The diff page of an ``--all-versions`` gwtar (formats/gwtar.md §13.4): one constant HTML member,
``_archiver/versions/diff.html``, that the loader's version picker links to with the route query
``from=<id>&to=<id>&path=<tree path>``. Shown by the loader like any page, its script reads both
versions of the page through ``window.gwtar`` (``url`` of ``@<id>/<path>``, checked against its
SHA-256 as every member is), takes the text a reader sees (title, headings, paragraphs, list items,
cells, without navigation, scripts and styles: formats/history.md §5) one block a line, and shows a
line diff (longest common subsequence). Every text goes in by ``textContent``: a page's words never
become markup."""

from __future__ import annotations

__all__ = ["DIFF_PAGE", "PATH"]

PATH = "_archiver/versions/diff.html"

DIFF_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>What changed</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:52em;margin:2em auto;padding:0 1em}
pre{white-space:pre-wrap;overflow-wrap:anywhere}.add{background:#dfd}.del{background:#fdd}
.same{color:#555}</style></head>
<body><h1 id="gwtar-diff-title">What changed</h1><p id="gwtar-diff-sides"></p>
<pre id="gwtar-diff"></pre>
<script>
(async function () {
  "use strict";
  var g = window.gwtar, out = document.getElementById("gwtar-diff");
  var q = new URLSearchParams(g && g.route ? g.route().query || "" : "");
  var from = q.get("from"), to = q.get("to"), path = q.get("path");
  if (!g || !g.url || !from || !to || !path) {
    out.textContent = "Open this page from the version picker of a page in the archive.";
    return;
  }
  var list = JSON.parse(await (await fetch(await g.url("_archiver/gwtar-versions.json"))).text()).versions;
  var newest = list[list.length - 1].id;
  function route(id) { return id === newest ? path : "@" + id + "/" + path; }
  async function text(id) {
    var u = await g.url(route(id));
    if (!u) return [];
    var d = new DOMParser().parseFromString(await (await fetch(u)).text(), "text/html");
    d.querySelectorAll("script,style,nav,noscript,template").forEach(function (e) { e.remove(); });
    var blocks = d.querySelectorAll("title,h1,h2,h3,h4,h5,h6,p,li,pre,td,th,dt,dd,blockquote,figcaption");
    return Array.prototype.map.call(blocks, function (e) {
      return e.textContent.replace(/\\s+/g, " ").trim();
    }).filter(function (t) { return t; });
  }
  function diff(a, b) {
    var n = a.length, m = b.length, L = [], res = [], i, j;
    if (n * m > 4e6) {
      return a.map(function (x) { return ["-", x]; }).concat(b.map(function (x) { return ["+", x]; }));
    }
    for (i = n; i >= 0; i--) {
      L[i] = new Uint32Array(m + 1);
      for (j = m - 1; i < n && j >= 0; j--) {
        L[i][j] = a[i] === b[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
      }
    }
    for (i = 0, j = 0; i < n || j < m;) {
      if (i < n && j < m && a[i] === b[j]) { res.push([" ", a[i]]); i++; j++; }
      else if (j < m && (i >= n || L[i][j + 1] >= L[i + 1][j])) res.push(["+", b[j++]]);
      else res.push(["-", a[i++]]);
    }
    return res;
  }
  function date(id) { var e = list.find(function (x) { return x.id === id; }); return e ? e.date : id; }
  document.getElementById("gwtar-diff-title").textContent = path;
  var sides = document.getElementById("gwtar-diff-sides");
  [from, to].forEach(function (id, k) {
    var a = document.createElement("a");
    a.href = g.href(route(id));
    a.textContent = date(id);
    sides.append(k ? " \\u2192 " : "From ", a);
  });
  var both = await Promise.all([text(from), text(to)]);
  diff(both[0], both[1]).forEach(function (r) {
    var div = document.createElement("div");
    div.className = r[0] === "+" ? "add" : r[0] === "-" ? "del" : "same";
    div.textContent = r[0] + " " + r[1];
    out.append(div);
  });
  out.setAttribute("data-done", "");
})();
</script>
</body></html>
"""
