"use strict";
// Shared by the node tests: the loader's pure part, and the repository's vector files.
const fs = require("node:fs");
const path = require("node:path");

const ROOT = path.resolve(__dirname, "..", "..");
// The built file: what every gwtar header carries (js/build.js makes it from js/src/loader.js).
const loader = require(path.join(ROOT, "js", "loader.js"));

function vectors(name) {
  return JSON.parse(fs.readFileSync(path.join(ROOT, "formats", "vectors", name), "utf8"));
}

// A deterministic pseudo-random generator, so property loops are reproducible.
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const enc = (s) => new TextEncoder().encode(s);
const concat = (...parts) => {
  const chunks = parts.map((p) => (typeof p === "string" ? enc(p) : p));
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) { out.set(c, at); at += c.length; }
  return out;
};

module.exports = { ROOT, loader, vectors, rng, enc, concat };
