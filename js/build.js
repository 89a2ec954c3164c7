"use strict";
// Build js/loader.js, the file the gwtar writer embeds in every header, from js/src/loader.js, the
// readable source. The header must stay under 48 KB besides the v1 manifest, so the build drops
// comments, blank lines, indentation and the spaces next to punctuation; identifiers, statements and
// line breaks are kept, so the built file still reads line for line like the source.
//
// The stripping needs a tokenizer only as good as the source is disciplined: strings are single or
// double quoted (no template literals, no string spanning lines), a comment after code on a line is
// a /* block */, and a regular expression literal follows one of ( , = : [ ! & | ? { } ; + - * % < >
// or return/typeof/case/in/of. The build refuses a source with a template literal and an output
// that would break the script element (not ASCII, or holding </script, <script, <!-- or -->); the
// tests run on the built file, in node and in Chromium.
//
//   node js/build.js           write js/loader.js
//   node js/build.js --check   exit 1 if js/loader.js is not what the source builds to
const fs = require("node:fs");
const path = require("node:path");

const SRC = path.join(__dirname, "src", "loader.js");
const OUT = path.join(__dirname, "loader.js");
const BANNER = "/* gwtar loader (archiver gwtar extension 1, formats/gwtar.md section 7), built by js/build.js from\n" +
  " * js/src/loader.js: read that file and js/README.md for the commented source. One global: window.gwtar. */\n";
const PUNCT = "{}()[];,:=+-*/<>!&|?%^~";
const BEFORE_REGEX = "(,=:[!&|?{};+-*%<>~^";

// One line of code without its indentation and the spaces next to punctuation. `state.last` is the
// last significant character so far (a regex literal may start a line).
function squeeze(line, state) {
  let out = "", i = 0;
  while (i < line.length) {
    const c = line[i];
    if (c === "`") throw new Error("js/src/loader.js: template literals are not supported by the build");
    if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < line.length && line[j] !== c) j += line[j] === "\\" ? 2 : 1;
      if (j >= line.length) throw new Error("js/src/loader.js: unterminated string: " + line.trim());
      out += line.slice(i, j + 1);
      state.last = c;
      i = j + 1;
    } else if (c === "/" && line[i + 1] === "/") {
      throw new Error("js/src/loader.js: a comment after code must be a /* block */: " + line.trim());
    } else if (c === "/" && line[i + 1] === "*") {
      const j = line.indexOf("*/", i + 2);
      if (j < 0) throw new Error("js/src/loader.js: a block comment after code must end on its line");
      i = j + 2;
    } else if (c === "/" && (state.last === "" || BEFORE_REGEX.includes(state.last) || /\b(return|typeof|case|in|of)$/.test(out))) {
      let j = i + 1, cls = false;
      while (j < line.length && (line[j] !== "/" || cls)) {
        if (line[j] === "\\") j++;
        else if (line[j] === "[") cls = true;
        else if (line[j] === "]") cls = false;
        j++;
      }
      if (j >= line.length) throw new Error("js/src/loader.js: unterminated regular expression: " + line.trim());
      j++;
      while (/[a-z]/.test(line[j] || "")) j++;
      out += line.slice(i, j);
      state.last = "/";
      i = j;
    } else if (/\s/.test(c)) {
      let j = i;
      while (/\s/.test(line[j] || "")) j++;
      const prev = out[out.length - 1] || "", next = line[j] || "";
      const glue = prev === "" || next === "" || (PUNCT.includes(prev) || PUNCT.includes(next)) && !(prev === next && "+-".includes(prev));
      if (!glue) out += " ";
      i = j;
    } else {
      out += c;
      state.last = c;
      i++;
    }
  }
  return out;
}

function build(source) {
  const out = [], state = { last: "" };
  let inComment = false;
  for (const raw of source.split("\n")) {
    const line = raw.trim();
    if (inComment) { inComment = !line.endsWith("*/"); continue; }
    if (line.startsWith("/*") && !line.includes("*/")) { inComment = true; continue; }
    if (!line || line.startsWith("//")) continue;
    const code = squeeze(line, state);
    if (code) out.push(code);
  }
  const text = BANNER + out.join("\n") + "\n";
  const bad = [/[^\x00-\x7f]/, /<\/script/i, /<!--/, /<script/i, /-->/].find(re => re.test(text));
  if (bad) throw new Error("js/src/loader.js cannot be embedded in an HTML script element: it matches " + bad);
  return text;
}

module.exports = { build, squeeze, SRC, OUT };

if (require.main === module) {
  const text = build(fs.readFileSync(SRC, "utf8"));
  if (process.argv.includes("--check")) {
    const current = fs.existsSync(OUT) ? fs.readFileSync(OUT, "utf8") : "";
    if (current !== text) {
      console.error("js/loader.js is out of date: run `node js/build.js`");
      process.exit(1);
    }
  } else {
    fs.writeFileSync(OUT, text);
    console.log(`js/loader.js: ${text.length} bytes (source ${fs.statSync(SRC).size})`);
  }
}
