"use strict";
// Tree paths and hrefs: rel() and resolveRef() against formats/vectors/rel.json (tree.md section 5),
// percent-encoding, routes.
const test = require("node:test");
const assert = require("node:assert/strict");
const { loader, vectors, rng } = require("./helpers.js");

const { rel, resolveRef, encodeSegment, decodeSegment, routeHash, parseRoute } = loader;
const rows = vectors("rel.json").rows;

test("rel() writes every href of formats/vectors/rel.json", () => {
  for (const row of rows) assert.equal(rel(row.from, row.to), row.want, JSON.stringify(row));
});

test("resolveRef() reads every href of rel.json back to its tree path", () => {
  for (const row of rows) {
    const r = resolveRef(row.from, row.want);
    assert.equal(r.path, row.to, JSON.stringify(row));
    assert.equal(r.fragment, null);
  }
});

test("encodeSegment keeps exactly tree.md's safe set literal", () => {
  assert.equal(encodeSegment("a b?c#d%e:f"), "a%20b%3Fc%23d%25e%3Af");
  assert.equal(encodeSegment("b's (1).png"), "b's%20(1).png");
  assert.equal(encodeSegment("caf\u00e9"), "caf%C3%A9");
  assert.equal(encodeSegment("!$&'()*+,;=@-._~"), "!$&'()*+,;=@-._~");
  assert.equal(encodeSegment("\u{1F600}"), "%F0%9F%98%80");
});

test("decodeSegment decodes once and keeps invalid UTF-8 as written", () => {
  assert.equal(decodeSegment("a%252Fb"), "a%2Fb");
  assert.equal(decodeSegment("what%3F.html"), "what?.html");
  assert.equal(decodeSegment("caf%C3%A9%20menu"), "caf\u00e9 menu");
  assert.equal(decodeSegment("bad%FFbyte"), "bad%FFbyte");
  assert.equal(decodeSegment("lone%"), "lone%");
  assert.equal(decodeSegment("%zz"), "%zz");
});

test("resolveRef: fragments, queries, folders, root-absolute, other schemes", () => {
  const from = "docs/intro/index.html";
  assert.deepEqual(resolveRef(from, "#top"), { path: null, query: null, fragment: "top" });
  assert.deepEqual(resolveRef(from, "../faq.html#offline"), { path: "docs/faq.html", query: null, fragment: "offline" });
  assert.deepEqual(resolveRef(from, "a.css?v=3"), { path: "docs/intro/a.css", query: "v=3", fragment: null });
  assert.equal(resolveRef(from, "./").path, "docs/intro/index.html");
  assert.equal(resolveRef(from, "..").path, "docs/index.html");
  assert.equal(resolveRef(from, "/css/main.css").path, "css/main.css");
  assert.equal(resolveRef(from, "/").path, "index.html");
  assert.equal(resolveRef(from, "../../../../x.png").path, "x.png", "never above the root");
  assert.equal(resolveRef(from, "  ../x.png \n").path, "docs/x.png", "HTML strips spaces around URLs");
  assert.equal(resolveRef(from, "../x\t.png").path, "docs/x.png", "tabs and newlines are removed");
  for (const ref of ["https://ex.com/a", "//ex.com/a", "mailto:a@b", "data:,x", "blob:x", "javascript:void(0)", "", "   "]) {
    assert.equal(resolveRef(from, ref), null, ref);
  }
  assert.equal(resolveRef(from, "icons.svg#icon-leaf").fragment, "icon-leaf");
});

test("rel/resolveRef round trip over random tree paths (2,000 pairs)", () => {
  const rand = rng(7);
  const alphabet = ["a", "b", "index.html", "x y", "what?", "hash#1", "caf\u00e9", "a%2Fb", "p%25q", "k:8080", "(1)", "\u00fc\u00df", "_archiver", "ex.com", "z.css"];
  const pick = () => alphabet[Math.floor(rand() * alphabet.length)];
  const tree = () => Array.from({ length: 1 + Math.floor(rand() * 4) }, pick).join("/");
  for (let i = 0; i < 2000; i++) {
    const from = tree(), to = tree();
    assert.equal(resolveRef(from, rel(from, to)).path, to, `${from} -> ${to}`);
  }
});

test("routes encode paths like hrefs and carry an optional fragment", () => {
  assert.equal(routeHash("what?.html"), "#/what%3F.html");
  assert.equal(routeHash("docs/faq.html", "offline"), "#/docs/faq.html#offline");
  assert.deepEqual(parseRoute("#/docs/faq.html#offline"), { path: "docs/faq.html", query: null, fragment: "offline" });
  assert.deepEqual(parseRoute("#/caf%C3%A9%20menu/index.html"), { path: "caf\u00e9 menu/index.html", query: null, fragment: null });
  assert.deepEqual(parseRoute("#/docs/"), { path: "docs/index.html", query: null, fragment: null });
  assert.deepEqual(parseRoute("#top"), { path: null, query: null, fragment: "top" });
  assert.deepEqual(parseRoute(""), { path: null, query: null, fragment: null });
  assert.deepEqual(parseRoute("#/"), { path: null, query: null, fragment: null });
  for (const p of ["a/b c/d?.html", "hash#1.png", "a%2Fb/index.html"]) assert.equal(parseRoute(routeHash(p, "f")).path, p);
});

test("routes carry a query: the search page's ?q= lives in the route, never in the file's address", () => {
  assert.equal(routeHash("_archiver/search/index.html", null, "q=kit"), "#/_archiver/search/index.html?q=kit");
  assert.equal(routeHash("a b.html", "sec", "q=x%20y"), "#/a%20b.html?q=x%20y#sec");
  assert.deepEqual(parseRoute("#/_archiver/search/index.html?q=%E4%BA%BA%E6%B0%91"),
    { path: "_archiver/search/index.html", query: "q=%E4%BA%BA%E6%B0%91", fragment: null });
  assert.deepEqual(parseRoute("#/docs/?q=a#top"), { path: "docs/index.html", query: "q=a", fragment: "top" });
  assert.deepEqual(parseRoute("#/x.html?"), { path: "x.html", query: "", fragment: null });
  /* a "#" inside the query belongs to the fragment; a "?" in a member's name is always %3F */
  assert.deepEqual(parseRoute("#/what%3F.html?q=a?b#c?d"), { path: "what?.html", query: "q=a?b", fragment: "c?d" });
  for (const p of ["a/b c/d?.html", "hash#1.png", "what?.html", "中文/index.html"]) {
    for (const q of [null, "", "q=" + encodeURIComponent("a \"b\" #?&c")]) {
      const r = parseRoute(routeHash(p, "f", q));
      assert.deepEqual(r, { path: p, query: q, fragment: "f" }, p + " " + q);
    }
  }
});
