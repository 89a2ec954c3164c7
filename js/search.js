/* archiver's search page (formats/search.md §7): _archiver/search/index.html loads this classic
   script. It reads ?q=, loads the index by injecting <script> elements (fetch is refused on file://),
   each file calling window.archiverSearch(name, value) once; loads only the manifest, the shards
   whose term range can hold the query's terms and the fragment groups of the results shown; checks
   each file's SHA-256 (its own, synchronous: no crypto.subtle needed); says "the index is damaged" when a
   file is missing, fails its check or never registers. Part 1 is pure (the tokenizer, the query
   parser, ranking, snippets: the rules of archiver/search/*.py, tested against the same vectors);
   node's tests load it with require(). Part 2 runs in the browser. No request leaves the folder. */
(function () {
  "use strict";

  // ---------------------------------------------------------------- part 1: pure
  var TOKENIZER = 1;
  var VERSION = 3;  // reads 1, 2 and 3 (formats/search.md §1)
  var MAX_TERM = 64;
  var WORD = "[\\p{L}\\p{M}\\p{N}]+";
  var CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u30fc]/u;
  var MARK = /\p{M}/u;
  var LETTERS = { "ß": "ss", "æ": "ae", "œ": "oe", "ø": "o", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i", "ς": "σ" };
  var K1 = 1.2, B = 0.75, TITLE = 3.0, HEADING = 1.5, PREFIX = 0.8, PHRASE = 1.5, NEAR = 1.2;
  var NEAR_WINDOW = 8, MAX_EXPANSIONS = 64, MAX_CLAUSES = 16, WIDTH = 200, LEAD = 40;

  function fold(s) {
    s = s.normalize("NFKC").toLowerCase().replace(/[ßæœøłđðþıς]/g, function (c) { return LETTERS[c]; });
    return s.normalize("NFD").replace(/[\u0300-\u036f]/g, "").normalize("NFC");
  }

  function segments(cps) {
    var out = [], start = 0, kind = null;
    for (var i = 0; i < cps.length; i++) {
      var cjk = (kind !== null && MARK.test(cps[i])) ? kind : CJK.test(cps[i]);
      if (kind === null) { kind = cjk; } else if (cjk !== kind) { out.push([kind, start, i]); start = i; kind = cjk; }
    }
    if (kind !== null) { out.push([kind, start, cps.length]); }
    return out;
  }

  // Tokens of text from position: {term, position, start, end} (offsets in UTF-16 units).
  function tokens(text, position) {
    var out = [], m, re = new RegExp(WORD, "gu");
    position = position || 0;
    while ((m = re.exec(text)) !== null) {
      var cps = Array.from(m[0]), offs = [], o = m.index;
      for (var k = 0; k < cps.length; k++) { offs.push(o); o += cps[k].length; }
      offs.push(o);
      var segs = segments(cps);
      for (var si = 0; si < segs.length; si++) {
        var seg = segs[si], n = seg[2] - seg[1];
        var folded = fold(cps.slice(seg[1], seg[2]).join("")), fcps = Array.from(folded);
        var exact = fcps.length === n, s0 = offs[seg[1]], e0 = offs[seg[2]];
        if (seg[0]) {
          var chars = exact ? fcps : fcps.filter(function (c) { return !MARK.test(c); });
          exact = exact && chars.length === n;
          var grams = Math.max(1, chars.length - 1);
          for (var g = 0; g < grams; g++) {
            var gram = chars.slice(g, g + 2).join("");
            if (gram) {
              var gl = Array.from(gram).length;
              out.push({ term: gram, position: position, start: exact ? offs[seg[1] + g] : s0, end: exact ? offs[seg[1] + g + gl] : e0 });
              position++;
            }
          }
          continue;
        }
        var wre = new RegExp(WORD, "gu"), w;
        while ((w = wre.exec(folded)) !== null) {
          var wl = Array.from(w[0]).length;
          if (wl <= MAX_TERM) {
            var at = seg[1] + Array.from(folded.slice(0, w.index)).length;
            out.push({ term: w[0], position: position, start: exact ? offs[at] : s0, end: exact ? offs[at + wl] : e0 });
          }
          position++;
        }
      }
    }
    return out;
  }

  function terms(text) { return tokens(text).map(function (t) { return t.term; }); }

  // Words and "quoted phrases"; the last word, when nothing follows it, is also a prefix.
  function parse(query) {
    var re = /"([^"]*)"?|(\S+)/g, m, found = [], clauses = [];
    while ((m = re.exec(query)) !== null) { found.push({ quoted: m[1] !== undefined, text: m[1] !== undefined ? m[1] : m[2], end: re.lastIndex }); }
    for (var i = 0; i < found.length; i++) {
      var t = terms(found[i].text);
      if (!t.length) { continue; }
      clauses.push({ terms: t, prefix: i === found.length - 1 && !found[i].quoted && found[i].end === query.length });
    }
    return clauses.slice(0, MAX_CLAUSES);
  }

  // UTF-16 order, as the shards are sorted.
  function shardsFor(shards, term, prefix) {
    var out = [];
    for (var i = 0; i < shards.length; i++) {
      var first = shards[i][0], last = shards[i][1];
      if (last < term) { continue; }
      if (!(first <= term || (prefix && first.indexOf(term) === 0))) { break; }
      out.push(i);
    }
    return out;
  }

  // Format 2's postings string -> its numbers (5-bit little-endian groups; the last 32 digits say
  // more groups follow); format 1's list of numbers is returned as it is.
  var MAX_POSITIONS = 32;  // positions kept per term per document
  // The manifest's bounds (formats/search.md §4.2, build.py's MAX_SHARDS, MAX_GROUPS, MAX_TEXT_FILES).
  var MAX_ROWS = { shards: 1 << 18, docs: 1 << 18, text: 1 << 20 }, MAX_TEXT_FILES = 1 << 20;

  // Why a manifest holds more rows or text files than the format allows ("" when it does not).
  function boundsProblem(m) {
    if (!m || typeof m !== "object") { return ""; }
    for (var key in MAX_ROWS) {
      if (Array.isArray(m[key]) && m[key].length > MAX_ROWS[key]) { return "its " + key + " table has " + m[key].length + " rows, more than the format allows (" + MAX_ROWS[key] + ")"; }
    }
    var files = Number(m.text_files || 0);
    if (files > MAX_TEXT_FILES) { return "says " + files + " text files, more than the format allows (" + MAX_TEXT_FILES + ")"; }
    return "";
  }
  var DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_";
  function unpack(text) {
    if (typeof text !== "string") {  // format 1: a list of counts (a negative one walked decode back for good)
      if (!Array.isArray(text) || !text.every(function (n) { return Number.isInteger(n) && n >= 0; })) { throw new Error("postings are not a list of counts"); }
      return text;
    }
    var out = [], value = 0, scale = 1;
    for (var i = 0; i < text.length; i++) {
      var d = DIGITS.indexOf(text[i]);
      if (d < 0) { throw new Error("a postings string holds " + JSON.stringify(text[i])); }
      if (d < 32) { out.push(value + d * scale); value = 0; scale = 1; } else { value += (d - 32) * scale; scale *= 32; }
    }
    if (scale !== 1) { throw new Error("a postings string ends inside a number"); }
    return out;
  }

  // Format 3 (lengths given: the manifest's, two numbers a document): doc delta, tf in title,
  // headings and body, then min(32, their sum) positions (formats/search.md §4.3).
  function decode(flat, lengths) {
    var out = new Map(), doc = 0, i = 0;
    if (lengths) {
      while (i < flat.length) {
        doc += flat[i];
        var t = flat[i + 1], h = flat[i + 2], b = flat[i + 3], m = Math.min(MAX_POSITIONS, t + h + b), ps = [], q = 0;
        if (i + 4 + m > flat.length || 2 * doc + 1 >= lengths.length) { throw new Error("a posting is cut or names no document"); }
        for (var j = 0; j < m; j++) { q += flat[i + 4 + j]; ps.push(q); }
        out.set(doc, { title: t, headings: h, body: b, length: lengths[2 * doc], titleLength: lengths[2 * doc + 1], positions: ps, complete: ps.length >= t + h + b });
        i += 4 + m;
      }
      return out;
    }
    while (i + 7 <= flat.length) {
      doc += flat[i];
      var n = flat[i + 6], positions = [], p = 0, end = Math.min(flat.length, i + 7 + n);
      for (var k = i + 7; k < end; k++) { p += flat[k]; positions.push(p); }
      out.set(doc, { title: flat[i + 1], headings: flat[i + 2], body: flat[i + 3], length: flat[i + 4], titleLength: flat[i + 5], positions: positions,
        complete: positions.length >= flat[i + 1] + flat[i + 2] + flat[i + 3] });
      i += 7 + n;
    }
    return out;
  }

  // Term -> flat postings of one index: the term, and with prefix the most frequent terms it begins.
  function pick(shardMaps, term, prefix, lengths) {
    var found = new Map();
    shardMaps.forEach(function (map) {
      map.forEach(function (flat, t) { if (t === term || (prefix && t.indexOf(term) === 0)) { found.set(t, unpack(flat)); } });
    });
    if (prefix && found.size > MAX_EXPANSIONS) {
      var keep = Array.from(found.keys()).sort(function (a, b) {
        return ((a !== term) - (b !== term)) || (found.get(b).length - found.get(a).length) || (a < b ? -1 : a > b ? 1 : 0);
      }).slice(0, MAX_EXPANSIONS);
      var kept = new Map();
      keep.forEach(function (t) { kept.set(t, found.get(t)); });
      found = kept;
    }
    var out = new Map();
    found.forEach(function (flat, t) { out.set(t, decode(flat, lengths)); });
    return out;
  }

  function idf(n, df) { return Math.log(1 + (n - df + 0.5) / (df + 0.5)); }

  function termScore(p, w, avgdl) {
    var tf = p.body + 2 * p.headings;
    var body = tf ? tf * (K1 + 1) / (tf + K1 * (1 - B + B * p.length / avgdl)) : 0;
    return w * ((p.title ? TITLE : 0) + HEADING * p.headings / (p.headings + 0.5) + body);
  }

  function allPositions(alts) {
    var s = new Set();
    alts.forEach(function (p) { p.positions.forEach(function (q) { s.add(q); }); });
    return s;
  }

  function proximity(spans) {
    var best = -1;
    for (var i = 1; i < spans.length; i++) {
      var prev = spans[i - 1][0].slice(0, MAX_EXPANSIONS), width = spans[i - 1][1], cur = spans[i][0].slice(0, MAX_EXPANSIONS);
      if (!prev.length || !cur.length) { return 1; }
      var gap = Infinity;
      prev.forEach(function (p) { cur.forEach(function (c) { gap = Math.min(gap, Math.abs(c - (p + width))); }); });
      best = Math.max(best, gap);
    }
    return best === 0 ? PHRASE : best <= NEAR_WINDOW ? NEAR : 1;
  }

  // Rank the documents of several indexes: looked[a][clause][k] = Map term -> Map doc -> posting.
  function rank(indexes, clauses, looked) {
    var df = new Map(), anyDf = new Map(), n = 0, queryTerms = [];
    clauses.forEach(function (c) { queryTerms = queryTerms.concat(c.terms); });
    indexes.forEach(function (ix) { n += ix.documents; });
    looked.forEach(function (perClause) { perClause.forEach(function (perTerm, ci) { perTerm.forEach(function (found, k) {
      found.forEach(function (posts, t) { df.set(t, (df.get(t) || 0) + posts.size); });
      var c = clauses[ci];
      if (c.prefix && k === c.terms.length - 1) {
        var docs = new Set();
        found.forEach(function (posts) { posts.forEach(function (_p, d) { docs.add(d); }); });
        anyDf.set(c.terms[k], (anyDf.get(c.terms[k]) || 0) + docs.size);
      }
    }); }); });
    // How rare a matched term is: its df, or for a term a prefix stands for, the prefix's.
    function rarity(t) {
      for (var i = 0; i < clauses.length; i++) {
        var last = clauses[i].terms[clauses[i].terms.length - 1];
        if (clauses[i].prefix && t !== last && t.indexOf(last) === 0) { return anyDf.get(last); }
      }
      return df.get(t);
    }
    var ranked = [];
    looked.forEach(function (perClause, a) {
      var candidates = null;
      perClause.forEach(function (perTerm) { perTerm.forEach(function (found) {
        var docs = new Set();
        found.forEach(function (posts) { posts.forEach(function (_p, d) { docs.add(d); }); });
        candidates = candidates === null ? docs : new Set(Array.from(candidates).filter(function (d) { return docs.has(d); }));
      }); });
      Array.from(candidates || []).sort(function (x, y) { return x - y; }).forEach(function (doc) {
        var score = 0, spans = [], ok = true, titleHits = 0, here = [];
        for (var ci = 0; ci < clauses.length && ok; ci++) {
          var c = clauses[ci], perTerm = perClause[ci];
          var h = perTerm.map(function (found) { var m = new Map(); found.forEach(function (posts, t) { if (posts.has(doc)) { m.set(t, posts.get(doc)); } }); return m; });
          here = here.concat(h);
          var complete = h.every(function (alts) { return Array.from(alts.values()).every(function (p) { return p.complete; }); });
          var starts;
          if (h.length > 1) {
            var s = allPositions(h[0]);
            for (var k = 1; k < h.length; k++) { var at = allPositions(h[k]); s = new Set(Array.from(s).filter(function (q) { return at.has(q + k); })); }
            starts = (s.size || complete) ? Array.from(s).sort(function (x, y) { return x - y; }) : null;
            if (starts !== null && !starts.length) { ok = false; break; }
          } else {
            starts = Array.from(allPositions(h[0])).sort(function (x, y) { return x - y; });
          }
          spans.push([starts || [], h.length]);
          h.forEach(function (alts, k) {
            var best = 0;
            alts.forEach(function (p, t) {
              var exact = t === c.terms[k];
              var v = termScore(p, idf(n, exact ? df.get(t) : anyDf.get(c.terms[k])), indexes[a].avgdl);
              best = Math.max(best, exact ? v : v * PREFIX);
              if (exact && p.title) { titleHits = Math.max(titleHits, p.titleLength); }
            });
            score += best;
          });
        }
        if (!ok) { return; }
        if (spans.length > 1) { score *= proximity(spans); }
        var tier = 0;
        if (titleHits === queryTerms.length) {
          tier = 1;
          queryTerms.forEach(function (t, k) { var p = here[k].get(t); if (!p || !p.title || (p.complete && p.positions.indexOf(k) < 0)) { tier = 0; } });
        }
        var pairs = [];
        here.forEach(function (alts) { alts.forEach(function (p, t) { pairs.push([rarity(t), p.title + p.headings + p.body, t, p]); }); });
        pairs.sort(function (x, y) { return (x[0] - y[0]) || (x[1] - y[1]) || (x[2] < y[2] ? -1 : x[2] > y[2] ? 1 : 0); });
        var at = -1;
        for (var pi = 0; pi < pairs.length && at < 0; pi++) {
          var p = pairs[pi][3];
          p.positions.forEach(function (q) { if (q >= p.titleLength && (at < 0 || q < at)) { at = q; } });
        }
        ranked.push([tier, score, a, doc, at]);
      });
    });
    ranked.sort(function (x, y) { return (y[0] - x[0]) || (y[1] - x[1]) || (x[2] - y[2]) || (x[3] - y[3]); });
    return ranked;
  }

  function snippet(text, wanted, prefix) {
    var hits = tokens(text).filter(function (t) { return wanted.has(t.term) || (prefix && t.term.indexOf(prefix) === 0); });
    if (!hits.length) { return { text: text.slice(0, WIDTH), marks: [], before: false, after: text.length > WIDTH }; }
    var best = [0, 0], counts = new Map(), j = 0;
    for (var i = 0; i < hits.length; i++) {
      counts.set(hits[i].term, (counts.get(hits[i].term) || 0) + 1);
      while (hits[j].start < hits[i].start - WIDTH + LEAD) {
        var c = counts.get(hits[j].term) - 1;
        if (c) { counts.set(hits[j].term, c); } else { counts.delete(hits[j].term); }
        j++;
      }
      if (counts.size > best[0]) { best = [counts.size, j]; }
    }
    var first = hits[best[1]].start, begin = Math.max(0, first - LEAD);
    var space = text.lastIndexOf(" ", first - 1);
    if (begin > 0 && space >= begin) { begin = space + 1; }
    var end = Math.min(text.length, begin + WIDTH), marks = [];
    hits.forEach(function (h) {
      if (h.start >= begin && h.end <= end) {
        var a = h.start - begin, b = h.end - begin;
        if (marks.length && a <= marks[marks.length - 1][1]) { marks[marks.length - 1][1] = Math.max(marks[marks.length - 1][1], b); } else { marks.push([a, b]); }
      }
    });
    return { text: text.slice(begin, end), marks: marks, before: begin > 0, after: end < text.length };
  }

  // Format 3's payload of every file but the manifest: base 64 of zlib-compressed JSON (§4.1),
  // decoded here in one synchronous pass (RFC 1950/1951, Adler-32 checked). DecompressionStream was
  // the first reader: each file then cost a Blob, a stream and several tasks, and the ten fragment
  // groups and ten text files of a page of results queued behind one another (40-90 ms a batch in
  // Chromium under load against well under 1 ms here for a 2-16 KiB file).
  var MAX_INFLATED = 64 << 20;  // a stream expanding past it is damaged (a bomb): build.py's bound
  var LBASE = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
  var LEXTRA = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
  var DBASE = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577];
  var DEXTRA = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
  var CLORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];
  var fixedCodes = null;

  // A canonical Huffman code (RFC 1951 §3.2.2): a lookup table indexed by the next `bits` (at most
  // 9) input bits, each entry symbol << 4 | code length, 0 for a longer code (decoded bit by bit from
  // count and symbols, as zlib's puff does) or no code at all (an incomplete code's holes).
  var FAST = 9;
  function huffman(lengths) {
    var max = 0, count = new Int32Array(16), offs = new Int32Array(16), symbols = new Int32Array(lengths.length), i, len;
    for (i = 0; i < lengths.length; i++) { count[lengths[i]]++; if (lengths[i] > max) { max = lengths[i]; } }
    count[0] = 0;
    for (len = 1, i = 1; len < 16; len++) { i = (i << 1) - count[len]; if (i < 0) { throw new Error("a Huffman code is over-subscribed"); } }
    for (len = 1; len < 15; len++) { offs[len + 1] = offs[len] + count[len]; }
    for (i = 0; i < lengths.length; i++) { if (lengths[i]) { symbols[offs[lengths[i]]++] = i; } }
    var bits = Math.min(max, FAST), table = new Int32Array(1 << bits), code = 0, k = 0;
    for (len = 1; len <= bits; len++) {
      for (var c = 0; c < count[len]; c++, code++, k++) {
        var rev = 0;
        for (i = 0; i < len; i++) { rev = (rev << 1) | ((code >> i) & 1); }
        for (i = rev; i < table.length; i += 1 << len) { table[i] = (symbols[k] << 4) | len; }
      }
      code <<= 1;
    }
    return { table: table, bits: bits, count: count, symbols: symbols };
  }

  function unzlib(src) {
    var pos = 2, end = src.length, buf = 0, cnt = 0, out = new Uint8Array(Math.max(1024, src.length * 4)), op = 0;
    function cut() { return new Error("the zlib stream is cut"); }
    function bits(n) {
      while (cnt < n) { if (pos >= end) { throw cut(); } buf |= src[pos++] << cnt; cnt += 8; }
      var v = buf & ((1 << n) - 1);
      buf >>>= n; cnt -= n;
      return v;
    }
    function symbol(h) {
      while (cnt < h.bits && pos < end) { buf |= src[pos++] << cnt; cnt += 8; }
      var e = h.table[buf & ((1 << h.bits) - 1)], len = e & 15;
      if (len && len <= cnt) { buf >>>= len; cnt -= len; return e >> 4; }
      if (len) { throw cut(); }
      for (var code = 0, first = 0, index = 0, l = 1; l < 16; l++) {  // a code longer than the table
        code |= bits(1);
        var count = h.count[l];
        if (code - count < first) { return h.symbols[index + (code - first)]; }
        index += count; first += count; first <<= 1; code <<= 1;
      }
      throw new Error("the zlib stream holds an invalid code");
    }
    function room(n) {
      if (op + n <= out.length) { return; }
      if (op + n > MAX_INFLATED) { throw new Error("expands past " + (MAX_INFLATED >> 20) + " MiB"); }
      var bigger = new Uint8Array(Math.min(MAX_INFLATED, Math.max(out.length * 2, op + n)));
      bigger.set(out.subarray(0, op));
      out = bigger;
    }
    if (end < 6 || (src[0] & 15) !== 8 || (src[0] >> 4) > 7 || (src[1] & 32) || ((src[0] << 8) | src[1]) % 31) { throw new Error("is no zlib stream"); }
    var last = 0;
    while (!last) {
      last = bits(1);
      var type = bits(2), i, n;
      if (type === 0) {
        buf >>>= cnt & 7; cnt -= cnt & 7;
        n = bits(16);
        if ((bits(16) ^ 0xffff) !== n) { throw new Error("a stored block's length is damaged"); }
        if (pos + n > end) { throw cut(); }
        room(n); out.set(src.subarray(pos, pos + n), op); op += n; pos += n;
        continue;
      }
      var lit, dist;
      if (type === 1) {
        if (!fixedCodes) {
          var l = new Uint8Array(288);
          for (i = 0; i < 288; i++) { l[i] = i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8; }
          fixedCodes = [huffman(l), huffman(new Uint8Array(30).fill(5))];
        }
        lit = fixedCodes[0]; dist = fixedCodes[1];
      } else if (type === 2) {
        var nlit = bits(5) + 257, ndist = bits(5) + 1, nclen = bits(4) + 4, cl = new Uint8Array(19);
        if (nlit > 286 || ndist > 30) { throw new Error("a block has too many codes"); }
        for (i = 0; i < nclen; i++) { cl[CLORDER[i]] = bits(3); }
        var clCode = huffman(cl), lengths = new Uint8Array(nlit + ndist);
        for (i = 0; i < nlit + ndist;) {
          var s = symbol(clCode);
          if (s < 16) { lengths[i++] = s; continue; }
          var fill = 0, times;
          if (s === 16) { if (!i) { throw new Error("a code length repeats nothing"); } fill = lengths[i - 1]; times = 3 + bits(2); } else { times = s === 17 ? 3 + bits(3) : 11 + bits(7); }
          if (i + times > nlit + ndist) { throw new Error("code lengths overflow"); }
          while (times--) { lengths[i++] = fill; }
        }
        lit = huffman(lengths.subarray(0, nlit)); dist = huffman(lengths.subarray(nlit));
      } else {
        throw new Error("a block of the reserved type 3");
      }
      for (;;) {
        var sym = symbol(lit);
        if (sym < 256) { room(1); out[op++] = sym; continue; }
        if (sym === 256) { break; }
        sym -= 257;
        if (sym >= 29) { throw new Error("the zlib stream holds an invalid length"); }
        var len = LBASE[sym] + bits(LEXTRA[sym]), d = symbol(dist);
        if (d >= 30) { throw new Error("the zlib stream holds an invalid distance"); }
        d = DBASE[d] + bits(DEXTRA[d]);
        if (d > op) { throw new Error("the zlib stream refers back too far"); }
        room(len);
        for (i = 0; i < len; i++, op++) { out[op] = out[op - d]; }
      }
    }
    buf >>>= cnt & 7; cnt -= cnt & 7;
    var check = bits(8) * 16777216 + bits(8) * 65536 + bits(8) * 256 + bits(8);  // big-endian
    if (cnt || pos !== end) { throw new Error("the zlib stream is followed by other bytes"); }
    var a = 1, b = 0;
    for (var k = 0; k < op;) {
      for (var stop = Math.min(op, k + 5552); k < stop; k++) { a += out[k]; b += a; }
      a %= 65521; b %= 65521;
    }
    if (b * 65536 + a !== check) { throw new Error("the zlib stream fails its Adler-32 check"); }
    return out.subarray(0, op);
  }

  function fromBase64(text) {
    if (typeof Uint8Array.fromBase64 === "function") { return Uint8Array.fromBase64(text); }
    var raw = atob(text), bytes = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) { bytes[i] = raw.charCodeAt(i); }
    return bytes;
  }

  function inflateSync(b64) {
    if (typeof b64 !== "string") { throw new Error("is not a compressed payload"); }
    return JSON.parse(new TextDecoder().decode(unzlib(fromBase64(b64))));
  }

  function inflate(b64) { return Promise.resolve().then(function () { return inflateSync(b64); }); }

  // SHA-256 (FIPS 180-4) of bytes, as hex: synchronous, so checking a file against the manifest costs
  // no task hop to crypto.subtle, and it checks where the page has no crypto.subtle (plain http).
  var K256 = new Int32Array(64), H256 = new Int32Array(8);
  (function () {
    for (var n = 2, found = 0; found < 64; n++) {
      var prime = true;
      for (var d = 2; d * d <= n; d++) { if (n % d === 0) { prime = false; break; } }
      if (!prime) { continue; }
      if (found < 8) { H256[found] = (Math.sqrt(n) % 1) * 4294967296; }
      K256[found++] = (Math.cbrt(n) % 1) * 4294967296;
    }
  })();
  function sha256(bytes) {
    var n = bytes.length, padded = new Uint8Array(((n + 8) >> 6) * 64 + 64), w = new Int32Array(64), h = H256.slice(), i, j;
    padded.set(bytes);
    padded[n] = 0x80;
    var view = new DataView(padded.buffer);
    view.setUint32(padded.length - 8, Math.floor(n / 536870912));
    view.setUint32(padded.length - 4, (n << 3) >>> 0);
    for (var at = 0; at < padded.length; at += 64) {
      for (i = 0; i < 16; i++) { w[i] = view.getInt32(at + 4 * i); }
      for (i = 16; i < 64; i++) {
        var x = w[i - 15], y = w[i - 2];
        w[i] = (((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3)) + (((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10)) + w[i - 7] + w[i - 16] | 0;
      }
      var a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
      for (j = 0; j < 64; j++) {
        var t1 = k + (((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))) + ((e & f) ^ (~e & g)) + K256[j] + w[j] | 0;
        var t2 = (((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))) + ((a & b) ^ (a & c) ^ (b & c)) | 0;
        k = g; g = f; f = e; e = d + t1 | 0; d = c; c = b; b = a; a = t1 + t2 | 0;
      }
      h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += k;
    }
    var out = "";
    for (i = 0; i < 8; i++) { out += ("0000000" + (h[i] >>> 0).toString(16)).slice(-8); }
    return out;
  }

  var pure = { boundsProblem: boundsProblem, sha256: sha256, inflate: inflate, inflateSync: inflateSync, unzlib: unzlib, TOKENIZER: TOKENIZER, VERSION: VERSION, fold: fold, tokens: tokens, terms: terms, parse: parse, shardsFor: shardsFor, unpack: unpack, decode: decode, pick: pick, rank: rank, snippet: snippet };
  if (typeof window === "undefined") { module.exports = pure; return; }

  // ---------------------------------------------------------------- part 2: the browser
  var TIMEOUT = 10000;
  var waiting = {};
  var loaded = {};
  var stats = { files: [], marks: [], timing: {} };
  window.archiverSearchStats = stats;
  function mark(label) { stats.marks.push([label, Math.round(performance.now() * 10) / 10]); }
  function timing(name, step, t0) { (stats.timing[name] = stats.timing[name] || {})[step] = Math.round((performance.now() - t0) * 10) / 10; }
  mark("script");

  // Inside the gwtar loader (formats/search.md §8.2) the page's files are the archive's members:
  // each index file is read through the loader (a blob URL of its verified bytes, never a file://
  // URL), the query lives in the loader's route and a result opens inside the loader.
  var host = window.gwtar && typeof window.gwtar.url === "function" && typeof window.gwtar.route === "function" ? window.gwtar : null;
  var folder = host ? (host.page || host.route().path || "_archiver/search/index.html").replace(/[^/]*$/, "") : "";

  // The page loads the manifest itself, beside search.js (<script id="search-manifest" defer>, §7), so
  // it is there without a round trip after this script starts; it is taken only from that element and
  // only once. When the element is absent, fails or registers nothing, the manifest is loaded as any
  // other file (which says why it cannot be).
  var preload = document.getElementById("search-manifest"), early = {};
  var preloaded = !preload ? null : new Promise(function (resolve) {
    preload.addEventListener("load", resolve);
    preload.addEventListener("error", resolve);
    setTimeout(resolve, TIMEOUT);
  });

  window.archiverSearch = function (name, value) {
    var w = waiting[name];
    if (w) { delete waiting[name]; w.resolve(value); } else if (name === "manifest" && preloaded && !("manifest" in early)) { early.manifest = value; }
  };

  function Damaged(name, why) { this.name = name; this.why = why; }

  function check(name, value, sha) {
    if (sha && (sha.length < 32 || sha256(new TextEncoder().encode(JSON.stringify(value))).slice(0, sha.length) !== sha)) {
      throw new Damaged(name, "its SHA-256 does not match the manifest's");
    }
    return value;
  }

  // A file's registered value by a <script> element (a tree, a server, a ZIM: the only way from file://).
  function viaScript(name) {
    return new Promise(function (resolve, reject) {
      var script = document.createElement("script");
      var timer = setTimeout(function () { delete waiting[name]; reject(new Damaged(name, "never registered")); }, TIMEOUT);
      waiting[name] = { resolve: function (v) { clearTimeout(timer); resolve(v); } };
      script.onerror = function () { clearTimeout(timer); delete waiting[name]; reject(new Damaged(name, "cannot be loaded")); };
      script.onload = function () {
        if (waiting[name]) { clearTimeout(timer); delete waiting[name]; reject(new Damaged(name, "did not register itself")); }
        script.remove();
      };
      script.charset = "utf-8";
      if (!host) { script.src = name + ".js"; document.head.appendChild(script); return; }
      host.url(folder + name + ".js", "text/javascript").then(function (url) {
        if (!url) { throw new Damaged(name, "is not in the archive"); }
        script.src = url;
        document.head.appendChild(script);
      }).catch(function (e) {
        clearTimeout(timer);
        delete waiting[name];
        reject(e instanceof Damaged ? e : new Damaged(name, "cannot be read from the archive (" + (e && e.message || e) + ")"));
      });
    });
  }

  // Inside a loader that gives a member's verified bytes (gwtar.bytes): the payload read out of the
  // file's fixed wrapper (§4.1), as Python reads it; no blob URL, no element, nothing executed.
  function viaBytes(name) {
    var timer, late = new Promise(function (_, reject) { timer = setTimeout(function () { reject(new Damaged(name, "could not be read within " + TIMEOUT / 1000 + " s")); }, TIMEOUT); });
    var read = host.bytes(folder + name + ".js").then(function (bytes) {
      if (!bytes) { throw new Damaged(name, "is not in the archive"); }
      var text = new TextDecoder().decode(bytes), head = "archiverSearch(" + JSON.stringify(name) + ",";
      if (text.slice(0, head.length) !== head || text.slice(-3) !== ");\n") { throw new Damaged(name, "is not an index file of this name (its wrapper is wrong)"); }
      try { return JSON.parse(text.slice(head.length, -3)); } catch (e) { throw new Damaged(name, "is not JSON (" + e.message + ")"); }
    }, function (e) { throw new Damaged(name, "cannot be read from the archive (" + (e && e.message || e) + ")"); });
    return Promise.race([read, late]).then(function (v) { clearTimeout(timer); return v; }, function (e) { clearTimeout(timer); throw e; });
  }

  function fetchFile(name) { return host && typeof host.bytes === "function" ? viaBytes(name) : viaScript(name); }

  // A file's value, checked against the manifest's SHA-256 and (format 3) decompressed; each file once.
  function load(name, sha) {
    if (loaded[name]) { return loaded[name]; }
    var t0 = performance.now();
    stats.files.push(name);
    var got = name !== "manifest" || !preloaded ? fetchFile(name) : preloaded.then(function () {
      if ("manifest" in early) { return early.manifest; }
      preloaded = null;
      return fetchFile(name);
    });
    loaded[name] = got.then(function (value) { timing(name, "registered", t0); return check(name, value, sha); }).then(function (value) {
      timing(name, "checked", t0);
      if (name === "manifest" || !index || index.version < 3) { return value; }
      try { value = inflateSync(value); } catch (e) { throw new Damaged(name, "cannot be decompressed (" + (e && e.message || e) + ")"); }
      timing(name, "inflated", t0);
      return value;
    });
    return loaded[name];
  }

  var index = null;

  function openIndex() {
    return load("manifest", null).then(function (m) {
      if (!m || m.format !== "archiver-search") { throw new Damaged("manifest", "is not a search index manifest"); }
      if (m.version > VERSION || m.tokenizer !== TOKENIZER) { throw new Damaged("manifest", "was written by another archiver: build it again with archiver index"); }
      var why = boundsProblem(m);
      if (why) { throw new Damaged("manifest", why); }
      index = { version: m.version, documents: m.documents, avgdl: m.avgdl || 1, shards: m.shards, groups: m.docs, maps: {} };
      // Before format 3 the manifest lists the text files; format 3 lists them in each fragment group.
      try { index.lengths = m.version < 3 ? null : unpack(m.lengths); } catch (e) { index.lengths = []; }
      if (index.lengths && index.lengths.length !== 2 * m.documents) { throw new Damaged("manifest", "its document lengths are malformed"); }
      index.texts = m.version < 3 ? (m.text || []).map(function (x, i) { return [i].concat(x); }) : null;
      return index;
    });
  }

  function shardMap(i) {
    if (index.maps[i]) { return Promise.resolve(index.maps[i]); }
    return load("t/" + i, index.shards[i][3]).then(function (rows) {
      var map = new Map();
      rows.forEach(function (r) { map.set(r[0], r[1]); });
      index.maps[i] = map;
      return map;
    });
  }

  // The fragment group holding doc: {first, docs, text} (text: the text files it lists, format 3).
  function group(doc) {
    for (var i = 0; i < index.groups.length; i++) {
      var g = index.groups[i];
      if (g[0] <= doc && doc <= g[1]) {
        var name = "d/" + i;
        return load(name, g[3]).then(function (value) {
          var docs = index.version < 3 ? value : value && value.docs;
          var text = index.version < 3 ? index.texts : value && value.text;
          if (!Array.isArray(docs) || docs.length !== g[1] - g[0] + 1 || !Array.isArray(text)) { throw new Damaged(name, "holds the wrong number of documents"); }
          return { first: g[0], docs: docs, text: text };
        });
      }
    }
    return Promise.reject(new Damaged("manifest", "no fragment group holds document " + doc));
  }

  function fragment(doc) { return group(doc).then(function (g) { return g.docs[doc - g.first]; }); }

  function before(a, b, c, d) { return a < c || (a === c && b <= d); }

  // Text chunk k of document doc ("" when it has none).
  function chunk(doc, k) {
    return group(doc).then(function (g) {
      for (var i = 0; i < g.text.length; i++) {
        var x = g.text[i];  // [file number, first doc, first chunk, last doc, last chunk, size, SHA-256]
        if (before(x[1], x[2], doc, k) && before(doc, k, x[3], x[4])) {
          var name = "x/" + x[0];
          return load(name, x[6]).then(function (rows) {
            for (var r = 0; r < rows.length; r++) { if (rows[r][0] === doc && rows[r][1] === k) { return rows[r][2]; } }
            throw new Damaged(name, "does not hold chunk " + k + " of document " + doc);
          });
        }
      }
      return "";
    });
  }

  function run(query, offset, limit) {
    var clauses = parse(query);
    if (!clauses.length) { return Promise.resolve({ total: 0, results: [] }); }
    var perClause = clauses.map(function (c) {
      return Promise.all(c.terms.map(function (term, k) {
        var prefix = c.prefix && k === c.terms.length - 1;
        return Promise.all(shardsFor(index.shards, term, prefix).map(shardMap)).then(function (maps) {
          try { return pick(maps, term, prefix, index.lengths); } catch (e) { throw new Damaged("t/" + shardsFor(index.shards, term, prefix)[0], "its postings are malformed (" + e.message + ")"); }
        });
      }));
    });
    return Promise.all(perClause).then(function (looked) {
      mark("shards");
      var ranked = rank([index], clauses, [looked]);
      mark("ranked");
      var page = ranked.slice(offset, offset + limit);
      var wanted = new Set(), prefix = "";
      clauses.forEach(function (c) { (c.prefix ? c.terms.slice(0, -1) : c.terms).forEach(function (t) { wanted.add(t); }); });
      if (clauses[clauses.length - 1].prefix) { var last = clauses[clauses.length - 1].terms; prefix = last[last.length - 1]; }
      return Promise.all(page.map(function (r) {
        return fragment(r[3]).then(function (f) {
          var k = 0;
          f[3].forEach(function (s, i) { if (s <= r[4]) { k = i; } });
          return chunk(r[3], k).then(function (text) {
            var s = snippet(text, wanted, prefix);
            s.before = s.before || k > 0;
            s.after = s.after || k < f[3].length - 1;
            return { path: f[0], title: f[1], snippet: s };
          });
        });
      })).then(function (results) { return { total: ranked.length, results: results }; });
    });
  }

  function href(path) {
    if (host) { return host.href(path); }
    return "../../" + path.split("/").map(encodeURIComponent).join("/");
  }

  // The query of the address: ?q= in a tree or on a server, the route's ?q= inside the loader.
  function addressQuery() {
    var q = host ? host.route().query : location.search.replace(/^\?/, "");
    return new URLSearchParams(q || "").get("q") || "";
  }

  // Put the query in the address (bookmarkable) without loading anything.
  function remember(q, push) {
    var query = "q=" + encodeURIComponent(q);
    if (host) { try { host.setQuery(query, push); } catch (e) { /* rate-limited: the results still show */ } return true; }
    try { history[push ? "pushState" : "replaceState"](null, "", "?" + query); return true; } catch (e) { return false; }
  }

  function render(list, results) {
    results.forEach(function (r) {
      var li = document.createElement("li"), a = document.createElement("a"), p = document.createElement("p");
      a.href = href(r.path);
      a.textContent = r.title || r.path;
      var s = r.snippet, at = 0;
      if (s.before) { p.appendChild(document.createTextNode("… ")); }
      s.marks.forEach(function (m) {
        p.appendChild(document.createTextNode(s.text.slice(at, m[0])));
        var mark = document.createElement("mark");
        mark.textContent = s.text.slice(m[0], m[1]);
        p.appendChild(mark);
        at = m[1];
      });
      p.appendChild(document.createTextNode(s.text.slice(at) + (s.after ? " …" : "")));
      var small = document.createElement("small");
      small.textContent = r.path;
      li.appendChild(a); li.appendChild(small); li.appendChild(p);
      list.appendChild(li);
    });
  }

  function start() {
    mark("start");
    var form = document.getElementById("search-form"), input = document.getElementById("q");
    var status = document.getElementById("status"), list = document.getElementById("results"), more = document.getElementById("more");
    var query = addressQuery();
    var shown = 0, PAGE = 10, generation = 0;
    input.value = query;

    function fail(e) {
      status.textContent = e instanceof Damaged ? "The index is damaged: " + e.name + ".js " + e.why + "." : "The search failed: " + e;
      status.className = "damaged";
      document.body.setAttribute("data-state", "damaged");
    }

    function go(q, append) {
      var mine = ++generation;
      if (!append) { list.textContent = ""; shown = 0; }
      if (!q.trim()) { status.textContent = ""; more.hidden = true; document.body.setAttribute("data-state", "idle"); return; }
      status.textContent = "Searching…";
      document.body.setAttribute("data-state", "busy");
      (index ? Promise.resolve(index) : openIndex()).then(function () { mark("manifest"); return run(q, shown, PAGE); }).then(function (r) {
        if (mine !== generation) { return; }
        mark("snippets");
        render(list, r.results);
        shown += r.results.length;
        status.textContent = r.total ? r.total + (r.total === 1 ? " page" : " pages") + " found" : "Nothing found for " + q;
        more.hidden = shown >= r.total;
        document.body.setAttribute("data-state", "done");
        mark("done");
      }).catch(function (e) { if (mine === generation) { fail(e); } });
    }

    // The address follows the query. The first pause in typing after a settled query (the one the
    // page opened with, one submitted, one gone back to) pushes an entry and later pauses replace it,
    // so Back returns to the settled query however long the typing took; Enter pushes only a query
    // that no entry holds yet (not when typing has pushed it already, not the same query again).
    var typing = null, typed = false;
    input.addEventListener("input", function () {
      clearTimeout(typing);
      typing = setTimeout(function () {
        remember(input.value, !typed); /* a file: URL some browsers refuse to rewrite: the results still show */
        typed = true;
        go(input.value, false);
      }, 150);
    });
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      clearTimeout(typing);
      var push = !typed && input.value !== addressQuery();
      typed = false;
      if (!remember(input.value, push)) { location.search = "?q=" + encodeURIComponent(input.value); return; }
      go(input.value, false);
      var first = list.querySelector("a");
      if (first) { first.focus(); }
    });
    more.addEventListener("click", function () { go(input.value, true); });
    // Back and Forward in a tree or on a server change only the address (the entries were pushed
    // here): show that entry's query. Inside the loader the route's change renders the page again.
    if (!host) {
      window.addEventListener("popstate", function () {
        clearTimeout(typing);
        typed = false;
        input.value = addressQuery();
        go(input.value, false);
      });
    }
    document.addEventListener("keydown", function (e) {
      if (e.key !== "ArrowDown" && e.key !== "ArrowUp") { return; }
      var links = Array.from(list.querySelectorAll("a")), i = links.indexOf(document.activeElement);
      if (e.key === "ArrowDown") { (links[i + 1] || links[0] || input).focus(); } else if (i <= 0) { input.focus(); } else { links[i - 1].focus(); }
      e.preventDefault();
    });
    go(query, false);
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
})();
