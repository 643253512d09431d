"""robots.txt per RFC 9309 (the Robots Exclusion Protocol), tolerant where crawler-commons is.

RFC 9309 decides: groups start at a run of ``user-agent`` lines and hold the ``allow`` /
``disallow`` rules after it (section 2.1); other records such as ``crawl-delay`` or ``sitemap``
never end a group (2.2.4); every group naming the crawler's product token, compared without
case, is merged into one, and the ``*`` groups apply only when none names it (2.2.1); the
longest matching rule wins and ``allow`` wins a tie (2.2.2); ``*`` matches any sequence and a
final ``$`` anchors the end (2.2.3), rule lengths count every octet of the
pattern, ``*`` included; ``/robots.txt`` is always allowed (2.2.2); at least
500 KiB are parsed (2.5). Like crawler-commons' SimpleRobotRulesParser it also reads byte
order marks, common typos of the keys (``useragent``, ``dissalow``...), lines that lack the
colon, HTML markup around the records and bare sitemap URLs.

Lines that cannot be read become :class:`~focuscrawl.parse.Rejection` s, never an exception.
"""

from __future__ import annotations

import codecs
import re
import urllib.parse
from dataclasses import dataclass, field

from focuscrawl.parse.rejection import Rejection, decode_recovering

PARSER = "robots"

# RFC 9309 2.5: crawlers MUST parse at least the first 500 KiB.
MAX_ROBOTS_BYTES = 500 * 1024

# Keys as written in the wild, mapped to the directive they mean (crawler-commons tolerates these).
_KEYS = {
    "user-agent": "user-agent", "useragent": "user-agent", "user agent": "user-agent", "user_agent": "user-agent",
    "user-agents": "user-agent", "useg-agent": "user-agent", "user-agnet": "user-agent",
    "disallow": "disallow", "dissallow": "disallow", "dissalow": "disallow", "disalow": "disallow",
    "desallow": "disallow", "disallaw": "disallow", "diasllow": "disallow", "disallow-crawl": "disallow",
    "allow": "allow",
    "crawl-delay": "crawl-delay", "crawldelay": "crawl-delay", "crawl delay": "crawl-delay", "crawl_delay": "crawl-delay",
    "sitemap": "sitemap", "site-map": "sitemap", "sitemaps": "sitemap",
}
# Extensions seen in real files: read without complaint, not acted on.
_KNOWN_OTHER = {
    "host", "request-rate", "visit-time", "robot-version", "comment", "clean-param", "noindex", "no-index",
    "content-signal", "content-signals", "llm-policy", "acap-crawler", "acap-disallow-crawl", "acap-allow-crawl",
}
_INDEX_PAGE = re.compile(r"/index\.html?$")
_HTML_TAG = re.compile(r"<[^>]*>")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")


def normalize_path(path: str) -> str:
    """Percent-encode what RFC 9309 2.2.2 says to compare encoded, and decode unreserved escapes.

    ``/%7Emak`` and ``/~mak`` then compare equal, non-ASCII becomes UTF-8 escapes, and a broken
    escape such as ``%3M`` stays literal.
    """

    def unescape(m: re.Match) -> str:
        char = chr(int(m.group(1), 16))
        return char if char in _UNRESERVED else "%" + m.group(1).upper()

    path = _PERCENT.sub(unescape, path)
    return urllib.parse.quote(path, safe="/?&=;:@!$'()*+,%#[]~-._")


# RFC 9309 2.2.3: "*" and a final "$" are the only operators; the same characters written
# percent-encoded in a rule ("%2A", "%24") mean themselves, and so do "*" and "$" in a URL.
# Both sides are therefore compared with literal "*"/"$" encoded.
def rule_pattern(value: str) -> str:
    """A rule's path pattern, normalised as the URLs it is matched against (see :func:`url_target`)."""
    anchored = value.endswith("$")
    body = value[:-1] if anchored else value
    literal = [normalize_path(part).replace("$", "%24") for part in body.split("*")]
    return "*".join(literal) + ("$" if anchored else "")


def url_target(path_and_query: str) -> str:
    """A URL's path (and query) as rules are matched against it: normalised, literal ``*``/``$`` encoded."""
    return normalize_path(path_and_query).replace("*", "%2A").replace("$", "%24")


