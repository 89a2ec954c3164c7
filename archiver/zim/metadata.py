"""ZIM metadata as typed values, checked against the openZIM rules before a byte is written.

Pure: no network, no filesystem, no clock. The date and the illustration's bytes are passed in.

The rules (openZIM wiki "Metadata", zimcheck 3.6, zimscraperlib; formats/zim.md §5):

- mandatory: ``Name Title Language Creator Publisher Date Description Illustration_48x48@1``;
- ``Title`` ≤ 30 graphemes, ``Description`` ≤ 80, ``LongDescription`` ≤ 4000 and not equal to the
  description: lengths are counted in **graphemes** (user-perceived characters, ``regex`` ``\\X``),
  not code points, so ``é`` written as ``e`` + U+0301 counts once;
- ``Language``: ISO 639-3 codes, comma-separated, most important first (``eng,fra``);
  :func:`iso639_3` maps BCP 47 tags (``en-US``, ``pt_BR``, ``fre``) to them;
- ``Date``: ``YYYY-MM-DD``, a real date;
- ``Illustration_48x48@1``: a 48×48 PNG;
- no control characters except tab, LF and CR (and those only in ``LongDescription``);
- keys of our own start with ``X-``; ``Counter`` is libzim's and never set.
"""

from __future__ import annotations

import datetime as _dt
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field

import regex

from archiver.errors import UsageError

__all__ = [
    "ILLUSTRATION_KEY",
    "LIMITS",
    "MANDATORY",
    "OPTIONAL",
    "MetadataProblem",
    "ZimMetadata",
    "canonical_key",
    "check",
    "check_illustration",
    "default_name",
    "graphemes",
    "index_language",
    "iso639_3",
    "merge_tags",
    "png_size",
    "truncate",
]

