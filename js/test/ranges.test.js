"use strict";
// Byte-range arithmetic: v1 offsets, request planning, Content-Range, multipart/byteranges parsing
// (including merged ranges and the fallbacks the loader takes), slicing parts.
const test = require("node:test");
const assert = require("node:assert/strict");
const { loader, rng, enc, concat } = require("./helpers.js");

const { manifestMembers, planRequests, firstSpans, rangeHeader, parseContentRange, boundaryOf, parseMultipart, sliceParts, parseHeader } = loader;

test("manifestMembers: v1 offsets, \"0\" first wherever it is in the text", () => {
  const assets = {
    "_archiver/ex/a.css": { size: 10, "content-type": "text/css", hash: "aa" },
    0: { size: 1000, "content-type": "text/html", basename: "index", hash: "00" },
    "_archiver/ex/b.png": { size: 512, "content-type": "image/png", hash: "bb" },
    "_archiver/ex/c.woff2": { size: 513, "content-type": "font/woff2", hash: "cc" },
  };
  const m = manifestMembers(assets, 5000, { main: "index.html", source: "tree" });
  assert.deepEqual(m.map((x) => [x.path, x.offset, x.size]), [
    ["index.html", 5000 + 512, 1000],
    ["_archiver/ex/a.css", 5000 + 512 + 1024 + 512, 10],
    ["_archiver/ex/b.png", 5000 + 512 + 1024 + 512 + 512 + 512, 512],
    ["_archiver/ex/c.woff2", 5000 + 512 + 1024 + 512 + 512 + 512 + 512 + 512, 513],
  ]);
  assert.equal(m[0].kind, "page");
  assert.equal(m[2].sha256, "bb");
});

test("manifestMembers: SingleFile names, and an empty page's zero-size member", () => {
  const assets = { 0: { size: 0, "content-type": "text/html", basename: "page", hash: "00" }, "page-asset-1.png": { size: 3, "content-type": "image/png", hash: "11" } };
  const m = manifestMembers(assets, 100, { source: "singlefile" });
  assert.deepEqual(m.map((x) => [x.path, x.offset]), [["page.html", 612], ["page/page-asset-1.png", 1124]]);
});

test("parseHeader reads the numbers, the manifest and the metadata of a header", () => {
  const text = '<html>\n<!-- Gwtar self-extracting HTML archive, v1 -->\n<body>\n<script>\nlet assets = {"0": {"size": 5}};\n</script>\n' +
    '<script>\nlet overhead = parseInt("000000001234");\nlet totalArchiveSize = parseInt("000000000000000000005678");\n</script>\n' +
    '<script type="application/json" id="archiver-gwtar">{"main":"a<\\/b.html","index":{"offset":"1"}}</script>\n</body>\n</html>\n<!-- GWTAR END\n';
  const h = parseHeader(text);
  assert.equal(h.overhead, 1234);
  assert.equal(h.total, 5678);
  assert.deepEqual(h.assets, { 0: { size: 5 } });
  assert.equal(h.meta.main, "a</b.html");
  assert.equal(parseHeader(text.replace("GWTAR END", "GWTAR")), null);
  assert.equal(parseHeader("<html>"), null);
});

test("planRequests merges neighbours across tar headers and packs multi-range batches under a budget", () => {
  const ranges = [{ start: 5000, end: 6000 }, { start: 1000, end: 2000 }, { start: 2512, end: 3000 }, { start: 1500, end: 1800 }, { start: 9000, end: 9000 }];
  assert.deepEqual(planRequests(ranges, { multi: false }).map((p) => p.spans), [[{ start: 1000, end: 3000 }], [{ start: 5000, end: 6000 }]]);
  assert.deepEqual(planRequests(ranges, { multi: true }).map((p) => p.spans), [[{ start: 1000, end: 3000 }, { start: 5000, end: 6000 }]]);
  assert.deepEqual(planRequests(ranges, { multi: true, gap: 0 }).map((p) => p.spans.length), [3]);
  const budgeted = planRequests([{ start: 0, end: 600 }, { start: 10000, end: 10600 }, { start: 20000, end: 20100 }], { multi: true, budget: 1000 });
  assert.deepEqual(budgeted.map((p) => p.bytes), [600, 700]);
  const big = planRequests([{ start: 0, end: 5000 }, { start: 9000, end: 9100 }], { multi: true, budget: 1000 });
  assert.deepEqual(big.map((p) => p.spans.length), [1, 1], "a span over the budget goes alone");
  assert.equal(planRequests(Array.from({ length: 70 }, (_, i) => ({ start: i * 5000, end: i * 5000 + 10 })), { multi: true, maxRanges: 32 }).length, 3);
});

