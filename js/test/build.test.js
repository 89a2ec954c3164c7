"use strict";
// js/loader.js is what js/build.js makes of js/src/loader.js, keeps its meaning, and can sit inside a
// script element.
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const { build, squeeze, SRC, OUT } = require("../build.js");

test("js/loader.js is up to date with js/src/loader.js (run `node js/build.js`)", () => {
  assert.equal(fs.readFileSync(OUT, "utf8"), build(fs.readFileSync(SRC, "utf8")));
});

test("squeeze drops spaces next to punctuation, and only there", () => {
  const sq = (line) => squeeze(line, { last: "" });
  assert.equal(sq("  const a = b + c;"), "const a=b+c;");
  assert.throws(() => sq("const a = 1; // x"), /comment after code/);
  assert.equal(sq('x = "a = b , c" + y;'), 'x="a = b , c"+y;');
  assert.equal(sq("if (a) return /a b [/ ]c/gi.test(s);"), "if(a)return/a b [/ ]c/gi.test(s);");
  assert.equal(sq("const r = x.replace(/ +/g, \" \"), d = a / b / c;"), 'const r=x.replace(/ +/g," "),d=a/b/c;');
  assert.equal(sq("a + +b - -c"), "a+ +b- -c");
  assert.equal(sq("catch (e) { /* ignore */ }"), "catch(e){}");
  assert.equal(sq("return typeof x === 'y' ? new Map() : null;"), "return typeof x==='y'?new Map():null;");
  assert.throws(() => sq("const t = `x`;"), /template literals/);
});

test("the build refuses what would break the header", () => {
  for (const bad of ["x = '</scr' + 'ipt>'".replace("' + '", ""), "a = '<!-- b'", "x = 'caf\u00e9'", "x = i-- > 0"]) {
    assert.throws(() => build(bad), /cannot be embedded/, bad);
  }
  assert.equal(build("  // a comment\n\n  /* block\n   more */\n  const a = 1;\n"), build("const a = 1;"));
});

test("the built file exports the same pure functions as the source, with the same results", () => {
  const built = require(OUT), source = require(SRC);
  assert.deepEqual(Object.keys(built).sort(), Object.keys(source).sort());
  const css = '@import "a.css"; @font-face{src:url(x.woff2) format("woff2"), url(x.ttf)} b{background:url( "c d.png" )}';
  assert.deepEqual(built.scanCss(css), source.scanCss(css));
  assert.deepEqual(built.parseSrcset("a.png 1x, b,c.png 2x"), source.parseSrcset("a.png 1x, b,c.png 2x"));
  assert.deepEqual(built.resolveRef("a/b/c.html", "../d%20e.png?x#y"), source.resolveRef("a/b/c.html", "../d%20e.png?x#y"));
});
