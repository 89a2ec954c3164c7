/* gwtar loader, archiver gwtar extension 1 (formats/gwtar.md section 7; design: js/README.md).
 * The source: `node js/build.js` makes js/loader.js, which the writer embeds in every header. ASCII
 * only; never spells a closing script tag or a comment opener; no template literals, no comment after
 * code (the build's rules). One global, window.gwtar. Part 1 is pure (node's tests require it);
 * part 2 is the browser. */
(() => {
"use strict";

// ============================================================ part 1: pure (no DOM, network, clock)

const BLOCK = 512, HEX = "0123456789ABCDEF", SAFE = /[\w\-.~!$&'()*+,;=@]/;
const utf8 = s => new TextEncoder().encode(s);
const latin1 = b => new TextDecoder("latin1").decode(b);

// A path segment as tree.md section 5 rel() writes it: UTF-8, all but SAFE percent-encoded.
const encodeSegment = s => Array.from(utf8(s), b => {
  const c = String.fromCharCode(b);
  return b < 128 && SAFE.test(c) ? c : "%" + HEX[b >> 4] + HEX[b & 15];
}).join("");
const encodePath = p => p.split("/").map(encodeSegment).join("/");

// Percent-decode once, as a browser does before a server maps a path; invalid UTF-8 stays as written.
function decodeSegment(s) {
  if (!s.includes("%")) return s;
  const bytes = [];
  for (let i = 0; i < s.length;) {
    if (s[i] === "%" && /^[\da-f]{2}$/i.test(s.substr(i + 1, 2))) { bytes.push(parseInt(s.substr(i + 1, 2), 16)); i += 3; }
    else { const cp = s.codePointAt(i); bytes.push(...utf8(String.fromCodePoint(cp))); i += cp > 0xffff ? 2 : 1; }
  }
  try { return new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(bytes)); } catch (e) { return s; }
}
const dirOf = path => path.split("/").slice(0, -1);

// The href from tree path `from` to tree path `to` (tree.md section 5).
function rel(from, to) {
  const src = dirOf(from), dst = to.split("/");
  let n = 0;
  while (n < src.length && n < dst.length - 1 && src[n] === dst[n]) n++;
  return src.slice(n).map(() => "..").concat(dst.slice(n).map(encodeSegment)).join("/");
}

// A reference in the document at tree path `from`: null if it can never name a member (another
// scheme, protocol-relative, empty), {path: null, fragment} for the document itself, else
// {path, query, fragment}. "/x" counts from the tree's root; "dir/" names dir/index.html.
function resolveRef(from, ref) {
  if (ref == null) return null;
  ref = String(ref).replace(/[\t\n\r]/g, "").replace(/^[\x00-\x20]+|[\x00-\x20]+$/g, "");
  if (!ref) return null;
  let fragment = null, query = null, i = ref.indexOf("#");
  if (i >= 0) [ref, fragment] = [ref.slice(0, i), ref.slice(i + 1)];
  if (!ref) return { path: null, query, fragment };
  if (/^[a-z][\w+.\-]*:|^[\\/]{2}/i.test(ref)) return null;
  i = ref.indexOf("?");
  if (i >= 0) [ref, query] = [ref.slice(0, i), ref.slice(i + 1)];
  const parts = ref[0] === "/" ? [] : dirOf(from), segs = ref.split("/");
  segs.forEach((s, k) => {
    if (s === "." || s === "" || s === "..") {
      if (s === "..") parts.pop();
      if (k === segs.length - 1) parts.push("index.html");
    } else parts.push(decodeSegment(s));
  });
  return { path: parts.join("/") || "index.html", query, fragment };
}

// Routes: "#/docs/intro/index.html?q=x#sec" names a member, the query its page reads (the search
// page's ?q=, formats/search.md section 8.2) and a fragment inside it. A "?" in a member's name is
// always percent-encoded (encodeSegment), so the first "?" of a route starts its query.
const routeHash = (path, frag, query) => "#/" + encodePath(path) + (query != null ? "?" + query : "") + (frag != null ? "#" + frag : "");
function parseRoute(hash) {
  hash = (hash || "").replace(/^#/, "");
  if (hash[0] !== "/") return { path: null, query: null, fragment: hash || null };
  const rest = hash.slice(1), i = rest.indexOf("#"), pq = i < 0 ? rest : rest.slice(0, i), k = pq.indexOf("?"), p = k < 0 ? pq : pq.slice(0, k);
  let path = p.split("/").filter(s => s).map(decodeSegment).join("/");
  if (p.endsWith("/") && path) path += "/index.html";
  return { path: path || null, query: k < 0 ? null : pq.slice(k + 1), fragment: i < 0 ? null : rest.slice(i + 1) };
}

// v1 offset arithmetic (research 1.3) over the `assets` manifest, "0" first, then text order. Member
// paths (extension 1): tree input keys are tree paths; SingleFile input is BASE.html and BASE/KEY.
function manifestMembers(assets, overhead, meta) {
  meta = meta || {};
  const base = (assets && assets[0] || {}).basename || "";
  let pos = 0;
  return ["0"].concat(Object.keys(assets || {}).filter(k => k !== "0")).filter(k => assets[k]).map(k => {
    const e = assets[k], m = {
      path: k === "0" ? meta.main || base + ".html" : meta.source === "tree" ? k : base + "/" + k,
      offset: overhead + pos + BLOCK, size: e.size, type: e["content-type"] || "", sha256: e.hash || null, kind: k === "0" ? "page" : "asset"
    };
    pos += BLOCK + Math.ceil(e.size / BLOCK) * BLOCK;
    return m;
  });
}

// The numbers, manifest and metadata of a gwtar header's text (a file chosen from disk).
function parseHeader(text) {
  const o = /let overhead = parseInt\("(\d{12})"\)/.exec(text), t = /let totalArchiveSize = parseInt\("(\d{24})"\)/.exec(text);
  if (!o || !t || !text.includes("<!" + "-- GWTAR END\n")) return null;
  const json = s => { try { return JSON.parse(s); } catch (e) { return null; } };
  const a = text.indexOf("let assets = "), b = text.indexOf("\n</scr" + "ipt>", a);
  const m = new RegExp("<scr" + 'ipt type="application/json" id="archiver-gwtar">([\\s\\S]*?)</scr' + "ipt>").exec(text);
  return { overhead: +o[1], total: +t[1], assets: a >= 0 && b > a ? json(text.slice(a + 13, b).replace(/;\s*$/, "")) : null, meta: m && json(m[1]) };
}

// Ranges are [start, end) file offsets. Sort; merge neighbours closer than `gap` (a member's padding
// and the next tar header); pack spans into requests of at most `maxRanges` spans and `budget` bytes
// (a larger span goes alone). Without `multi`, one span per request.
function planRequests(ranges, { gap = 1024, budget = 1 << 20, maxRanges = 32, multi = false } = {}) {
  const spans = [], out = [];
  ranges.filter(r => r.end > r.start).map(r => ({ start: r.start, end: r.end }))
    .sort((x, y) => x.start - y.start || x.end - y.end).forEach(r => {
      const last = spans[spans.length - 1];
      if (last && r.start <= last.end + gap) last.end = Math.max(last.end, r.end);
      else spans.push(r);
    });
  let cur = null;
  for (const s of spans) {
    if (!multi || !cur || cur.spans.length >= maxRanges || cur.bytes + s.end - s.start > budget) out.push(cur = { spans: [], bytes: 0 });
    cur.spans.push(s);
    cur.bytes += s.end - s.start;
  }
  return out;
}
// What the main page's first render needs, in as few single-range requests as possible, instead of
// page, then stylesheets, then fonts and images, one round trip each. The writer lays it out right
// after the page (formats/gwtar.md 5.2): stylesheets, fonts, then the other assets in document order,
// media last. Taken from the listed members: the page, stylesheets, scripts, fonts (only WOFF2 when
// there is WOFF2: a browser that has it picks it) and the first two images that are not icons (the
// renderer asks for those at once); never media, a member over 2 MiB, or over 4 MiB in all. Members
// more than 4 KiB apart (something not taken lies between) make spans of their own.
function firstSpans(listed, page) {
  if (!page) return [];
  const take = [page], woff2 = listed.some(m => /woff2/.test(m.type));
  let images = 0, total = page.size;
  for (const m of listed) {
    if (m === page) continue;
    if (/^(audio|video)\//.test(m.type)) break;
    const font = /font|woff|opentype|truetype/.test(m.type), image = /^image\//.test(m.type) && !/icon/.test(m.type);
    if (m.size > 2 << 20 || !(/css|javascript|ecmascript/.test(m.type) || font && (!woff2 || /woff2/.test(m.type)) || image && images++ < 2)) continue;
    if (total + m.size > 4 << 20) break;
    take.push(m);
    total += m.size;
  }
  const spans = [];
  for (const m of take.sort((a, b) => a.offset - b.offset)) {
    const last = spans[spans.length - 1];
    if (last && m.offset - last.end <= 4096) { last.end = m.offset + m.size; last.members.push(m); }
    else spans.push({ start: m.offset, end: m.offset + m.size, members: [m] });
  }
  return spans;
}
const rangeHeader = spans => "bytes=" + spans.map(s => s.start + "-" + (s.end - 1)).join(",");
// "bytes 0-99/1234" -> {start: 0, end: 100, total: 1234} (total null for "*").
function parseContentRange(v) {
  const m = /^\s*bytes\s+(\d+)-(\d+)\/(\d+|\*)\s*$/i.exec(v || "");
  return m && +m[2] >= +m[1] ? { start: +m[1], end: +m[2] + 1, total: m[3] === "*" ? null : +m[3] } : null;
}
function boundaryOf(type) {
  const m = /^\s*multipart\/byteranges\s*;(?:.*;)?\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(type || "");
  return m ? m[1] || m[2] : null;
}
function find(hay, needle, from) {
  outer: for (let i = from; i <= hay.length - needle.length; i++) {
    for (let k = 0; k < needle.length; k++) if (hay[i + k] !== needle[k]) continue outer;
    return i;
  }
  return -1;
}
// multipart/byteranges -> [{start, end, total, type, data}]. A part's length comes from its
// Content-Range, so a binary body that happens to contain the boundary is still read right.
function parseMultipart(body, boundary) {
  const delim = utf8("--" + boundary), parts = [];
  for (let pos = 0; ;) {
    const at = find(body, delim, pos);
    if (at < 0 || body[at + delim.length] === 45 && body[at + delim.length + 1] === 45) break;
    pos = at + delim.length;
    const crlf = find(body, utf8("\r\n\r\n"), pos), lf = find(body, utf8("\n\n"), pos);
    const end = crlf >= 0 && (lf < 0 || crlf < lf) ? crlf : lf;
    if (end < 0) break;
    const head = latin1(body.subarray(pos, end)), start = end + (end === crlf ? 4 : 2);
    const cr = parseContentRange((/content-range:\s*([^\r\n]*)/i.exec(head) || [])[1]);
    if (!cr || start + cr.end - cr.start > body.length) break;
    pos = start + cr.end - cr.start;
    parts.push({ ...cr, type: ((/content-type:\s*([^\r\n]*)/i.exec(head) || [])[1] || "").trim(), data: body.subarray(start, pos) });
  }
  return parts;
}
// For each wanted range, its bytes from a part that covers it, or null (to ask again).
const sliceParts = (wanted, parts) => wanted.map(w => {
  const p = parts.find(p => p.start <= w.start && w.end <= p.end);
  return p ? p.data.subarray(w.start - p.start, w.end - p.start) : null;
});

// srcset as HTML parses it: a URL is a run of non-space characters (inner commas stay, trailing ones
// end the candidate); its descriptors run to the next comma outside parentheses.
function parseSrcset(s) {
  const out = [], n = s.length;
  for (let i = 0; i < n;) {
    while (i < n && /[\s,]/.test(s[i])) i++;
    if (i >= n) break;
    let j = i;
    while (j < n && !/\s/.test(s[j])) j++;
    let url = s.slice(i, j), descriptor = "";
    i = j;
    if (url.endsWith(",")) url = url.replace(/,+$/, "");
    else {
      for (let depth = 0; j < n && (s[j] !== "," || depth); j++) depth += s[j] === "(" ? 1 : s[j] === ")" && depth ? -1 : 0;
      descriptor = s.slice(i, j).trim();
      i = j + 1;
    }
    out.push({ url, descriptor });
  }
  return out;
}
const serializeSrcset = list => list.map(c => c.url + (c.descriptor ? " " + c.descriptor : "")).join(", ");

// CSS references, by a tokenizer that respects comments, strings and escapes: [{start, end, url,
// kind, quoted}], [start, end) the text to replace; kind "import", "font" (the @font-face src
// candidate a browser uses), "font-alt" (the others) or "url" (anything else).
const cssUnescape = s => s.replace(/\\([\da-f]{1,6})[ \t\n\r\f]?|\\([\s\S])/gi, (_, h, c) => {
  if (!h) return c === "\n" ? "" : c;
  const cp = parseInt(h, 16);
  return cp && cp <= 0x10ffff ? String.fromCodePoint(cp) : "\ufffd";
});
const CSS_TOKENS = "\\/\\*[\\s\\S]*?(?:\\*\\/|$)|\\\\[\\s\\S]|([\"'])((?:\\\\[\\s\\S]|(?!\\1)[^\\\\\\n])*)\\1?" +
  "|(?<![-\\w])(url)\\(\\s*(?:([\"'])((?:\\\\[\\s\\S]|(?!\\4)[^\\\\\\n])*)\\4\\s*\\)?|((?:\\\\[\\s\\S]|[^)\\\\])*)\\))" +
  "|@([-\\w]+)|([-\\w]*image-set)\\(|(?<![-\\w])src\\s*:|[{};,()]";
function scanCss(text) {
  const refs = [], parens = [], re = new RegExp(CSS_TOKENS, "gi");
  let depth = 0, fontDepth = -1, atRule = "", importing = false, cands = null, m;
  const add = (m, url, quoted) => {
    if (atRule === "namespace" && !depth) return;
    const r = { start: m.index, end: m.index + m[0].length, url, quoted, kind: importing ? "import" : cands ? "font-alt" : "url" };
    refs.push(r);
    if (cands && !importing) cands[cands.length - 1].push(r);
    importing = false;
  };
  const endSrc = () => {
    // the first candidate whose format() hint, if any, the browser supports
    const best = cands.find(c => {
      const f = c.length && /^\s*format\(\s*["']?([^"')]*)/i.exec(text.slice(c[c.length - 1].end, c[c.length - 1].end + 80));
      return c.length && (!f || /^\s*(woff2?|truetype|opentype|collection)(-variations)?\s*$/i.test(f[1]));
    });
    if (best) best.forEach(r => { r.kind = "font"; });
    cands = null;
  };
  while ((m = re.exec(text))) {
    const t = m[0];
    if (m[1]) { if (importing || /image-set$/i.test(parens[parens.length - 1] || "")) add(m, cssUnescape(m[2]), true); }
    else if (m[3]) add(m, cssUnescape(m[4] ? m[5] : m[6].trim()), false);
    else if (m[7]) { atRule = m[7].toLowerCase(); importing = atRule === "import"; }
    else if (m[8]) parens.push(m[8]);
    else if (/^src/i.test(t)) { if (fontDepth >= 0 && depth === fontDepth + 1) cands = [[]]; }
    else if (t === "(") parens.push("");
    else if (t === ")") parens.pop();
    else if (t === ",") { if (cands && !parens.length) cands.push([]); }
    else if (/^[{};]$/.test(t)) {
      if (cands) endSrc();
      if (t === "{") { if (atRule === "font-face") fontDepth = depth; depth++; atRule = ""; }
      else if (t === "}") { depth = Math.max(0, depth - 1); if (depth === fontDepth) fontDepth = -1; }
      else if (!depth) atRule = "";
      importing = false;
    }
  }
  if (cands) endSrc();
  return refs;
}
// Replace each reference by fn(ref): a URL, or null to keep it as written.
function rewriteCss(text, refs, fn) {
  let out = "", at = 0;
  for (const r of refs) {
    const u = fn(r);
    if (u == null) continue;
    const q = '"' + u.replace(/[\\"]/g, "\\$&").replace(/\n/g, "\\a ") + '"';
    out += text.slice(at, r.start) + (r.quoted ? q : "url(" + q + ")");
    at = r.end;
  }
  return out + text.slice(at);
}

// A module's string import specifiers (static, re-export, dynamic): [{start, end, spec}], [start, end)
// being the quoted string. A regular expression: an import-like string in a comment is rewritten
// too, which is harmless, as only specifiers naming members are replaced.
function scanModule(text) {
  const re = /(\bimport\s*(?:[\w$*{}\s,]+?\s*from\s*)?|\bexport\s*[\w$*{}\s,]+?\s*from\s*|\bimport\s*\(\s*)(["'])([^"'\n]+)\2/g, out = [];
  for (let m; (m = re.exec(text));) out.push({ start: m.index + m[1].length, end: m.index + m[0].length, spec: m[3] });
  return out;
}

// A page's charset: BOM, else <meta charset> or http-equiv in its first 1024 bytes, else UTF-8.
function sniffCharset(b) {
  if (b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) return "utf-8";
  if (b[0] === 0xff && b[1] === 0xfe) return "utf-16le";
  if (b[0] === 0xfe && b[1] === 0xff) return "utf-16be";
  const m = /<meta[^>]+charset\s*=\s*["']?\s*([-\w.:]+)/i.exec(latin1(b.subarray(0, 1024)));
  return m ? m[1].toLowerCase() : "utf-8";
}
const hex = buf => Array.from(new Uint8Array(buf), b => (b < 16 ? "0" : "") + b.toString(16)).join("");
const shellQuote = s => /^[\w.\/-]+$/.test(s) ? s : "'" + s.replace(/'/g, "'\\''") + "'";

const pure = {
  encodeSegment, encodePath, decodeSegment, rel, resolveRef, routeHash, parseRoute, manifestMembers, parseHeader,
  planRequests, firstSpans, rangeHeader, parseContentRange, boundaryOf, parseMultipart, sliceParts, parseSrcset, serializeSrcset,
  scanCss, rewriteCss, cssUnescape, scanModule, sniffCharset, hex, shellQuote
};
if (typeof window === "undefined" || typeof document === "undefined") {
  if (typeof module === "object" && module && module.exports) module.exports = pure;
  return;
}

// ============================================================ part 2: the browser

// The v1 header runs window.stop() in a script of its own after this one; a stopped parser makes
// document.open() a no-op for good. So that call is defused until the boot task below has replaced
// the parser and stopped the download itself.
const realStop = window.stop, realFetch = window.fetch.bind(window);
window.stop = () => {};

const doc = document, docURL = location.href.split("#")[0], secure = !!(window.isSecureContext && window.crypto?.subtle);
const RETAIN = 256 << 20, VERIFY_MAX = 256 << 20, SLICE_UNVERIFIED = 16 << 20;
const LAZY = "src srcset poster data href xlink-href background media".split(" ").map(a => "[data-gwtar-" + a + "]").join();
const NS = {
  version: 1, state: "starting", page: null, mode: null, members: false, secure, problems: [], pure,
  stats: { requests: 0, bytes: 0, multi: null, boot: null, written: null, firstRender: null, verified: 0, unverified: 0 }
};
Object.defineProperty(window, "gwtar", { value: NS, configurable: true });

const later = (fn, ms) => setTimeout(fn, ms || 0), noop = () => {};
const esc = s => String(s).replace(/[&<>"']/g, c => "&#" + c.charCodeAt(0) + ";");
const decodeText = (b, label) => { try { return new TextDecoder(label || "utf-8").decode(b); } catch (e) { return new TextDecoder().decode(b); } };
const blobURL = (data, type) => URL.createObjectURL(new Blob([data], { type }));
const fileName = () => decodeSegment(location.pathname.split("/").pop() || "archive.gwtar.html");
const isMediaChild = el => /^(source|track)$/.test(el.localName) && /^(video|audio)$/.test(el.parentNode?.localName);
class IntegrityError extends Error {}

function problem(kind, path, what) {
  NS.problems.push({ kind, path, what });
  if (kind !== "missing") showNotice();
}
function fail(err, el, path) {
  if (!(err instanceof IntegrityError)) return problem("error", path, String(err?.message || err));
  problem("integrity", path, err.message);
  if (el?.style) { el.setAttribute("data-gwtar-error", err.message); el.style.outline = "3px dashed #c00"; }
}

// ------------------------------------------------------------ byte sources

// Range requests to the archive's own URL: single ranges at first, multi-range batches once a 206
// shows Range works, single ranges again when multi-range is refused (200, 416, parts missing), and
// a stream of the whole file when the server ignores Range.
class RangeSource {
  constructor(url, total) {
    Object.assign(this, { url, total, queue: [], active: 0, waiting: [], timer: 0, range: null, multi: null, stream: null });
    this.known = new Promise(resolve => { this.know = resolve; });
  }
  read(start, end) {
    return this.stream ? this.stream.read(start, end) : new Promise((resolve, reject) => this.retry([{ start, end, resolve, reject }]));
  }
  // Several pieces of one span in one single-range request; each piece resolves as soon as its bytes
  // are in (the first render's members, Archive.warm). `now`: sent at once; else once the first
  // answer has shown whether the server honours Range (one that ignores it would send the whole
  // file for each request).
  span(start, end, pieces, now) {
    const wants = [], out = pieces.map(p => new Promise((resolve, reject) => wants.push({ start: p.start, end: p.end, resolve, reject })));
    const send = () => this.stream ? this.pipe(wants) : this.run(() => this.get([{ start, end }], wants));
    if (now) send(); else this.known.then(send);
    return out;
  }
  retry(wants) {
    this.queue.push(...wants);
    this.timer = this.timer || later(() => {
      const all = this.queue.splice(0);
      this.timer = 0;
      if (this.stream) return this.pipe(all);
      for (const plan of planRequests(all, { multi: this.range && this.multi !== false })) {
        this.run(() => this.get(plan.spans, all.filter(w => plan.spans.some(s => s.start <= w.start && w.end <= s.end))));
      }
    });
  }
  run(job) {
    if (this.active >= 6) return this.waiting.push(job);
    this.active++;
    job().finally(() => { this.active--; if (this.waiting.length) this.run(this.waiting.shift()); });
  }
  pipe(wants) { wants.forEach(w => this.stream.read(w.start, w.end).then(w.resolve, w.reject)); }
  async get(spans, wants) {
    const multi = spans.length > 1;
    try {
      NS.stats.requests++;
      const r = await realFetch(this.url, { headers: { Range: rangeHeader(spans) } });
      Promise.resolve().then(this.know);
      if (r.headers.get("Gwtar-Members")) NS.members = true;
      if (r.status === 200 && (!this.range || !multi)) return this.toStream(r, wants);
      if (r.status === 200 || r.status === 416 && multi) {
        if (r.body) r.body.cancel().catch(noop);
        this.multi = NS.stats.multi = false;
        return this.retry(wants);
      }
      if (r.status !== 206) throw new Error("the server answered " + r.status + " " + r.statusText);
      this.range = true;
      NS.mode = NS.mode || "range";
      const b = boundaryOf(r.headers.get("Content-Type")), cr = parseContentRange(r.headers.get("Content-Range"));
      if (!b && cr && r.body && !multi) return await this.single(r, cr, wants);
      const body = new Uint8Array(await r.arrayBuffer());
      NS.stats.bytes += body.length;
      if (multi && this.multi == null) this.multi = NS.stats.multi = !!b;
      const got = sliceParts(wants, b ? parseMultipart(body, b) : cr ? [{ ...cr, data: body }] : []);
      const again = wants.filter((w, i) => got[i] ? w.resolve(got[i]) : true);
      if (again.length && !multi) throw new Error("the server sent other bytes than asked for");
      if (again.length) { this.multi = NS.stats.multi = false; this.retry(again); }
    } catch (err) {
      this.know();
      wants.forEach(w => w.reject(err));
    }
  }
  // One range: hand out each member as soon as its last byte is in (the page is parsed and its
  // stylesheets applied while the first render's images are still arriving).
  async single(r, cr, wants) {
    const buf = new Uint8Array(cr.end - cr.start), reader = r.body.getReader();
    let got = 0, left = wants.filter(w => cr.start <= w.start && w.end <= cr.end);
    if (left.length < wants.length) { reader.cancel().catch(noop); throw new Error("the server sent other bytes than asked for"); }
    while (left.length) {
      const { done, value } = await reader.read();
      if (done) break;
      buf.set(value.subarray(0, buf.length - got), got);
      got = Math.min(buf.length, got + value.length);
      NS.stats.bytes += value.length;
      left = left.filter(w => w.end - cr.start <= got ? w.resolve(buf.subarray(w.start - cr.start, w.end - cr.start)) : true);
    }
    if (left.length) throw new Error("the server's answer was cut short");
  }
  toStream(r, wants) {
    this.range = false;
    if (this.stream) { if (r.body) r.body.cancel().catch(noop); }
    else {
      NS.mode = "stream";
      this.stream = new StreamSource(this.url, this.total, r);
      if (this.total > 64 << 20) {
        problem("notice", null, "This server ignores HTTP Range requests, so the whole archive (" + Math.round(this.total / 1048576) +
          " MB) is downloaded in order: pages and media near its end take longer. A Range-capable server (archiver serve, nginx) or opening the file from disk avoids that.");
      }
    }
    this.pipe(this.queue.splice(0).concat(wants));
  }
}

// The whole file read once, front to back, as it arrives. Nothing is allocated up front: chunks are
// kept while the total kept stays under RETAIN (beyond it, only chunks someone waits for); reading
// stops at totalArchiveSize. A range passed and dropped starts a new pass.
class StreamSource {
  constructor(url, total, first) {
    Object.assign(this, { url, total, chunks: [], kept: 0, pos: 0, wants: [], running: false });
    this.pump(first);
  }
  cover(start, end) {
    const out = new Uint8Array(end - start);
    let need = start;
    for (const c of this.chunks) {
      const cs = c.start, ce = cs + c.data.length;
      if (need >= end) break;
      if (ce <= need || cs > need) continue;
      const take = c.data.subarray(need - cs, Math.min(ce, end) - cs);
      out.set(take, need - start);
      need += take.length;
    }
    return need === end ? out : null;
  }
  read(start, end) {
    const got = this.cover(start, end);
    return got ? Promise.resolve(got) : new Promise((resolve, reject) => {
      this.wants.push({ start, end, resolve, reject });
      if (!this.running) this.pump(null);
    });
  }
  settle() {
    this.wants = this.wants.filter(w => {
      const got = w.end <= this.pos && this.cover(w.start, w.end);
      return got ? w.resolve(got) : true;
    });
  }
  async pump(first) {
    this.running = true;
    this.pos = 0;
    this.chunks = this.chunks.filter(c => c.keep);
    try {
      const r = first || await realFetch(this.url);
      if (!first) NS.stats.requests++;
      if (r.status !== 200) throw new Error("the server answered " + r.status);
      const reader = r.body.getReader();
      while (this.pos < this.total) {
        const { done, value } = await reader.read();
        if (done) break;
        const at = this.pos, data = value.subarray(0, Math.max(0, this.total - at)), keep = this.kept + data.length <= RETAIN;
        this.pos += data.length;
        NS.stats.bytes += data.length;
        if (keep || this.wants.some(w => w.start < this.pos && w.end > at)) {
          this.chunks.push({ start: at, data, keep });
          if (keep) this.kept += data.length;
        }
        this.settle();
      }
      reader.cancel().catch(noop);
    } catch (err) {
      this.wants.splice(0).forEach(w => w.reject(err));
    }
    this.running = false;
    this.settle();
    this.wants = this.wants.filter(w => w.end <= this.total && w.start < this.pos || w.reject(new Error("bytes " + w.start + "-" + w.end + " are not in the archive")));
    if (this.wants.length) this.pump(null);
  }
}

// A file chosen from disk: ranges are File.slice() reads.
class FileSource {
  constructor(file) { this.file = file; NS.mode = "file"; }
  async read(start, end) { return new Uint8Array(await this.file.slice(start, end).arrayBuffer()); }
}

// ------------------------------------------------------------ the archive

const VT = "_archiver/gwtar-versions.json", VB = "_archiver/versions/blobs/", VDIFF = "_archiver/versions/diff.html", VP = /^@(\d{8}T\d{6}Z(?:-\d+)?)\/(.*)$/;
class Archive {
  constructor(source, hdr) {
    Object.assign(this, { source, hdr, meta: hdr.meta || {}, index: null, cache: new Map() });
    this.listed = new Map(manifestMembers(hdr.assets, hdr.overhead, this.meta).map(m => [m.path, m]));
    this.main = this.meta.main || this.listed.keys().next().value;
  }
  once(key, make) {
    if (!this.cache.has(key)) {
      const p = make();
      this.cache.set(key, p);
      p.catch(() => this.cache.delete(key));
    }
    return this.cache.get(key);
  }
  // The site index (formats/gwtar.md 5.3), read the first time a path is not in the header's manifest.
  loadIndex() {
    return this.once("\0index", async () => {
      const ix = this.meta.index, o = this.hdr.overhead;
      if (!ix) return null;
      const data = JSON.parse(decodeText(await this.bytes({ path: "_archiver/gwtar-index.json", offset: o + +ix.offset, size: +ix.size, sha256: ix.sha256 })));
      return this.index = new Map(data.members.map(m => [m.path, { ...m, offset: o + m.offset, type: m.type || "" }]));
    });
  }
  // Versions (formats/gwtar.md section 13): the table, and "@<id>/<path>", <path> as version <id>
  // had it: its manifest record's SHA-256 names the member holding the bytes (a blob, else any member).
  versions() {
    return this.once("\0v", async () => {
      const t = await this.lookup(VT), h = new Map();
      if (!t) return null;
      for (const m of this.index.values()) if (m.sha256 && (m.path.startsWith(VB) || !h.has(m.sha256))) h.set(m.sha256, m);
      return { list: JSON.parse(decodeText(await this.bytes(t))).versions, h };
    });
  }
  async inVersion(id, path) {
    const v = await this.versions(), e = v?.list.find(x => x.id === id), f = e && await this.once("\0v" + id, async () =>
      new Map(decodeText(await this.bytes(await this.lookup(e.manifest))).split("\n").slice(1).filter(l => l.trim()).map(l => { const r = JSON.parse(l); return [r.path, r]; })));
    const r = f?.get(path), m = r && v.h.get(r.sha256);
    return m?.size === r.size ? { ...m, path: "@" + id + "/" + path, type: r.media_type || m.type, kind: r.kind } : null;
  }
  async lookup(path) {
    const at = VP.exec(path);
    if (at) return this.inVersion(at[1], at[2]);
    if (!this.index && this.listed.has(path)) return this.listed.get(path);
    const ix = await this.loadIndex();
    return ix?.get(path) || null;
  }
  bytes(m) { return this.once(m.path, async () => this.verify(m, await this.source.read(m.offset, m.offset + m.size))); }
  // What the main page's first render needs, asked for as soon as the loader starts (firstSpans).
  warm() {
    firstSpans([...this.listed.values()], this.listed.get(this.main)).forEach((sp, i) => {
      const got = this.source.span(sp.start, sp.end, sp.members.map(m => ({ start: m.offset, end: m.offset + m.size })), i === 0);
      sp.members.forEach((m, k) => this.once(m.path, async () => this.verify(m, await got[k])));
    });
  }
  async verify(m, bytes) {
    if (!secure || !m.sha256 || bytes.length > VERIFY_MAX) { NS.stats.unverified++; return bytes; }
    const got = hex(await crypto.subtle.digest("SHA-256", bytes));
    if (got !== m.sha256) throw new IntegrityError("SHA-256 mismatch: " + m.path + " is damaged (its hash is " + got.slice(0, 16) + "..., the index says " + m.sha256.slice(0, 16) + "...)");
    NS.stats.verified++;
    return bytes;
  }
  url(m, type) { return this.once(m.path + "\0" + (type || ""), async () => blobURL(await this.bytes(m), type || m.type || "application/octet-stream")); }
  memberURL(path) { return docURL + "/~/" + encodePath(path); }
  // For <video>/<audio>: a slice of the chosen file, the host's member URL (archiver serve), or a blob.
  async mediaURL(m) {
    if (this.source instanceof FileSource) {
      if (m.size <= SLICE_UNVERIFIED) return this.url(m);
      NS.stats.unverified++;
      return URL.createObjectURL(this.source.file.slice(m.offset, m.offset + m.size, m.type));
    }
    const served = NS.members || !this.source.stream && await this.once("\0probe", () => realFetch(this.memberURL(m.path), { method: "HEAD" })
      .then(r => NS.members = r.ok && +r.headers.get("Content-Length") === m.size, () => false));
    return served ? this.memberURL(m.path) : this.url(m);
  }
}

// ------------------------------------------------------------ rewriting a page

// Markers stand for members not fetched yet (CSS images, srcset candidates): a data: URL that fails
// at once, so the browser shows what it shows before an image arrives and nothing goes over the wire.
const markerIds = new Map(), markerPaths = [], markerURLs = new Map(), MARKER = /data:,gwtar-(\d+)-/g;
function marker(path) {
  if (!markerIds.has(path)) { markerIds.set(path, markerPaths.length); markerPaths.push(path); }
  return markerURLs.get(markerIds.get(path)) || "data:,gwtar-" + markerIds.get(path) + "-";
}
const routeURL = (path, frag, query) => docURL + routeHash(path, frag, query);
const withFragment = (u, r) => u + (r?.fragment != null ? "#" + r.fragment : "");

// One document being rewritten: `path` its tree path, `base` what its references resolve against,
// `eager` for frames and srcdoc (everything is loaded before they are written).
class Ctx {
  constructor(path, eager) { Object.assign(this, { path, base: path, eager, sheets: new Map() }); }
  resolve(ref) { const r = resolveRef(this.base, ref); return r?.path ? r : null; }
  async entry(ref, from) {
    const r = from ? resolveRef(from, ref) : this.resolve(ref), m = r?.path && await archive.lookup(r.path);
    if (r?.path && !m) problem("missing", r.path, r.path + " is not in the archive");
    return m || null;
  }
  // A stylesheet's text, references resolved: @import -> blob of the processed sheet (a cycle ->
  // empty), the font a browser uses -> blob (fetched now), other url()s -> a marker the CSS sweep
  // resolves once something uses it (a blob in eager mode).
  async cssText(text, from, stack) {
    text = text.replace(/^\ufeff/, "");
    const refs = scanCss(text), subs = new Map();
    await Promise.all(refs.map(async r => {
      const res = resolveRef(from, r.url);
      if (!res || !res.path) return;
      if (r.kind === "url" && !this.eager || r.kind === "font-alt") return subs.set(r, withFragment(marker(res.path), res));
      try {
        const m = await this.entry(r.url, from);
        subs.set(r, !m ? "data:," : r.kind !== "import" ? withFragment(await archive.url(m), res) :
          stack.includes(m.path) ? "data:text/css," : await this.sheet(m, stack));
      } catch (err) { fail(err, null, res.path); subs.set(r, "data:,"); }
    }));
    return rewriteCss(text, refs, r => subs.get(r));
  }
  sheet(m, stack) {
    if (!this.sheets.has(m.path)) {
      this.sheets.set(m.path, archive.bytes(m).then(b => {
        const cs = /^@charset "([^"]+)";/.exec(latin1(b.subarray(0, 64)));
        return this.cssText(decodeText(b, cs && cs[1]).replace(/^\s*@charset\s+["'][^"']*["']\s*;/i, ""), m.path, (stack || []).concat(m.path));
      }).then(t => blobURL(t, "text/css")));
    }
    return this.sheets.get(m.path);
  }
  // A module: relative import specifiers -> blobs of the processed modules (a cycle is left alone);
  // import.meta.url -> the member URL, so URLs made from it resolve to members (see pageFetch).
  async module(text, from, stack) {
    const specs = scanModule(text), subs = await Promise.all(specs.map(async s => {
      const r = /^\.{0,2}\//.test(s.spec) && resolveRef(from, s.spec), m = r && !stack.includes(r.path) && await archive.lookup(r.path);
      return m && blobURL(await this.module(decodeText(await archive.bytes(m)), m.path, stack.concat(m.path)), "text/javascript");
    }));
    let out = "", at = 0;
    specs.forEach((s, i) => { if (subs[i]) { out += text.slice(at, s.start) + JSON.stringify(subs[i]); at = s.end; } });
    return (out + text.slice(at)).replace(/\bimport\.meta\.url\b/g, JSON.stringify(archive.memberURL(from)));
  }
  // Rewrite a parsed, inert document in place. What the first paint needs (stylesheets with their
  // imports and fonts, scripts) is fetched now; images, media, frames and objects move to
  // data-gwtar-* attributes and load as they approach the viewport.
  async prepare(d) {
    const jobs = [], job = (el, what, fn, fallback) => jobs.push(fn().catch(err => { fail(err, el, what); if (fallback) fallback(); }));
    const defer = (el, a, name) => {
      if (!el.hasAttribute(a) || !this.resolve(el.getAttribute(a))) return;
      el.setAttribute("data-gwtar-" + (name || a.replace(":", "-")), el.getAttribute(a));
      el.removeAttribute(a);
    };
    // A CSP would block blob: URLs. A refresh is run by the loader (render): one the browser
    // scheduled would survive document.open() and fire on whatever page is shown by then.
    for (const m of d.querySelectorAll("meta[http-equiv]")) {
      const h = m.getAttribute("http-equiv").toLowerCase();
      if (h === "content-security-policy") m.remove();
      const mm = h === "refresh" && /^\s*([\d.]+)\s*(?:[;,]\s*(?:url\s*=\s*)?(["']?)(.*?)\2)?\s*$/i.exec(m.getAttribute("content") || "");
      if (!mm) continue;
      const r = mm[3] ? resolveRef(this.base, mm[3]) : { path: this.path };
      this.refresh = [+mm[1] * 1000, r ? routeURL(r.path || this.path, r.fragment) : mm[3]];
      m.setAttribute("data-gwtar-http-equiv", h);
      m.removeAttribute("http-equiv");
    }
    const baseEl = d.querySelector("base[href]"), br = baseEl && resolveRef(this.path, baseEl.getAttribute("href"));
    if (br?.path) this.base = br.path;
    d.querySelectorAll("base").forEach(b => b.removeAttribute("href"));
    const all = [...d.getElementsByTagName("*")];
    d.querySelectorAll("template").forEach(t => all.push(...t.content.querySelectorAll("*")));
    for (const el of all) {
      const tag = el.localName, get = a => el.getAttribute(a), r = this.resolve(get(tag === "script" ? "src" : "href"));
      if (/url\(/i.test(get("style") || "")) {
        el.setAttribute("style", rewriteCss(get("style"), scanCss(get("style")), c => { const x = this.resolve(c.url); return x && withFragment(marker(x.path), x); }));
      }
      defer(el, "background");
      if (tag === "a" || tag === "area") {
        const href = get("href"), to = href == null ? null : href.trim() ? resolveRef(this.base, href) : { path: this.path };
        if (to) el.setAttribute("href", routeURL(to.path || this.path, to.fragment, to.path ? to.query : null));
      } else if (tag === "form") {
        /* A GET form to a page of the archive (the site's own search box rewritten to the search
           page, formats/search.md section 9) is sent to its route by onSubmit: a native submission
           would load FILE/~/path?q=, which is no file on disk, or reload the archive. */
        const action = get("action"), to = action?.trim() ? resolveRef(this.base, action) : { path: this.path };
        if (to) el.setAttribute("data-gwtar-action", to.path || this.path);
      } else if (tag === "link") {
        const rels = (get("rel") || "").toLowerCase().split(/\s+/), none = () => el.setAttribute("href", "data:text/css,");
        if (rels.includes("stylesheet") && r) {
          el.removeAttribute("integrity");
          job(el, r.path, async () => { const m = await this.entry(get("href")); if (m) el.setAttribute("href", await this.sheet(m)); else none(); }, none);
        } else if (rels.some(x => /^(preload|prefetch|modulepreload|manifest|prerender|preconnect|dns-prefetch)$/.test(x))) {
          defer(el, "href", "off-href");
          defer(el, "imagesrcset", "off-imagesrcset");
        } else if (rels.some(x => /icon/.test(x))) defer(el, "href");
        else if (r) el.setAttribute("href", routeURL(r.path, r.fragment));
      } else if (tag === "script") {
        const module = (get("type") || "").toLowerCase() === "module", none = () => el.setAttribute("src", "data:text/javascript,");
        if (r) {
          if (module) el.removeAttribute("integrity");
          job(el, r.path, async () => {
            const m = await this.entry(get("src"));
            el.setAttribute("src", !m ? "data:text/javascript," : !module ? await archive.url(m, "text/javascript") :
              blobURL(await this.module(decodeText(await archive.bytes(m)), m.path, [m.path]), "text/javascript"));
          }, none);
        } else if (module && /import/.test(el.textContent)) job(el, this.path, async () => { el.textContent = await this.module(el.textContent, this.base, [this.path]); });
      } else if (tag === "style") {
        if (/url\(|@import/i.test(el.textContent)) job(el, this.path, async () => { el.textContent = await this.cssText(el.textContent, this.base, [this.path]); });
      } else if (/^(img|input|source|video|audio|track|iframe|embed)$/.test(tag)) {
        defer(el, "src");
        if (/^(video|audio)$/.test(tag)) el.setAttribute("data-gwtar-media", "");
        else if (!isMediaChild(el)) defer(el, "srcset");
        defer(el, "poster");
        if (tag === "iframe" && el.hasAttribute("srcdoc")) job(el, this.path, async () => el.setAttribute("srcdoc", await new Ctx(this.base, true).html(get("srcdoc"))));
      } else if (tag === "object") defer(el, "data");
      else if (/^(image|use|feimage)$/.test(tag.toLowerCase())) { defer(el, "href"); defer(el, "xlink:href"); }
    }
    // Relative URLs that page scripts make at run time resolve to member URLs (served by archiver
    // serve, answered from the archive by pageFetch, mapped back by runtimeRef).
    const head = d.head || d.documentElement, vb = d.createElement("base");
    vb.setAttribute("href", archive.memberURL(dirOf(this.base).concat("").join("/")));
    if (baseEl?.getAttribute("target")) vb.setAttribute("target", baseEl.getAttribute("target"));
    head.prepend(vb);
    if (!d.querySelector("link[rel~=icon i]")) head.append(Object.assign(d.createElement("link"), { rel: "icon", href: "data:," }));
    // The first two plain images are most likely above the fold: ask for them with the fonts instead
    // of after the first layout (they are cached; the viewport observer finds them there).
    if (!this.eager) {
      [...d.querySelectorAll("img[data-gwtar-src]:not([data-gwtar-srcset]):not([loading=lazy])")].filter(i => i.parentNode.localName !== "picture").slice(0, 2)
        .forEach(i => { const r = this.resolve(i.getAttribute("data-gwtar-src")); if (r) archive.lookup(r.path).then(m => m && m.size < 2 << 20 && archive.url(m)).catch(noop); });
    }
    await Promise.all(jobs);
    if (this.eager) {
      const lazy = new Lazy(this, d);
      await Promise.all([...d.querySelectorAll(LAZY)].filter(el => !isMediaChild(el)).map(el => lazy.activate(el, true)));
    }
  }
  async html(text) {
    const d = new DOMParser().parseFromString(text, "text/html");
    await this.prepare(d);
    return serialize(d);
  }
}
function serialize(d) {
  const t = d.doctype;
  return (t ? "<!DOCTYPE " + t.name + (t.publicId ? ' PUBLIC "' + t.publicId + '"' : "") +
    (t.systemId ? (t.publicId ? "" : " SYSTEM") + ' "' + t.systemId + '"' : "") + ">" : "") + d.documentElement.outerHTML;
}

// ------------------------------------------------------------ lazy loading in the live document

let pending = 0, sweepTimer = 0;
const track = p => { pending++; return p.finally(() => pending--); };
const task = (fn, el, what) => track(fn().catch(err => fail(err, el, what)));

class Lazy {
  constructor(ctx, d) { Object.assign(this, { ctx, doc: d, waitCss: new Map(), afterReady: [], ready: false }); }
  // Fetch one reference and hand its blob URL (with the reference's #fragment) to set().
  load(el, ref, set) {
    return task(async () => { const m = await this.ctx.entry(ref); if (m) set(withFragment(await archive.url(m), this.ctx.resolve(ref))); }, el, ref);
  }
  // Load what an element's data-gwtar-* attributes name; `all` (frames, srcdoc): every srcset
  // candidate too, so the document needs nothing afterwards.
  activate(el, all) {
    const tag = el.localName, jobs = [], has = a => el.hasAttribute("data-gwtar-" + a), put = a => u => el.setAttribute(a, u);
    const take = a => { const v = el.getAttribute("data-gwtar-" + a); el.removeAttribute("data-gwtar-" + a); return v; };
    if (has("poster")) jobs.push(this.load(el, take("poster"), put("poster")));
    if (has("media")) { el.removeAttribute("data-gwtar-media"); if (!all) this.media(el); return Promise.all(jobs); }
    if (has("background")) jobs.push(this.load(el, take("background"), put("background")));
    if (has("xlink-href")) jobs.push(this.load(el, take("xlink-href"), u => el.setAttributeNS("http://www.w3.org/1999/xlink", "xlink:href", u)));
    if (has("href")) jobs.push(this.load(el, take("href"), put("href")));
    if (has("data") || tag === "iframe" && has("src")) {
      const a = has("data") ? "data" : "src", ref = take(a);
      jobs.push(task(async () => {
        const m = await this.ctx.entry(ref);
        if (!m) return;
        if (!/html/.test(m.type)) return el.setAttribute(a, await archive.url(m));
        const html = await new Ctx(m.path, true).html(decodeText(await archive.bytes(m)));
        el.setAttribute(tag === "iframe" ? "srcdoc" : "data", tag === "iframe" ? html : blobURL(html, "text/html"));
      }, el, ref));
    } else if (has("srcset") || tag === "img" && el.parentNode?.localName === "picture") jobs.push(this.srcset(el, all));
    else if (has("src")) jobs.push(this.load(el, take("src"), put("src")));
    return Promise.all(jobs).then(() => tag === "img" && !all && el.src && !el.src.startsWith("data:") && track(el.decode().catch(noop)));
  }
  // srcset and <picture>: the browser picks. Candidates become markers; the one it tries fails at once
  // (no request) and the capturing "error" listener (onError) loads exactly that member.
  srcset(img, all) {
    const p = img.parentNode, els = p?.localName === "picture" ? [...p.children].filter(c => c.localName === "source").concat(img) : [img];
    return Promise.all(els.flatMap(el => ["srcset", "src"].map(async a => {
      const v = el.getAttribute("data-gwtar-" + a);
      if (v == null) return;
      el.removeAttribute("data-gwtar-" + a);
      const cands = a === "srcset" ? parseSrcset(v) : [{ url: v, descriptor: "" }];
      await Promise.all(cands.map(async c => {
        const r = this.ctx.resolve(c.url), m = r && all && await archive.lookup(r.path).catch(noop);
        if (r) c.url = m ? await archive.url(m).catch(() => "data:,") : marker(r.path);
      }));
      el.setAttribute(a, a === "srcset" ? serializeSrcset(cands) : cands[0].url);
    })));
  }
  onMarkerError(img, url) {
    const id = (/^data:,gwtar-(\d+)-/.exec(url) || [])[1], path = markerPaths[id], p = img.parentNode;
    if (id == null) return false;
    task(async () => {
      const m = await archive.lookup(path);
      if (!m) return problem("missing", path, path + " is not in the archive");
      const u = await archive.url(m);
      markerURLs.set(+id, u);
      for (const el of p?.localName === "picture" ? p.children : [img]) {
        for (const a of ["srcset", "src"]) { const v = el.getAttribute(a); if (v?.includes(url)) el.setAttribute(a, v.split(url).join(u)); }
      }
      await img.decode().catch(noop);
    }, img, path);
    return true;
  }
  // Media: a MediaSource placeholder keeps the controls live without fetching a byte; the first "play"
  // swaps in a streamable URL (member URL, file slice) or, failing those, a verified blob. A page's
  // own el.play() meanwhile gets a promise that settles with the real source's play(): the swap's
  // el.load() would otherwise reject the placeholder's play() with an AbortError.
  media(el) {
    const own = el.getAttribute("data-gwtar-src"), kids = [...el.children];
    const sources = kids.filter(c => c.localName === "source" && c.hasAttribute("data-gwtar-src"));
    if (own == null && !sources.length) return;
    if (window.MediaSource) el.setAttribute("src", URL.createObjectURL(new MediaSource()));
    const waiting = [], realPlay = HTMLMediaElement.prototype.play;
    const settle = (ok, value) => { delete el.play; waiting.splice(0).forEach(w => w[ok ? 0 : 1](value)); };
    el.play = () => new Promise((resolve, reject) => { waiting.push([resolve, reject]); start(); });
    const start = () => {
      if (start.done) return;
      start.done = true;
      el.removeEventListener("play", start);
      const node = own == null ? sources.find(s => !s.type || el.canPlayType(s.type)) || sources[0] : null;
      const ref = node ? node.getAttribute("data-gwtar-src") : own;
      [el, ...sources].forEach(s => s.removeAttribute("data-gwtar-src"));
      task(async () => {
        await Promise.all(kids.filter(t => t.localName === "track" && t.hasAttribute("data-gwtar-src")).map(t => {
          const ts = t.getAttribute("data-gwtar-src");
          t.removeAttribute("data-gwtar-src");
          return this.load(t, ts, u => t.setAttribute("src", u));
        }));
        const m = await this.ctx.entry(ref), u = m && await archive.mediaURL(m);
        if (!u) return settle(false, new DOMException("The archive does not hold this media", "NotSupportedError"));
        if (node) { el.removeAttribute("src"); node.setAttribute("src", u); } else el.setAttribute("src", u);
        el.load();
        realPlay.call(el).then(v => settle(true, v), e => { if (waiting.length) settle(false, e); else delete el.play; });
      }, el, ref);
    };
    el.addEventListener("play", start);
    if (el.autoplay) start();
  }
  // CSS images: after layout, read which markers elements use (computed styles), load those near the
  // viewport now and the others as they approach it, then put the blob URLs into the CSSOM.
  sweep() {
    if (!markerPaths.length) return;
    let stale = false;
    const near = [], props = "background-image list-style-image border-image-source mask-image -webkit-mask-image content cursor shape-outside".split(" ");
    for (const el of this.doc.getElementsByTagName("*")) {
      const ids = [];
      for (const pseudo of [null, "::before", "::after"]) {
        const cs = getComputedStyle(el, pseudo);
        for (const p of props) {
          const v = cs.getPropertyValue(p);
          if (v.includes("gwtar-")) v.replace(MARKER, (_, id) => { if (!markerURLs.has(+id)) ids.push(+id); else stale = true; });
        }
      }
      if (!ids.length) continue;
      const rc = el.getBoundingClientRect();
      if (rc.bottom > -1000 && rc.top < innerHeight + 1000) near.push(...ids);
      else { this.waitCss.set(el, ids); this.io.observe(el); }
    }
    this.loadMarkers(near);
    // A marker whose member was loaded after this page's stylesheets were made (for the page before,
    // while this one was being prepared): its URL is known but these rules still hold the marker.
    if (stale) this.patch();
  }
  loadMarkers(ids) {
    const todo = [...new Set(ids)].filter(id => !markerURLs.has(id));
    if (todo.length) {
      track(Promise.all(todo.map(id => task(async () => {
        const m = await archive.lookup(markerPaths[id]);
        if (m) markerURLs.set(id, await archive.url(m));
        else problem("missing", markerPaths[id], markerPaths[id] + " is not in the archive");
      }, null, markerPaths[id]))).then(() => this.patch()));
    }
  }
  patch() {
    const fix = v => v.replace(MARKER, (m, id) => markerURLs.get(+id) || m);
    const walk = rules => {
      for (const r of rules || []) {
        const st = r.style;
        if (st && !(r instanceof CSSFontFaceRule)) {
          for (let k = 0; k < st.length; k++) {
            const name = st[k], v = st.getPropertyValue(name), nv = v.includes("gwtar-") ? fix(v) : v;
            if (nv !== v) st.setProperty(name, nv, st.getPropertyPriority(name));
          }
        }
        try { walk(r.styleSheet ? r.styleSheet.cssRules : r.cssRules); } catch (e) { /* unreadable */ }
      }
    };
    for (const s of this.doc.styleSheets) { try { walk(s.cssRules); } catch (e) { /* unreadable */ } }
    for (const el of this.doc.querySelectorAll("[style*='gwtar-']")) el.setAttribute("style", fix(el.getAttribute("style")));
  }
  scheduleSweep() {
    clearTimeout(sweepTimer);
    sweepTimer = later(() => { sweepTimer = 0; if (current?.lazy === this) this.sweep(); }, 50);
  }
  // In the live document: observe deferred elements; re-sweep on what page scripts change; follow
  // images that page scripts make (the loader itself only sets src, href and style).
  start() {
    this.io = new IntersectionObserver(entries => entries.forEach(en => {
      const el = en.target;
      if (!en.isIntersecting) return;
      this.io.unobserve(el);
      if (this.waitCss.has(el)) { this.loadMarkers(this.waitCss.get(el)); this.waitCss.delete(el); }
      if (el.matches(LAZY)) this.activate(el, false);
    }), { rootMargin: "1000px 0px" });
    this.doc.querySelectorAll(LAZY).forEach(el => this.observe(el));
    this.doc.querySelectorAll("img[src]").forEach(el => this.runtimeRef(el));
    new MutationObserver(records => {
      let sweep = false;
      for (const rec of records) {
        if (rec.type === "attributes") { if (rec.attributeName === "src") this.runtimeRef(rec.target); else sweep = true; continue; }
        for (const n of rec.addedNodes) {
          if (n.nodeType !== 1 || n === NS.notice) continue;
          sweep = true;
          [n, ...n.querySelectorAll("*")].forEach(x => { if (x.matches(LAZY)) this.observe(x); this.runtimeRef(x); });
        }
      }
      if (sweep) this.scheduleSweep();
    }).observe(this.doc.documentElement, { subtree: true, childList: true, attributes: true, attributeFilter: ["class", "src", "open"] });
    addEventListener("resize", () => this.scheduleSweep());
    this.doc.addEventListener("load", e => { if (e.target.localName === "link") this.scheduleSweep(); }, true);
  }
  observe(el) {
    const t = el.localName;
    if (isMediaChild(el)) return;
    if (t === "link" && !this.ready) this.afterReady.push(el);
    else if (t === "link" || t === "html" || t === "body") this.activate(el, false);
    else this.io.observe(el);
  }
  readyNow() {
    this.ready = true;
    this.afterReady.splice(0).forEach(el => this.activate(el, false));
  }
  // A page script set img.src to a relative URL: it resolved against the member-URL base (or the
  // host's root). Map it back to a member and load that; the host may have seen one request.
  runtimeRef(img) {
    const v = img.localName === "img" && img.getAttribute("src"), prefix = docURL + "/~/";
    if (!v || /^(blob|data):/.test(v)) return;
    let abs;
    try { abs = new URL(v, img.baseURI); } catch (e) { return; }
    let path = abs.href.startsWith(prefix) ? abs.href.slice(prefix.length).split(/[?#]/)[0] : abs.origin === location.origin ? abs.pathname.slice(1) : null;
    if (path == null) return;
    path = path.split("/").map(decodeSegment).join("/");
    task(async () => {
      const m = await archive.lookup(path), u = m && await archive.url(m);
      if (u && img.getAttribute("src") === v) img.src = u;
    }, img, path);
  }
}

// ------------------------------------------------------------ the document: render, route, notices

let archive = null, current = null, renderSeq = 0, scrollTimer = 0;

// Resolves when nothing is loading: for tests, benchmarks and screenshots.
NS.idle = () => new Promise(resolve => {
  let quiet = 0;
  (function check() {
    quiet = pending === 0 && !sweepTimer && NS.state !== "loading" ? quiet + 1 : 0;
    if (quiet >= 2) resolve();
    else requestAnimationFrame(() => later(check, 16));
  })();
});
// Resolves when every stylesheet link of the document has loaded or failed (at most 5 s each).
const sheetsApplied = d => Promise.all([...d.querySelectorAll("link[rel~=stylesheet]")].map(l => l.sheet || l.disabled ||
  new Promise(r => { l.addEventListener("load", r); l.addEventListener("error", r); later(r, 5000); })));
NS.go = (path, frag, query) => { location.hash = routeHash(path, frag, query); };
// For a page shown by the loader (the search page, formats/gwtar.md section 7.2): the route of the
// address, the address of a route (a link that opens a member here), a blob URL of a member's
// verified bytes (null when the archive has no such member; rejects when its SHA-256 does not match),
// the same bytes themselves (no blob, no element to load it: the search page reads its index files so),
// and the query of the page shown rewritten in place (pushed when `push`): no render, no reload.
NS.route = () => parseRoute(location.hash);
NS.href = (path, query, frag) => routeURL(path, frag, query);
NS.url = async (path, type) => {
  const m = archive && await archive.lookup(path);
  return m ? archive.url(m, type) : null;
};
NS.bytes = async (path) => {
  const m = archive && await archive.lookup(path);
  return m ? archive.bytes(m) : null;
};
NS.setQuery = (query, push) => {
  if (!current || !current.path) return;
  const u = routeURL(current.path, null, query);
  current.query = query;
  history[push ? "pushState" : "replaceState"](null, "", u);
};

// Replace the whole document: standards or quirks mode as the page's doctype says, <html> and <body>
// attributes kept, scripts run by the parser in order. document.open() drops every listener, so the
// loader's own are added again each time.
function write(html) {
  clearTimeout(scrollTimer);
  doc.open();
  addEventListener("hashchange", onRoute);
  addEventListener("error", onError, true);
  addEventListener("submit", onSubmit);
  addEventListener("scroll", () => { clearTimeout(scrollTimer); scrollTimer = later(saveScroll, 200); }, { passive: true });
  doc.write(html);
  doc.close();
}
function saveScroll() { try { history.replaceState({ gwtarScroll: scrollY }, ""); } catch (e) { /* rate-limited */ } }
function onError(ev) {
  const t = ev.target;
  if (t?.localName === "img" && current?.lazy?.onMarkerError(t, t.currentSrc || t.getAttribute("src") || "")) ev.stopImmediatePropagation();
}
// A GET form whose action names a member opens that member's route with the form's fields as the
// route's query. Runs after the page's own listeners (window, bubbling): a page that handles its
// form itself (preventDefault) keeps it; POST, and a submitter with its own formaction, are left to
// the browser.
function onSubmit(ev) {
  const f = ev.target, s = ev.submitter, path = f?.getAttribute?.("data-gwtar-action");
  const method = (s?.getAttribute("formmethod") || f?.getAttribute?.("method") || "get").toLowerCase();
  if (ev.defaultPrevented || path == null || method !== "get" || !archive || s?.hasAttribute("formaction")) return;
  let data;
  try { data = new FormData(f, s); } catch (e) { data = new FormData(f); }
  ev.preventDefault();
  location.hash = routeHash(path, null, new URLSearchParams(data).toString());
}
function onRoute() {
  if (!archive) return;
  const r = parseRoute(location.hash), path = r.path || archive.main;
  if (current && path === current.path && r.query === (current.query == null ? null : current.query) && NS.state !== "error") scrollToFragment(r.fragment);
  else render(path, r.fragment, r.query);
}
function scrollToFragment(frag) {
  if (!frag) return scrollTo(0, history.state?.gwtarScroll || 0);
  const id = decodeSegment(frag), el = doc.getElementById(id) || doc.getElementsByName(id)[0];
  if (el) el.scrollIntoView();
  else if (/^top$/i.test(id)) scrollTo(0, 0);
}

async function render(path, frag, query) {
  const seq = ++renderSeq, ctx = new Ctx(path, false);
  NS.state = "loading";
  try {
    const m = await archive.lookup(path);
    if (!m) return notFound(path);
    if (m.kind !== "page" && !/html/.test(m.type)) return await viewAsset(m);
    const bytes = archive.bytes(m);
    // The main page's first request also asks for the stylesheets and scripts listed right after it
    // (one contiguous range): the first paint needs them.
    if (!current && path === archive.main) {
      const list = [...archive.listed.values()];
      for (const x of list.slice(list.indexOf(m) + 1)) {
        if (!/css|javascript|ecmascript/.test(x.type) || x.offset + x.size - m.offset > 512 << 10) break;
        archive.bytes(x).catch(noop);
      }
    }
    const b = await bytes, d = new DOMParser().parseFromString(decodeText(b, sniffCharset(b)), "text/html");
    await ctx.prepare(d);
    if (seq !== renderSeq) return;
    const lazy = new Lazy(ctx, doc);
    current = { path, query: query == null ? null : query, lazy };
    NS.page = path;
    write(serialize(d));
    if (NS.stats.written == null) NS.stats.written = performance.now();
    NS.state = "rendering";
    if (ctx.refresh) later(() => seq === renderSeq && (ctx.refresh[1] === routeURL(path) ? render(path) : location.replace(ctx.refresh[1])), ctx.refresh[0]);
    let started = false;
    const go = () => {
      if (started) return;
      started = true;
      lazy.start();
      scrollToFragment(frag);
      const y = scrollY;
      // idle() waits for the first sweep, whose loads it then tracks: none may be in flight unseen.
      // It runs once the page's stylesheets are applied (a blob: sheet written with the page may
      // still be loading at DOMContentLoaded; a sweep before it would see no marker); a sheet that
      // arrives later (or that a script adds) sweeps again when it loads.
      track(sheetsApplied(lazy.doc).then(() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => { try { lazy.sweep(); } finally { r(); } })))));
      later(async () => {
        await NS.idle();
        await doc.fonts.ready;
        if (seq !== renderSeq) return;
        NS.state = "ready";
        if (scrollY === y) scrollToFragment(frag);
        lazy.readyNow();
        if (NS.stats.firstRender == null) NS.stats.firstRender = performance.now();
        showNotice();
        later(() => archive.loadIndex().then(() => showVersions(path)).catch(noop), 500);
      });
    };
    if (doc.readyState === "loading") doc.addEventListener("DOMContentLoaded", go);
    else go();
    later(go, 3000);
  } catch (err) {
    if (seq === renderSeq) {
      fatal(err instanceof IntegrityError ? "This page failed its integrity check and is not shown. " + err.message :
        "The page " + path + " could not be loaded: " + (err?.message || err), true);
    }
  }
}

function shell(title, body) {
  return "<!DOCTYPE html><html><head><meta charset=utf-8><meta name=viewport content='width=device-width'><title>" + esc(title) +
    "</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:44em;margin:3em auto;padding:0 1em}pre,code{background:#eee;overflow-wrap:anywhere}" +
    "pre{padding:.6em;white-space:pre-wrap}#drop{border:3px dashed #999;border-radius:8px;padding:0 2em}#drop.on{border-color:#36c}</style></head><body>" + body + "</body></html>";
}
function extractHelp(hdr) {
  return "<p>Or extract it: it is an HTML header followed by a tar archive.</p><pre>tail -c +" + (hdr.overhead + 1) + " " + esc(shellQuote(fileName())) +
    " | tar -x</pre><p>then open the extracted <code>" + esc(hdr.meta?.main || "index.html") + "</code>.</p>";
}
const mainLink = () => archive && archive.main ? "<p><a href='" + esc(routeURL(archive.main)) + "'>Go to the archive's main page</a></p>" : "";
function fatal(message, help) {
  NS.state = "error";
  NS.error = message;
  current = null;
  write(shell("Archive error", "<h1>This archive could not be shown</h1><p id=gwtar-error>" + esc(message) + "</p>" + mainLink() + (help ? extractHelp(NS.header) : "")));
}
function notFound(path) {
  current = { path };
  NS.page = path;
  write(shell("Not in this archive", "<h1>Not in this archive</h1><p><code>" + esc(path) + "</code> was not captured.</p>" + mainLink()));
  NS.state = "ready";
}
// A member that is not a page (a linked PDF, image, text file) is shown by the browser's own viewer
// in a frame; audio and video get a streamable URL (Archive.mediaURL).
async function viewAsset(m) {
  const name = esc(m.path.split("/").pop()), u = /^(video|audio)\//.test(m.type) ? await archive.mediaURL(m) : await archive.url(m);
  current = { path: m.path };
  NS.page = m.path;
  write(shell(name, mainLink() + "<p><a download='" + name + "' href='" + u + "'>Save " + name + "</a></p><iframe src='" + u + "' style='width:100%;height:75vh'></iframe>"));
  NS.state = "ready";
}

// Problems (integrity failures, failed loads, notices) in a box of their own, in a shadow root that
// the page's styles cannot reach.
function showNotice() {
  const shown = NS.problems.filter(p => p.kind !== "missing");
  if (!doc.documentElement || !shown.length || NS.state === "loading") return;
  let host = NS.notice;
  if (!host || !host.isConnected) {
    host = NS.notice = doc.createElement("div");
    host.setAttribute("data-gwtar-notice", "");
    host.style.cssText = "all:initial;position:fixed;z-index:2147483647;left:8px;right:8px;bottom:8px";
    doc.documentElement.append(host);
    host.attachShadow({ mode: "open" });
  }
  host.shadowRoot.innerHTML = "<div role=alert style='font:14px/1.4 system-ui,sans-serif;background:#fff4e5;color:#222;border:2px solid #c60;border-radius:6px;padding:6px 10px;max-height:30vh;overflow:auto'>" +
    "<button style='float:right'>&times;</button><b>This archive has problems:</b>" + shown.map(p => "<div class=" + p.kind + ">" + esc(p.what) + "</div>").join("") + "</div>";
  host.shadowRoot.querySelector("button").onclick = () => host.remove();
}

// ------------------------------------------------------------ versions: the picker and the diff view

// The route of <path> in version <id> (the newest: the plain path).
const vRoute = (id, path, list) => id === list[list.length - 1].id ? path : "@" + id + "/" + path;
// A box of its own (a shadow root, as the notice; not on the archive's own pages, the diff page
// among them): the version shown, and a link to what changed in
// this page since the version before: the diff page the packer adds (formats/gwtar.md section 13.4),
// a page of the archive like the search page, which reads both versions through gwtar.url.
async function showVersions(path) {
  const v = await archive.versions(), list = v?.list;
  if (!list || !current || current.path !== path || path.startsWith("_archiver/")) return;
  const at = VP.exec(path), id = at ? at[1] : list[list.length - 1].id, real = at ? at[2] : path, i = list.findIndex(e => e.id === id), host = doc.createElement("div");
  host.setAttribute("data-gwtar-versions", "");
  host.style.cssText = "all:initial;position:fixed;z-index:2147483647;right:8px;top:8px;font:13px system-ui;background:#fff;border:1px solid #888;padding:4px";
  doc.documentElement.append(host);
  host.attachShadow({ mode: "open" }).innerHTML = "<select>" + list.map(e => "<option value=" + e.id + (e.id === id ? " selected>" : ">") + e.date + "</option>").join("") + "</select>" +
    (i > 0 ? " <a href='" + esc(routeURL(VDIFF, null, "from=" + list[i - 1].id + "&to=" + id + "&path=" + encodeURIComponent(real))) + "'>changes</a>" : "");
  host.shadowRoot.firstChild.onchange = ev => NS.go(vRoute(ev.target.value, real, list));
}
// ------------------------------------------------------------ opening from disk

function picker(hdr, message) {
  NS.state = "picker";
  const name = esc(fileName());
  write(shell("Open this archive", "<h1>Open this archive</h1><p>This page is a web archive, <code>" + name + "</code>. A page opened from disk may not read its own " +
    "file, so choose the file once more: it is then shown here, read straight from disk, with nothing uploaded or extracted.</p>" +
    (message ? "<p id=gwtar-error style='color:#b00'>" + esc(message) + "</p>" : "") +
    "<div id=drop><p><label>Choose <b>" + name + "</b>: <input type=file id=gwtar-file accept='.html,.htm'></label></p><p>or drop it on this page.</p></div>" + extractHelp(hdr)));
  const input = doc.getElementById("gwtar-file"), zone = doc.getElementById("drop");
  input.addEventListener("change", () => input.files[0] && openFile(input.files[0]));
  addEventListener("dragover", ev => { ev.preventDefault(); zone.className = "on"; });
  addEventListener("dragleave", () => { zone.className = ""; });
  addEventListener("drop", ev => { ev.preventDefault(); const f = ev.dataTransfer?.files[0]; if (f) openFile(f); });
}
// Read the chosen file's own header (it need not be this archive) and show it from disk.
async function openFile(file) {
  NS.state = "loading";
  try {
    let hdr = null;
    for (let size = 65536; !hdr; size *= 4) {
      hdr = parseHeader(latin1(new Uint8Array(await file.slice(0, size).arrayBuffer())));
      if (size >= file.size || size > 64 << 20) break;
    }
    if (!hdr || !hdr.meta) return picker(NS.header, (file.name || "That file") + " is not a gwtar archive written by archiver.");
    if (file.size < hdr.total) return picker(hdr, file.name + " is cut short: it has " + file.size + " bytes, the archive needs " + hdr.total + ".");
    start(new FileSource(file), hdr);
  } catch (err) {
    picker(NS.header, "Could not read the file: " + err.message);
  }
}
NS.open = openFile;

// Page scripts that fetch() a member URL (a relative URL resolves to one, through the base the loader
// adds) get the member from the archive, on any host and from disk.
function pageFetch(input, init) {
  try {
    const req = input instanceof Request ? input : new Request(new URL(String(input), doc.baseURI), init), prefix = docURL + "/~/";
    if (archive && req.method === "GET" && req.url.startsWith(prefix)) {
      return archive.lookup(req.url.slice(prefix.length).split(/[?#]/)[0].split("/").map(decodeSegment).join("/"))
        .then(m => m ? archive.bytes(m).then(b => new Response(b, { headers: { "Content-Type": m.type } })) : realFetch(input, init));
    }
  } catch (e) { /* not a member */ }
  return realFetch(input, init);
}

function start(source, hdr) {
  archive = NS.archive = new Archive(source, hdr);
  current = null;
  if (source instanceof RangeSource && (parseRoute(location.hash).path || archive.main) === archive.main) archive.warm();
  onRoute();
}

const boot = fn => window.scheduler?.postTask ? scheduler.postTask(fn, { priority: "user-blocking" }) : later(fn);
boot(() => {
  // Read the header's values (the v1 globals and extension 1's metadata element) before the document
  // is replaced; replace the parser, so nothing after the header is parsed; stop the download.
  NS.stats.boot = performance.now();
  let meta = null;
  try { meta = JSON.parse(doc.getElementById("archiver-gwtar").textContent); } catch (e) { /* damaged */ }
  /* global overhead, totalArchiveSize, assets */
  const hdr = NS.header = {
    overhead: typeof overhead === "number" ? overhead : 0, total: typeof totalArchiveSize === "number" ? totalArchiveSize : 0,
    assets: typeof assets === "object" ? assets : null, meta
  };
  window.stop = realStop;
  window.fetch = pageFetch;
  doc.open();
  doc.write("<link rel=icon href='data:,'>");
  doc.close();
  realStop.call(window);
  if (!meta || !hdr.overhead || !hdr.total) return fatal("The archive's header is damaged: its metadata cannot be read.", false);
  if (location.protocol === "file:") return picker(hdr, null);
  start(new RangeSource(docURL, hdr.total), hdr);
});
})();