test("planRequests property: every wanted range is inside exactly one planned span, spans never overlap (1,000 cases)", () => {
  const rand = rng(11);
  for (let n = 0; n < 1000; n++) {
    const ranges = Array.from({ length: 1 + Math.floor(rand() * 20) }, () => {
      const start = Math.floor(rand() * 100000);
      return { start, end: start + 1 + Math.floor(rand() * 5000) };
    });
    const opt = { multi: rand() < 0.5, gap: Math.floor(rand() * 2048), budget: 1000 + Math.floor(rand() * 20000), maxRanges: 1 + Math.floor(rand() * 8) };
    const plans = planRequests(ranges, opt);
    const spans = plans.flatMap((p) => p.spans);
    for (const r of ranges) assert.equal(spans.filter((s) => s.start <= r.start && r.end <= s.end).length, 1);
    for (let i = 1; i < spans.length; i++) assert.ok(spans[i].start > spans[i - 1].end + opt.gap);
    for (const p of plans) {
      assert.ok(p.spans.length <= (opt.multi ? opt.maxRanges : 1));
      assert.ok(p.spans.length === 1 || p.bytes <= opt.budget);
    }
  }
});

test("rangeHeader writes inclusive ends", () => {
  assert.equal(rangeHeader([{ start: 0, end: 100 }, { start: 200, end: 201 }]), "bytes=0-99,200-200");
});

test("parseContentRange and boundaryOf", () => {
  assert.deepEqual(parseContentRange("bytes 0-99/1234"), { start: 0, end: 100, total: 1234 });
  assert.deepEqual(parseContentRange("Bytes  5-5/*"), { start: 5, end: 6, total: null });
  assert.equal(parseContentRange("bytes */1234"), null);
  assert.equal(parseContentRange("bytes 9-5/10"), null);
  assert.equal(parseContentRange(null), null);
  assert.equal(boundaryOf("multipart/byteranges; boundary=3d6b6a416f9b5"), "3d6b6a416f9b5");
  assert.equal(boundaryOf('multipart/byteranges; charset=x; boundary="a b"'), "a b");
  assert.equal(boundaryOf("text/html"), null);
  assert.equal(boundaryOf(null), null);
});

// A multipart/byteranges body as a server writes it, from [start, end) ranges of `file`.
function multipart(file, ranges, { boundary = "BOUNDARY", eol = "\r\n", preamble = "" } = {}) {
  const parts = [preamble];
  for (const r of ranges) {
    parts.push(`${eol}--${boundary}${eol}Content-Type: application/octet-stream${eol}Content-Range: bytes ${r.start}-${r.end - 1}/${file.length}${eol}${eol}`);
    parts.push(file.subarray(r.start, r.end));
  }
  parts.push(`${eol}--${boundary}--${eol}`);
  return concat(...parts);
}