def _matches(pattern: str, path: str) -> bool:
    """RFC 9309 2.2.3 matching without regular expressions (no backtracking blow-up on many ``*``)."""
    anchored = pattern.endswith("$")
    if anchored:
        pattern = pattern[:-1]
    parts = pattern.split("*")
    first, middle, last = parts[0], parts[1:-1], parts[-1]
    if not path.startswith(first):
        return False
    if len(parts) == 1:
        return not anchored or len(path) == len(first)
    pos = len(first)
    for part in middle:
        found = path.find(part, pos)
        if found < 0:
            return False
        pos = found + len(part)
    if anchored:
        return path.endswith(last) and len(path) - len(last) >= pos
    return path.find(last, pos) >= 0


@dataclass(frozen=True)
class Rule:
    allow: bool
    pattern: str  # normalised; "" never matches (an empty ``disallow:`` allows everything)

    def matches(self, path: str) -> bool:
        return bool(self.pattern) and _matches(self.pattern, path)


@dataclass
class Group:
    agents: list[str] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    crawl_delay: float | None = None


@dataclass(frozen=True)
class AgentRules:
    """The merged rules one crawler obeys on one host."""

    rules: tuple[Rule, ...] = ()
    crawl_delay: float | None = None
    disallow_all: bool = False  # a robots.txt that could not be fetched (5xx, unreachable)

    def allowed(self, url: str) -> bool:
        """Whether ``url`` (absolute, or a path with optional query) may be fetched."""
        try:
            parts = urllib.parse.urlsplit(url)
            path, query = parts.path or "/", parts.query
        except ValueError:  # "//[x": not a URL urlsplit reads (found by fuzzing); judged as a path
            path, _, query = url.partition("?")
        if path == "/robots.txt":
            return True
        if self.disallow_all:
            return False
        target = url_target(path + ("?" + query if query else ""))
        best: Rule | None = None
        for rule in self.rules:
            if rule.matches(target) and (
                best is None
                or len(rule.pattern) > len(best.pattern)
                or (len(rule.pattern) == len(best.pattern) and rule.allow)
            ):
                best = rule
        return best is None or best.allow


ALLOW_ALL = AgentRules()
DISALLOW_ALL = AgentRules(disallow_all=True)


# RFC 9309 2.2.1: product-token = 1*(ALPHA / "-" / "_"). Digits are tolerated too, as crawler-commons
# does: names such as "bot1" are common in real files and would otherwise all collapse to "bot".
_TOKEN = re.compile(r"[A-Za-z0-9_-]+")


def product_token(user_agent: str) -> str:
    """``"focuscrawl/0.1 (+https://...)"`` -> ``"focuscrawl"``: the leading product token (RFC 9309
    2.2.1), the only part of a user agent that robots.txt groups address."""
    found = _TOKEN.match(user_agent.strip(" \t"))
    return found.group(0) if found else ""


def _names(value: str) -> list[str]:
    """Product tokens of one ``user-agent`` value, lower-case: the leading token of the value
    (``Bot/1.0`` and ``Bot extra words`` name ``bot``), and of each item of a comma list
    (``One, Two``: crawler-commons' tolerance). ``*`` names every crawler."""
    value = value.strip(" \t")
    if value == "*":
        return ["*"]
    return [t.lower() for t in (product_token(item) for item in value.split(",")) if t]


@dataclass
class RobotsTxt:
    groups: list[Group] = field(default_factory=list)
    sitemaps: list[str] = field(default_factory=list)

    def for_agent(self, user_agent: str) -> AgentRules:
        """Merge every group naming the product token of ``user_agent``, else the ``*`` groups."""
        token = product_token(user_agent).lower()
        matched = [g for g in self.groups if token and any(token == n for a in g.agents for n in _names(a))]
        if not matched:
            matched = [g for g in self.groups if any(a.strip() == "*" for a in g.agents)]
        delays = [g.crawl_delay for g in matched if g.crawl_delay is not None]
        return AgentRules(tuple(r for g in matched for r in g.rules), delays[0] if delays else None)


@dataclass
class ParsedRobots:
    robots: RobotsTxt
    rejections: list[Rejection] = field(default_factory=list)


def _decode(body: bytes) -> tuple[str, str | None]:
    """The text after any byte order mark, and the decoding problem when bytes had to be replaced."""
    for bom, codec in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")):
        if body.startswith(bom):
            return decode_recovering(body[len(bom):], codec)
    return decode_recovering(body)