ILLUSTRATION_KEY = "Illustration_48x48@1"
MANDATORY = ("Name", "Title", "Language", "Creator", "Publisher", "Date", "Description", ILLUSTRATION_KEY)
#: Maximum lengths in graphemes.
LIMITS = {"Title": 30, "Description": 80, "LongDescription": 4000}
#: Optional keys of the openZIM list (anything else must start with ``X-``).
OPTIONAL = ("LongDescription", "Tags", "Flavour", "Scraper", "Source", "License", "Relation")
_TEXT_KEYS = (*MANDATORY[:-1], *OPTIONAL)
_MULTILINE = frozenset({"LongDescription"})
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_NEWLINE = re.compile(r"[\r\n]")
_LANGUAGE = re.compile(r"^[a-z]{3}(,[a-z]{3})*$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_GRAPHEME = regex.compile(r"\X")
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# Spellings a caller (or a command-line option) may use for each key.
_ALIASES = {k.lower(): k for k in (*_TEXT_KEYS, "Illustration")} | {
    "flavor": "Flavour",
    "longdescription": "LongDescription",
    "lang": "Language",
}


@dataclass(frozen=True)
class MetadataProblem:
    """One broken rule: the metadata key and what is wrong with its value."""

    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"


def graphemes(text: str) -> int:
    """The number of user-perceived characters (extended grapheme clusters) in ``text``."""
    return sum(1 for _ in _GRAPHEME.finditer(text))


def truncate(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` graphemes, ending in ``…`` when it was cut."""
    clusters = _GRAPHEME.findall(text)
    if len(clusters) <= limit:
        return text
    return "".join(clusters[: limit - 1]).rstrip() + "…"


def canonical_key(key: str) -> str:
    """The openZIM spelling of a metadata key given as ``title``, ``long-description``,
    ``long_description``, ``LongDescription`` …; ``X-`` keys are kept as written. Raises
    :class:`UsageError` for a key that is neither an openZIM key nor ``X-`` prefixed."""
    if key[:2].lower() == "x-" and len(key) > 2:
        return "X-" + key[2:]
    folded = key.replace("-", "").replace("_", "").lower()
    if folded in _ALIASES:
        return _ALIASES[folded]
    if folded == "date":
        return "Date"
    if folded == "counter" or folded.startswith("illustration"):
        raise UsageError(f"metadata {key!r} is written by the packer and cannot be set")
    known = ", ".join((*_TEXT_KEYS, "Illustration"))
    raise UsageError(f"unknown metadata key {key!r}: use one of {known}, or a custom key starting with X-")


def _check_value(key: str, value: str) -> list[str]:
    problems = []
    if _CONTROL.search(value):
        problems.append("contains a control character")
    if key not in _MULTILINE and _NEWLINE.search(value):
        problems.append("contains a line break (only LongDescription may)")
    if key in MANDATORY and not value.strip():
        problems.append("is empty")
    if key in LIMITS and (n := graphemes(value)) > LIMITS[key]:
        problems.append(f"has {n} characters, at most {LIMITS[key]} allowed")
    if key == "Language" and value and not _LANGUAGE.match(value):
        problems.append(f"{value!r} is not ISO 639-3 codes separated by commas (like 'eng' or 'eng,fra')")
    if key == "Date" and value:
        if not _DATE.match(value):
            problems.append(f"{value!r} is not YYYY-MM-DD")
        else:
            try:
                _dt.date.fromisoformat(value)
            except ValueError:
                problems.append(f"{value!r} is not a real date")
    if key == "Tags" and value and any(not t.strip() for t in value.split(";")):
        problems.append("has an empty tag (tags are separated by ';')")
    if key == "Name" and value and regex.search(r"\s", value):
        problems.append(f"{value!r} contains white space")
    return problems


def check(values: Mapping[str, str], *, illustration: bytes | None = None) -> list[MetadataProblem]:
    """Every broken rule in a set of text metadata (and the 48×48 illustration, when given or when
    ``values`` lacks it) — all of them, not the first. Used before writing and by ``verify``."""
    problems = [
        MetadataProblem(k, "is missing (mandatory)") for k in MANDATORY[:-1] if not values.get(k, "").strip()
    ]
    for key, value in values.items():
        problems += [MetadataProblem(key, m) for m in _check_value(key, value) if m != "is empty"]
        if key == "LongDescription" and value and value == values.get("Description"):
            problems.append(MetadataProblem(key, "repeats Description"))
    if illustration is None:
        problems.append(MetadataProblem(ILLUSTRATION_KEY, "is missing (mandatory)"))
    else:
        problems += [MetadataProblem(ILLUSTRATION_KEY, m) for m in check_illustration(illustration)]
    return problems


def png_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG's IHDR chunk, or None when ``data`` is not a PNG."""
    if len(data) < 24 or not data.startswith(_PNG_SIGNATURE) or data[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def check_illustration(data: bytes) -> list[str]:
    """What is wrong with bytes meant as ``Illustration_48x48@1`` (empty when nothing)."""
    size = png_size(data)
    if size is None:
        return ["is not a PNG image"]
    if size != (48, 48):
        return [f"is {size[0]}×{size[1]} pixels, not 48×48"]
    return []


# ISO 639-1 → ISO 639-3 (for the 639-1 languages the 639-3 code is the 639-2/T one), plus the
# withdrawn two-letter codes browsers still see (iw, in, ji, mo, sh).
_ISO639_1 = dict(
    pair.split(":")
    for pair in """
aa:aar ab:abk ae:ave af:afr ak:aka am:amh an:arg ar:ara as:asm av:ava ay:aym az:aze ba:bak be:bel
bg:bul bi:bis bm:bam bn:ben bo:bod br:bre bs:bos ca:cat ce:che ch:cha co:cos cr:cre cs:ces cu:chu
cv:chv cy:cym da:dan de:deu dv:div dz:dzo ee:ewe el:ell en:eng eo:epo es:spa et:est eu:eus fa:fas
ff:ful fi:fin fj:fij fo:fao fr:fra fy:fry ga:gle gd:gla gl:glg gn:grn gu:guj gv:glv ha:hau he:heb
hi:hin ho:hmo hr:hrv ht:hat hu:hun hy:hye hz:her ia:ina id:ind ie:ile ig:ibo ii:iii ik:ipk io:ido
is:isl it:ita iu:iku ja:jpn jv:jav ka:kat kg:kon ki:kik kj:kua kk:kaz kl:kal km:khm kn:kan ko:kor
kr:kau ks:kas ku:kur kv:kom kw:cor ky:kir la:lat lb:ltz lg:lug li:lim ln:lin lo:lao lt:lit lu:lub
lv:lav mg:mlg mh:mah mi:mri mk:mkd ml:mal mn:mon mr:mar ms:msa mt:mlt my:mya na:nau nb:nob nd:nde
ne:nep ng:ndo nl:nld nn:nno no:nor nr:nbl nv:nav ny:nya oc:oci oj:oji om:orm or:ori os:oss pa:pan
pi:pli pl:pol ps:pus pt:por qu:que rm:roh rn:run ro:ron ru:rus rw:kin sa:san sc:srd sd:snd se:sme
sg:sag si:sin sk:slk sl:slv sm:smo sn:sna so:som sq:sqi sr:srp ss:ssw st:sot su:sun sv:swe sw:swa
ta:tam te:tel tg:tgk th:tha ti:tir tk:tuk tl:tgl tn:tsn to:ton tr:tur ts:tso tt:tat tw:twi ty:tah
ug:uig uk:ukr ur:urd uz:uzb ve:ven vi:vie vo:vol wa:wln wo:wol xh:xho yi:yid yo:yor za:zha zh:zho
zu:zul iw:heb in:ind ji:yid mo:ron sh:hbs
""".split()
)
# ISO 639-2/B (bibliographic) codes → the /T ones that ISO 639-3 uses.
_ISO639_2B = dict(
    pair.split(":")
    for pair in """
alb:sqi arm:hye baq:eus bur:mya chi:zho cze:ces dut:nld fre:fra geo:kat ger:deu gre:ell ice:isl
mac:mkd mao:mri may:msa per:fas rum:ron slo:slk tib:bod wel:cym
""".split()
)


def iso639_3(tag: str) -> str | None:
    """The ISO 639-3 code of a language tag (``<html lang>``, BCP 47 or a bare code): ``en``,
    ``en-US``, ``EN_gb`` → ``eng``; ``fre`` → ``fra``; ``yue-HK`` → ``yue``. None when the tag names
    no language (``x-klingon``, ``i-default``, empty, malformed)."""
    primary = tag.strip().replace("_", "-").split("-", 1)[0].lower()
    if len(primary) == 2 and primary.isascii() and primary.isalpha():
        return _ISO639_1.get(primary)
    if len(primary) == 3 and primary.isascii() and primary.isalpha():
        return _ISO639_2B.get(primary, primary)
    return None


def index_language(language: str) -> str:
    """The language handed to libzim's full-text indexer for a ``Language`` value: its first code,
    except ``und`` (undetermined), with which libzim 9.8 indexes nothing searchable; ``mul`` works."""
    first = language.split(",", 1)[0]
    return "mul" if first == "und" else first


def default_name(host: str, language: str, selection: str = "all") -> str:
    """A Name following the openZIM convention ``{project}_{lang}_{selection}``: the host without
    ``www.``, the two-letter code when the language has one (else the three-letter), ``all``."""
    project = host.lower().removeprefix("www.").split(":", 1)[0].strip("[]")
    project = re.sub(r"[^a-z0-9.-]+", "-", project).strip("-.") or "site"
    first = language.split(",", 1)[0]
    short = next((two for two, three in _ISO639_1.items() if three == first and len(two) == 2), None)
    if "," in language:
        short = "mul"
    return f"{project}_{short or first}_{selection}"


def merge_tags(user: str | None, computed: Mapping[str, str]) -> str:
    """``Tags``: the user's tags in their order, then the computed ``_key:value`` tags the user did
    not set (``_ftindex``, ``_pictures``, ``_videos``, ``_details``)."""
    tags = [t.strip() for t in (user or "").split(";") if t.strip()]
    given = {t.split(":", 1)[0] for t in tags if t.startswith("_")}
    tags += [f"{k}:{v}" for k, v in computed.items() if k not in given]
    return ";".join(tags)


@dataclass(frozen=True)
class ZimMetadata:
    """The metadata of one ZIM, validated on construction: building one that breaks an openZIM rule
    raises :class:`UsageError` naming every problem. ``extra`` holds ``X-`` keys."""

    name: str
    title: str
    description: str
    language: str
    creator: str
    publisher: str
    date: _dt.date
    illustration: bytes
    long_description: str | None = None
    tags: str | None = None
    flavour: str | None = None
    scraper: str | None = None
    source: str | None = None
    license: str | None = None
    relation: str | None = None
    extra: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        bad = [
            f"{k!r} is not a custom key (they start with X-)" for k in self.extra if not k.startswith("X-")
        ]
        if bad:
            raise UsageError("metadata: " + "; ".join(bad))
        problems = check(self.text(), illustration=self.illustration)
        if problems:
            raise UsageError("metadata: " + "; ".join(str(p) for p in problems))

    def text(self) -> dict[str, str]:
        """Every text metadata in openZIM spelling, in a stable order (illustration excluded)."""
        values = {
            "Name": self.name,
            "Title": self.title,
            "Description": self.description,
            "LongDescription": self.long_description,
            "Language": self.language,
            "Creator": self.creator,
            "Publisher": self.publisher,
            "Date": self.date.isoformat(),
            "Tags": self.tags,
            "Flavour": self.flavour,
            "Scraper": self.scraper,
            "Source": self.source,
            "License": self.license,
            "Relation": self.relation,
        }
        out = {k: v for k, v in values.items() if v is not None}
        out.update(self.extra)
        return out

    @classmethod
    def from_mapping(cls, values: Mapping[str, str], *, date: _dt.date, illustration: bytes) -> ZimMetadata:
        """Build from openZIM-spelled keys (see :func:`canonical_key`); ``Date`` in ``values`` wins
        over ``date``. Missing mandatory keys are reported by validation."""
        attrs = {
            "Name": "name", "Title": "title", "Description": "description", "Language": "language",
            "Creator": "creator", "Publisher": "publisher", "LongDescription": "long_description",
            "Tags": "tags", "Flavour": "flavour", "Scraper": "scraper", "Source": "source",
            "License": "license", "Relation": "relation",
        }  # fmt: skip
        problems = check({"Date": date.isoformat(), **values}, illustration=illustration)
        if problems:
            raise UsageError("metadata: " + "; ".join(str(p) for p in problems))
        kwargs: dict[str, object] = {}
        extra = {}
        for key, value in values.items():
            if key == "Date":
                date = _dt.date.fromisoformat(value)
            elif key in attrs:
                kwargs[attrs[key]] = value
            else:
                extra[key] = value
        return cls(date=date, illustration=illustration, extra=extra, **kwargs)  # type: ignore[arg-type]