test("parseMultipart reads parts, CRLF or bare LF, a preamble, and binary data containing the boundary", () => {
  const file = enc("0123456789".repeat(50) + "--BOUNDARY\r\n" + "abcdef".repeat(20));
  const ranges = [{ start: 3, end: 17 }, { start: 495, end: 530 }, { start: 600, end: 620 }];
  for (const opts of [{}, { eol: "\n" }, { preamble: "ignored text" }]) {
    const parts = parseMultipart(multipart(file, ranges, opts), "BOUNDARY");
    assert.deepEqual(parts.map((p) => [p.start, p.end, p.total]), ranges.map((r) => [r.start, r.end, file.length]));
    parts.forEach((p, i) => assert.deepEqual(Array.from(p.data), Array.from(file.subarray(ranges[i].start, ranges[i].end))));
  }
  assert.deepEqual(parseMultipart(enc("not multipart at all"), "BOUNDARY"), []);
  const cut = multipart(file, ranges);
  assert.equal(parseMultipart(cut.subarray(0, cut.length - 40), "BOUNDARY").length, 2, "a truncated last part is dropped");
});

test("sliceParts: exact parts, merged (coalesced) parts, and missing ranges", () => {
  const file = enc("x".repeat(100) + "ABCDEFGHIJ" + "y".repeat(100));
  const wanted = [{ start: 100, end: 103 }, { start: 105, end: 110 }, { start: 150, end: 160 }];
  const merged = parseMultipart(multipart(file, [{ start: 100, end: 110 }]), "BOUNDARY");
  const got = sliceParts(wanted, merged);
  assert.equal(new TextDecoder().decode(got[0]), "ABC");
  assert.equal(new TextDecoder().decode(got[1]), "FGHIJ");
  assert.equal(got[2], null, "not covered: the loader asks for it again with a single range");
  const single = [{ start: 90, end: 200, data: file.subarray(90, 200) }];
  assert.equal(new TextDecoder().decode(sliceParts([{ start: 100, end: 110 }], single)[0]), "ABCDEFGHIJ", "one merged 206 range");
});

test("firstSpans: the page and what its first render needs, in one span when contiguous", () => {
  const assets = {
    0: { size: 2000, "content-type": "text/html", basename: "index", hash: "00" },
    "s/a.css": { size: 300, "content-type": "text/css", hash: "a" },
    "s/f.woff2": { size: 6000, "content-type": "font/woff2", hash: "f" },
    "s/f.woff": { size: 7000, "content-type": "font/woff", hash: "g" },
    "s/icon.ico": { size: 900, "content-type": "image/x-icon", hash: "i" },
    "s/hero.png": { size: 100000, "content-type": "image/png", hash: "h" },
    "s/app.js": { size: 500, "content-type": "text/javascript", hash: "j" },
    "s/two.png": { size: 3000, "content-type": "image/png", hash: "t" },
    "s/three.png": { size: 3000, "content-type": "image/png", hash: "u" },
    "s/film.mp4": { size: 50, "content-type": "video/mp4", hash: "v" },
    "s/after.css": { size: 50, "content-type": "text/css", hash: "w" },
  };
  const m = manifestMembers(assets, 40000, { main: "index.html", source: "tree" });
  const spans = firstSpans(m, m[0]);
  const names = spans.map((s) => s.members.map((x) => x.path.replace("s/", "")));
  // The WOFF file (7000 bytes) is a gap of its own; the icon (900 bytes) is fetched with its
  // neighbours rather than splitting the span; the third image, media and all after it are left.
  assert.deepEqual(names, [["index.html", "a.css", "f.woff2"], ["hero.png", "app.js", "two.png"]]);
  for (const s of spans) {
    assert.equal(s.start, s.members[0].offset);
    const last = s.members[s.members.length - 1];
    assert.equal(s.end, last.offset + last.size);
  }
  assert.deepEqual(firstSpans(m, null), []);
  // Never over 4 MiB in all, never a member over 2 MiB.
  const big = {
    0: { size: 1000, "content-type": "text/html", basename: "index", hash: "00" },
    "x.png": { size: 3 << 20, "content-type": "image/png", hash: "x" },
    "y.css": { size: 2 << 20, "content-type": "text/css", hash: "y" },
    "z.css": { size: 2 << 20, "content-type": "text/css", hash: "z" },
  };
  const mb = manifestMembers(big, 0, { main: "index.html", source: "tree" });
  assert.deepEqual(firstSpans(mb, mb[0]).flatMap((s) => s.members.map((x) => x.path)), ["index.html", "y.css"]);
});
