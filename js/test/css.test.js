"use strict";
// CSS references (url(), @import, image-set, @font-face candidates), srcset, module specifiers,
// charset sniffing.
const test = require("node:test");
const assert = require("node:assert/strict");
const { loader, enc } = require("./helpers.js");

const { scanCss, rewriteCss, cssUnescape, parseSrcset, serializeSrcset, scanModule, sniffCharset } = loader;
const refs = (css) => scanCss(css).map((r) => [r.kind, r.url]);

test("url() in every form, comments skipped, escapes decoded", () => {
  const css = 'a{background:url(a.png)} b{background:URL( "b b.png" )} c{x:url(\'c.png\')} /* url(no.png) */ d{y:url(../img/we\\(ird\\).png)} e{z:url( spaced.png )}';
  assert.deepEqual(refs(css), [["url", "a.png"], ["url", "b b.png"], ["url", "c.png"], ["url", "../img/we(ird).png"], ["url", "spaced.png"]]);
  assert.equal(cssUnescape("\\31 23\\\"x"), '123"x');
});

test("@import in its four forms, and a url() in a string is not a reference", () => {
  const css = '@import url(a.css);\n@import "b.css";\n@import url(\'c.css\') screen;\n@import url("d.css") print;\n.x{content:"url(no.png)"}';
  assert.deepEqual(refs(css), [["import", "a.css"], ["import", "b.css"], ["import", "c.css"], ["import", "d.css"]]);
});

test("@font-face: the first supported candidate is the font, the others are alternatives", () => {
  const css = '@font-face{font-family:X;src:url(x.eot?#iefix) format("embedded-opentype"), local("X"), url(x.woff2) format("woff2"), url(x.woff) format(woff), url("x.ttf") format("truetype")}\nbody{background:url(bg.png)}';
  assert.deepEqual(refs(css), [["font-alt", "x.eot?#iefix"], ["font", "x.woff2"], ["font-alt", "x.woff"], ["font-alt", "x.ttf"], ["url", "bg.png"]]);
  assert.deepEqual(refs("@font-face{src:url(a.woff2)}"), [["font", "a.woff2"]]);
  assert.deepEqual(refs("@font-face{font-family:Y;src:url(a.svg#f) format('svg')}"), [["font-alt", "a.svg#f"]]);
});

test("image-set strings, @namespace, @media and @supports nesting, custom properties", () => {
  const css = '@namespace svg url(http://www.w3.org/2000/svg);\n.a{background-image:image-set("a1.png" 1x, url(a2.png) 2x)}\n.b{background:-webkit-image-set("b.png" 1x)}\n' +
    "@media (min-width:1px){@supports (display:grid){.c{background:url(c.png)}}}\n:root{--bg:url(d.png)}";
  assert.deepEqual(refs(css), [["url", "a1.png"], ["url", "a2.png"], ["url", "b.png"], ["url", "c.png"], ["url", "d.png"]]);
});

test("rewriteCss replaces exactly the references it is given and quotes safely", () => {
  const css = '@import "a.css"; .x{background:url(b.png) no-repeat} .y{background:url(keep.png)}';
  const out = rewriteCss(css, scanCss(css), (r) => (r.url === "keep.png" ? null : "blob:" + r.url + '"q'));
  assert.equal(out, '@import "blob:a.css\\"q"; .x{background:url("blob:b.png\\"q") no-repeat} .y{background:url(keep.png)}');
  assert.deepEqual(refs(out).map((r) => r[1]), ['blob:a.css"q', 'blob:b.png"q', "keep.png"]);
});

test("srcset: commas inside URLs, descriptor-less candidates, descriptors with parentheses", () => {
  assert.deepEqual(parseSrcset("/img/w_600,c_fill/photo.jpg 600w,/img/w_1200,c_fill/photo.jpg 1200w"), [
    { url: "/img/w_600,c_fill/photo.jpg", descriptor: "600w" },
    { url: "/img/w_1200,c_fill/photo.jpg", descriptor: "1200w" },
  ]);
  assert.deepEqual(parseSrcset("a.png, b.png 2x"), [{ url: "a.png", descriptor: "" }, { url: "b.png", descriptor: "2x" }]);
  assert.deepEqual(parseSrcset("  a.png 1x  ,  data:,gwtar-3- 2x , "), [{ url: "a.png", descriptor: "1x" }, { url: "data:,gwtar-3-", descriptor: "2x" }]);
  assert.deepEqual(parseSrcset("x.png foo(1, 2) 2x, y.png"), [{ url: "x.png", descriptor: "foo(1, 2) 2x" }, { url: "y.png", descriptor: "" }]);
  const s = "a%20b.png 1x, hash%231.png 2x";
  assert.equal(serializeSrcset(parseSrcset(s)), s);
});

test("scanModule finds static, re-export and dynamic import specifiers", () => {
  const js = 'import a from "./a.mjs";\nimport {b, c} from \'../b.mjs\';\nimport "./side.mjs";\nexport * from "./re.mjs";\nconst m = await import("./dyn.mjs");\nimport x from "bare";';
  assert.deepEqual(scanModule(js).map((s) => s.spec), ["./a.mjs", "../b.mjs", "./side.mjs", "./re.mjs", "./dyn.mjs", "bare"]);
  for (const s of scanModule(js)) assert.equal(JSON.parse(js.slice(s.start, s.end).replace(/'/g, '"')), s.spec);
});

test("sniffCharset: BOM, meta charset, http-equiv, default", () => {
  assert.equal(sniffCharset(new Uint8Array([0xef, 0xbb, 0xbf, 0x3c])), "utf-8");
  assert.equal(sniffCharset(new Uint8Array([0xff, 0xfe, 0x3c, 0])), "utf-16le");
  assert.equal(sniffCharset(enc('<html><head><meta charset="ISO-8859-1">')), "iso-8859-1");
  assert.equal(sniffCharset(enc('<meta http-equiv="Content-Type" content="text/html; charset=windows-1252">')), "windows-1252");
  assert.equal(sniffCharset(enc("<p>plain")), "utf-8");
});