def _split(line: str) -> tuple[str, str] | None:
    """``key: value`` (also ``key : value`` and ``key value`` for known keys) or None."""
    key, sep, value = line.partition(":")
    if sep and key.strip().lower() in _KEYS.keys() | _KNOWN_OTHER:
        return key.strip().lower(), value.strip(" \t")
    words = line.split(None, 2)
    for n in (2, 1):  # "user agent bot", then "useragent bot"
        if len(words) > n and " ".join(words[:n]).lower() in _KEYS:
            return " ".join(words[:n]).lower(), line.split(None, n)[n].strip(" \t")
    if sep:
        return key.strip().lower(), value.strip(" \t")
    return None


def parse_robots(body: bytes | str, url: str) -> ParsedRobots:
    """Parse a robots.txt body fetched from ``url``; never raises."""
    out = ParsedRobots(RobotsTxt())

    def reject(reason: str, payload: bytes | str) -> None:
        out.rejections.append(Rejection(reason, payload, url, PARSER))

    raw = body.encode("utf-8") if isinstance(body, str) else body
    if len(raw) > MAX_ROBOTS_BYTES:
        reject(f"robots.txt is {len(raw)} bytes; only the first {MAX_ROBOTS_BYTES} are read (RFC 9309 2.5)", raw[MAX_ROBOTS_BYTES:])
        head = raw[:MAX_ROBOTS_BYTES]
        if raw[MAX_ROBOTS_BYTES:MAX_ROBOTS_BYTES + 1] not in (b"\r", b"\n"):
            # The limit fell inside a line: read as complete, "Disallow: /private-area" cut to
            # "Disallow: /" would close the whole site. The partial line is dropped.
            end = max(head.rfind(b"\n"), head.rfind(b"\r")) + 1
            reject("the last line is cut by the 500 KiB limit and is not read", head[end:])
            head = head[:end]
        raw = head
    text, problem = _decode(raw)
    if problem:
        reject(f"robots.txt {problem}", raw)
    if "<" in text and re.search(r"<\s*(html|body|br|head)\b", text, re.IGNORECASE):
        text = _HTML_TAG.sub("", text)  # some servers wrap the file in HTML; the records are still there

    group: Group | None = None
    seen_sitemaps: set[str] = set()
    # RFC 9309 2.2: only CR, LF and CRLF end a line (EOL = %x0D / %x0A / %x0D.0A); other Unicode
    # line breaks (str.splitlines would split on them) are part of the line.
    for line in re.split(r"\r\n|\r|\n", text):
        line = line.split("#", 1)[0].strip(" \t")
        if not line:
            continue
        if re.match(r"(?i)https?://", line):
            pair: tuple[str, str] | None = ("sitemap", line)  # a sitemap URL that lost its key
        else:
            pair = _split(line)
        if pair is None:
            reject("line is not a 'key: value' record", line)
            continue
        key, value = pair
        directive = _KEYS.get(key)
        if directive == "user-agent":
            if group is None or group.rules:
                group = Group()
                out.robots.groups.append(group)
            if value:
                group.agents.append(value)
        elif directive in ("allow", "disallow"):
            if group is None:
                reject(f"{key} rule before any user-agent line applies to no group", line)
                continue
            pattern = rule_pattern(value) if value else ""
            group.rules.append(Rule(directive == "allow", pattern))
            if directive == "allow" and _INDEX_PAGE.search(pattern):
                # As Google and crawler-commons do: allowing a directory's index page allows the directory.
                group.rules.append(Rule(True, _INDEX_PAGE.sub("/$", pattern)))
        elif directive == "crawl-delay":
            try:
                delay = float(value)
            except ValueError:
                delay = -1.0
            if not (delay >= 0 and delay != float("inf")):
                reject(f"crawl-delay {value!r} is not a non-negative number of seconds", line)
            elif group is None:
                reject("crawl-delay before any user-agent line applies to no group", line)
            elif group.crawl_delay is None:
                group.crawl_delay = delay
        elif directive == "sitemap":
            try:
                sitemap = urllib.parse.urljoin(url, value) if value else ""
            except ValueError:  # e.g. "http://[broken": urlsplit refuses it (found by fuzzing)
                sitemap = ""
            if not re.match(r"(?i)https?://[^/\s]", sitemap):
                reject(f"sitemap {value!r} is not an http(s) URL", line)
            elif sitemap not in seen_sitemaps:
                seen_sitemaps.add(sitemap)
                out.robots.sitemaps.append(sitemap)
        elif key not in _KNOWN_OTHER and not key.startswith("acap-"):
            # An unknown record is an extension RFC 9309 2.2.4 says to skip; it is still noted.
            reject(f"unknown record {key!r} skipped", line)
    return out
