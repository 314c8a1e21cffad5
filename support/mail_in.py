"""Inbound mail: one raw RFC 822 message in, one normalized record for the help desk out.

Pure: no Django, no database, no network. The standard library's ``email`` package (with
``email.policy.default``) does the parsing; BeautifulSoup (stdlib ``html.parser`` backend, so no
C extension) turns HTML-only mail into text. Quote and signature stripping is our own line-based
code: the PyPI candidates cut customers' text after any "Thanks," or "- item" line, or missed
Outlook header blocks, and a help desk must never lose what the customer wrote.

Who sent a message is only what its From header claims, which anyone can write. The claim counts
(``sender_authenticated``) only when an ``Authentication-Results`` header (RFC 8601) written by a
mail server we trust says DMARC passed for the From address's own domain; ``authres`` (the
parser dkimpy uses for ARC) reads the header.

Everything here faces the open internet, so it is lenient by design: only input that is no
message at all (empty, or without a From address) raises ``MalformedMessage``; odd charsets,
broken headers, dates or encodings degrade to a best effort instead of failing. No regular
expression is run on unbounded text with nested quantifiers, so hostile bodies cost linear time.
"""

import base64
import binascii
import hashlib
import mimetypes
import quopri
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesParser
from email.utils import getaddresses, parsedate_to_datetime

import authres
from bs4 import BeautifulSoup, NavigableString, PageElement, Tag
from bs4.element import PreformattedString

DEFAULT_MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024

# Filesystems allow 255 bytes; leave room for a prefix the storage layer may add.
MAX_FILENAME_BYTES = 150


class MalformedMessage(ValueError):
    """The input is not a mail message at all (empty, or no From address to answer)."""


@dataclass(frozen=True, slots=True)
class InboundAttachment:
    """One file carried by the message; ``filename`` is safe to use as a path component."""

    filename: str
    content_type: str
    content: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class InboundMail:
    """A parsed message, normalized for the help desk (see ``parse_message``)."""

    message_id: str
    in_reply_to: str
    references: tuple[str, ...]
    sender: str
    sender_name: str
    to: tuple[str, ...]
    cc: tuple[str, ...]
    subject: str
    text: str
    reply_text: str
    attachments: tuple[InboundAttachment, ...]
    refused_attachments: tuple[tuple[str, str], ...]
    is_auto_generated: bool
    auto_reason: str
    date: datetime | None
    # Whether a trusted mail server vouches for ``sender`` (see ``sender_authenticated``).
    sender_authenticated: bool = False


def parse_message(
    raw: bytes,
    *,
    max_attachment_bytes: int = DEFAULT_MAX_ATTACHMENT_BYTES,
    allowed_types: frozenset[str] | None = None,
    trusted_authserv_ids: Iterable[str] = (),
) -> InboundMail:
    """Parse one raw message (the bytes as received, headers and body).

    ``allowed_types``, when given, lists the attachment content types to keep (``image/*``
    keeps every image); others, and those over ``max_attachment_bytes``, are listed in
    ``refused_attachments`` with the reason instead. ``trusted_authserv_ids``: the
    ``Authentication-Results`` writers whose word is taken (``sender_authenticated``); none by
    default, so no message is authenticated. Raises ``MalformedMessage`` only when the input is
    not a message at all.
    """
    if not isinstance(raw, bytes | bytearray):
        raise TypeError(f"raw must be bytes, not {type(raw).__name__}")
    if max_attachment_bytes < 0:
        raise ValueError("max_attachment_bytes must not be negative")
    raw = bytes(raw)
    if not raw.strip():
        raise MalformedMessage("empty message")
    try:
        message = BytesParser(policy=policy.default).parsebytes(raw)
    except RecursionError:
        raise MalformedMessage("MIME parts nested too deeply") from None

    senders = _addresses(message, "From")
    if not senders:
        raise MalformedMessage("no From address")
    sender_name, sender = senders[0]
    sender = sender.lower()

    ids = _message_ids(_header(message, "Message-ID"))
    message_id = ids[0] if ids else f"sha256-{hashlib.sha256(raw).hexdigest()}@generated"
    in_reply_to_ids = _message_ids(_header(message, "In-Reply-To"))
    references = tuple(_message_ids(_header(message, "References")))
    subject = _header(message, "Subject")

    text = _body_text(message)
    is_reply = bool(in_reply_to_ids or references or _REPLY_SUBJECT.match(subject))
    attachments, refused = _attachments(
        message,
        max_bytes=max_attachment_bytes,
        allowed=None if allowed_types is None else frozenset(t.lower() for t in allowed_types),
    )
    auto_reason = _auto_reason(message, sender)

    return InboundMail(
        message_id=message_id,
        in_reply_to=in_reply_to_ids[0] if in_reply_to_ids else "",
        references=references,
        sender=sender,
        sender_name=sender_name,
        to=tuple(_unique(address for _, address in _addresses(message, "To"))),
        cc=tuple(_unique(address for _, address in _addresses(message, "Cc"))),
        subject=subject,
        text=text,
        reply_text=_reply_text(text, is_reply=is_reply),
        attachments=attachments,
        refused_attachments=refused,
        is_auto_generated=bool(auto_reason),
        auto_reason=auto_reason,
        date=_date(message),
        sender_authenticated=len(senders) == 1
        and sender_authenticated(message, sender, trusted_authserv_ids=trusted_authserv_ids),
    )


_TOKEN = re.compile(r"[A-Za-z0-9._=-]{1,200}")


def reply_token_from(addresses: Iterable[str], *, local_part: str) -> str | None:
    """The TOKEN of the first recipient shaped ``<local_part>+TOKEN@domain``, case preserved.

    The local part compares case-insensitively (mail servers treat it so); the token keeps its
    case because it was minted by us. Addresses may be bare or ``Name <address>``. A token with
    characters we never mint (spaces, quotes, another ``@``) does not count.
    """
    if not local_part:
        raise ValueError("local_part must not be empty")
    prefix = f"{local_part.lower()}+"
    for candidate in addresses:
        address = getaddresses([candidate])[0][1] if "<" in candidate else candidate.strip()
        local, at, domain = address.rpartition("@")
        if not at or not domain or not local.lower().startswith(prefix):
            continue
        token = local[len(prefix) :]
        if _TOKEN.fullmatch(token):
            return token
    return None


# --- headers ----------------------------------------------------------------------------------


_ESCAPED_BYTES = re.compile("[\udc80-\udcff]+")
_SURROGATES = re.compile("[\ud800-\udfff]")


def _scrub(value: str) -> str:
    """Decode the raw 8-bit bytes the parser left surrogate-escaped (sent unencoded by lazy
    clients) as UTF-8, else Windows-1252; any other lone surrogate becomes U+FFFD."""
    value = _ESCAPED_BYTES.sub(
        lambda run: _decode_bytes(bytes(ord(ch) - 0xDC00 for ch in run.group()), None), value
    )
    return _SURROGATES.sub("\ufffd", value)


# Unicode's "Cc" category, exactly; matched by a regular expression for speed on large bodies.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_LINES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _one_line(value: str) -> str:
    """A header value as one clean line: no control characters, whitespace runs collapsed."""
    value = _CONTROL.sub(" ", _scrub(value))
    return " ".join(value.split())


def _header(message: Message, name: str) -> str:
    """The first ``name`` header, decoded (RFC 2047) and unfolded; "" when absent.

    A header sent with raw 8-bit bytes, or one the structured parser chokes on, is decoded
    from its raw text instead (the parser turns non-UTF-8 bytes into U+FFFD).
    """
    raw = next((value for key, value in message.raw_items() if key.lower() == name.lower()), None)
    if raw is None:
        return ""
    if not _ESCAPED_BYTES.search(raw):
        try:
            return _one_line(str(message.get(name)))
        except Exception:  # noqa: S110 - the structured parser has raised many kinds
            pass
    return _one_line(_decode_words(_scrub(raw)))


_ENCODED_WORD = re.compile(r"=\?([^?\s*]+)(?:\*[^?\s]*)?\?([bBqQ])\?([^?\s]*)\?=")
_BETWEEN_WORDS = re.compile(r"(?<=\?=)\s+(?==\?)")


def _decode_words(text: str) -> str:
    """RFC 2047 encoded words decoded in place, leniently (a broken word stays as it is)."""

    def decode(match: re.Match[str]) -> str:
        charset, encoding, data = match.groups()
        try:
            if encoding in "bB":
                raw = base64.b64decode(data + "=" * (-len(data) % 4))
            else:
                raw = quopri.decodestring(data.encode("ascii"), header=True)
        except (ValueError, binascii.Error):
            return match.group()
        return _decode_bytes(raw, charset)

    return _ENCODED_WORD.sub(decode, _BETWEEN_WORDS.sub("", text))


_ADDRESS = re.compile(r"[^\s<>@]+@[^\s<>@]+")


def _addresses(message: EmailMessage, name: str) -> list[tuple[str, str]]:
    """(display name, address) for every usable address in every ``name`` header, in order.

    The domain is lower-cased (it is case-insensitive); the local part keeps its case, since
    reply tokens live there. Groups such as ``undisclosed-recipients:;`` yield nothing.
    """
    pairs: list[tuple[str, str]] = []
    try:
        for header in message.get_all(name) or []:
            pairs.extend((a.display_name, a.addr_spec) for a in getattr(header, "addresses", ()))
    except Exception:  # the structured parser has raised many kinds on odd input
        pairs = getaddresses(
            [_decode_words(_scrub(v)) for k, v in message.raw_items() if k.lower() == name.lower()]
        )
    result = []
    for display_name, address in pairs:
        address = _one_line(address)
        if not _ADDRESS.fullmatch(address):
            continue
        local, _, domain = address.rpartition("@")
        result.append((_one_line(display_name), f"{local}@{domain.lower()}"))
    return result


_BRACKETED_ID = re.compile(r"<([^<>\s\x00-\x1f\x7f]{1,998})>")


def _message_ids(value: str) -> list[str]:
    """Message ids in a Message-ID, In-Reply-To or References value, without brackets.

    Comments and other noise around bracketed ids are ignored; some clients send ids without
    brackets, which are taken when they at least look like ``local@domain``.
    """
    found = _BRACKETED_ID.findall(value)
    if not found:
        found = [token.strip("<>") for token in value.split() if _ADDRESS.fullmatch(token)]
    return _unique(found)


def _unique(items: Iterable[str]) -> list[str]:
    """The items in their first order, each once."""
    return list(dict.fromkeys(items))


def _date(message: Message) -> datetime | None:
    """The Date header as an aware datetime ("-0000", an unknown zone, counts as UTC)."""
    try:
        header = message.get("Date")
        value = getattr(header, "datetime", None)
        if value is None and header is not None:
            value = parsedate_to_datetime(str(header))
    except Exception:
        return None
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


_REPLY_SUBJECT = re.compile(
    r"\s*(?:re|aw|sv|vs|antw|antwort|r|rif|odp|ynt|res|回复|答复|返信)\s*(?:\[\d+\])?\s*[:\uff1a]",
    re.IGNORECASE,
)

# --- who sent it -----------------------------------------------------------------------------

# Longer headers are not read (a real one is a few hundred characters; the parser is slow).
_MAX_AUTH_RESULTS_CHARS = 16 * 1024


def sender_authenticated(
    message: Message, sender: str, *, trusted_authserv_ids: Iterable[str]
) -> bool:
    """Whether a trusted mail server vouches that ``sender`` (the one From address) wrote it.

    Only the topmost ``Authentication-Results`` header whose authserv-id is trusted counts: our
    own server adds its header above those the message arrived with, so a forged one below it
    with the same id never speaks (nor one with any other id). It must say ``dmarc=pass`` with
    ``header.from`` being the From address's domain: DMARC's pass means SPF or DKIM passed for
    a domain aligned with exactly that From domain. A header that cannot be read is no proof.
    """
    trusted = {each.strip().lower() for each in trusted_authserv_ids if each.strip()}
    if not trusted:
        return False
    domain = sender.rpartition("@")[2].rstrip(".").lower()
    for key, value in message.raw_items():
        if key.lower() != "authentication-results":
            continue
        value = _scrub(value)
        authserv_id = value.partition(";")[0].split()
        if not authserv_id or authserv_id[0].lower() not in trusted:
            continue
        return any(
            result.method == "dmarc"
            and result.result == "pass"
            and any(
                (prop.type, prop.name) == ("header", "from")
                and prop.value.rstrip(".").lower() == domain
                for prop in result.properties
            )
            for result in _auth_results(value)
        )
    return False


def _auth_results(value: str) -> list:
    """The results of one ``Authentication-Results`` value; a result that breaks the grammar
    is left out (some providers add properties RFC 8601 does not allow, which would otherwise
    hide their well-formed DMARC result)."""
    if len(value) > _MAX_AUTH_RESULTS_CHARS:
        return []
    value = " ".join(value.split())
    try:
        return list(authres.AuthenticationResultsHeader.parse_value(value).results)
    except authres.AuthResError:
        pass
    pieces = _top_level_pieces(value)
    results = []
    for piece in pieces[1:]:
        try:
            parsed = authres.AuthenticationResultsHeader.parse_value(f"{pieces[0]}; {piece}")
        except authres.AuthResError:
            continue
        results.extend(parsed.results)
    return results


def _top_level_pieces(value: str) -> list[str]:
    """``value`` split at the semicolons outside comments and quoted strings."""
    pieces, current, depth, quoted, escaped = [], [], 0, False, False
    for ch in value:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif quoted:
            quoted = ch != '"'
        elif ch == '"':
            quoted = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        elif ch == ";" and depth == 0:
            pieces.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    pieces.append("".join(current).strip())
    return [piece for piece in pieces if piece]


# --- auto-generated mail ----------------------------------------------------------------------

_AUTO_PRECEDENCE = frozenset({"bulk", "junk", "list", "auto_reply"})
_AUTO_SUPPRESS = frozenset({"all", "oof", "autoreply"})
_DAEMON_LOCAL_PARTS = frozenset({"mailer-daemon", "mailer_daemon", "mailerdaemon", "postmaster"})


def _auto_reason(message: Message, sender: str) -> str:
    """Why the message was sent by a machine ("" when a person sent it).

    The reason names the header that gave it away, so an agent can check it: answering an
    auto-reply or a bounce risks a mail loop, and a list's mail is no support request.
    """
    auto_submitted = _header(message, "Auto-Submitted")
    if auto_submitted and auto_submitted.split(";")[0].strip().lower() != "no":
        return f"Auto-Submitted: {auto_submitted[:100]}"
    for name in ("X-Autoreply", "X-Autorespond"):
        value = _header(message, name)
        if name in message and value.lower() not in {"no", "false", "0"}:
            return f"{name}: {value[:100]}".rstrip()
    suppress = _header(message, "X-Auto-Response-Suppress")
    if {token.strip().lower() for token in suppress.split(",")} & _AUTO_SUPPRESS:
        return f"X-Auto-Response-Suppress: {suppress[:100]}"
    precedence = _header(message, "Precedence")
    if precedence.lower() in _AUTO_PRECEDENCE:
        return f"Precedence: {precedence}"
    if message.get_content_type() == "multipart/report":
        report_type = str(message.get_param("report-type") or "").lower()
        return f"Content-Type: multipart/report; report-type={report_type[:100]}"
    if "".join(_header(message, "Return-Path").split()) == "<>":
        return "Return-Path: <>"
    if sender.partition("@")[0] in _DAEMON_LOCAL_PARTS:
        return f"From: {sender}"
    for name in ("List-Id", "List-Unsubscribe"):
        if name in message:
            return f"{name}: {_header(message, name)[:100]}".rstrip()
    return ""


# --- body -------------------------------------------------------------------------------------

# Charsets mail labels one way and means a superset of.
_CHARSET_ALIASES = {
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "ks_c_5601-1987": "cp949",
    "iso-8859-1": "cp1252",
    "latin1": "cp1252",
    "us-ascii": "ascii",
}


def _decode_bytes(data: bytes, charset: str | None) -> str:
    """Bytes as text by their declared charset; unknown or "ascii" ones are tried as UTF-8
    first (the usual truth), then Windows-1252, which never fails."""
    name = _CHARSET_ALIASES.get((charset or "").strip().lower(), (charset or "").strip().lower())
    if name and name not in {"ascii", "unknown-8bit", "x-unknown"}:
        try:
            return data.decode(name, "replace")
        except LookupError:
            pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", "replace")


def _param(part: Message, name: str) -> str:
    try:
        return str(part.get_param(name) or "").lower()
    except Exception:
        return ""


def _part_text(part: Message) -> str:
    """A text part's content as str, whatever its transfer encoding and charset."""
    try:
        payload = part.get_payload(decode=True)
    except Exception:
        payload = None
    if not isinstance(payload, bytes):
        return ""
    try:
        charset = part.get_content_charset()
    except Exception:
        charset = None
    text = _decode_bytes(payload, charset).lstrip("\ufeff")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if part.get_content_subtype() == "plain" and _param(part, "format") == "flowed":
        text = _unflow(text, delsp=_param(part, "delsp") == "yes")
    return text


def _unflow(text: str, *, delsp: bool) -> str:
    """Join the soft-wrapped lines of ``format=flowed`` text (RFC 3676) back into paragraphs."""
    out: list[str] = []
    pending: str | None = None
    pending_depth = 0

    def flush() -> None:
        nonlocal pending
        if pending is not None:
            out.append(">" * pending_depth + (" " if pending_depth and pending else "") + pending)
            pending = None

    for line in text.split("\n"):
        depth = len(line) - len(line.lstrip(">"))
        content = line[depth:]
        if content.startswith(" "):
            content = content[1:]  # space-stuffing
        flowed = content.endswith(" ") and content != "-- "
        if flowed and delsp:
            content = content[:-1]
        if pending is not None and depth != pending_depth:
            flush()
        if pending is None:
            pending, pending_depth = content, depth
        else:
            pending += content
        if not flowed:
            flush()
    flush()
    return "\n".join(out)


def _is_body_part(part: EmailMessage) -> bool:
    """Plain or HTML text meant to be read, not a text file someone attached."""
    return (
        part.get_content_type() in {"text/plain", "text/html"}
        and not part.is_attachment()
        and not _filename_of(part)
    )


_MAX_MIME_DEPTH = 100


def _body_pieces(part: EmailMessage, depth: int = 0) -> list[tuple[bool, str]]:
    """(is HTML, text) for each readable piece of ``part``, in order.

    Of alternatives, the plain text wins unless it is blank; of a related group, its root;
    a mixed group contributes all its pieces (Apple Mail splits text around inline images).
    """
    if depth > _MAX_MIME_DEPTH:
        return []
    if _is_body_part(part):
        is_html = part.get_content_subtype() == "html"
        content = _part_text(part)
        text = _tidy(_html_to_text(content) if is_html else content)
        return [(is_html, text)] if text else []
    payload = part.get_payload()
    if part.get_content_maintype() != "multipart" or not isinstance(payload, list):
        return []
    children = [child for child in payload if isinstance(child, EmailMessage)]
    subtype = part.get_content_subtype()
    if subtype == "alternative":
        options = [pieces for child in children if (pieces := _body_pieces(child, depth + 1))]
        plain = [pieces for pieces in options if not any(is_html for is_html, _ in pieces)]
        # Without plain text, the last alternative is the richest (RFC 2046).
        return plain[0] if plain else (options[-1] if options else [])
    if subtype == "related":
        children = children[:1]
    return [piece for child in children for piece in _body_pieces(child, depth + 1)]


def _body_text(message: EmailMessage) -> str:
    """The message's text: its text/plain body, else its HTML body as readable text."""
    return "\n\n".join(text for _, text in _body_pieces(message))


def _tidy(text: str) -> str:
    """Plain text made regular: LF line ends, no control characters or trailing spaces, no
    blank lines at either end and never more than one blank line in a row."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\xa0", " ")
    text = _CONTROL_BUT_LINES.sub("", _scrub(text))
    lines = [line.rstrip() for line in text.split("\n")]
    text = "\n".join(lines).strip("\n")
    return re.sub(r"\n{3,}", "\n\n", text)


# --- HTML to text -----------------------------------------------------------------------------

_SKIPPED_TAGS = frozenset(
    {"head", "script", "style", "title", "template", "noscript", "object", "iframe", "svg"}
)
_PARAGRAPH_TAGS = frozenset(
    {"p", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "table", "dl", "hr"}
)
_LINE_TAGS = frozenset(
    {
        "address",
        "article",
        "aside",
        "center",
        "dd",
        "details",
        "div",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "header",
        "li",
        "main",
        "nav",
        "section",
        "summary",
        "tr",
        "caption",
    }
)
_LIST_TAGS = frozenset({"ul", "ol"})
_MAX_LIST_INDENT = 8  # levels; hostile nesting must not grow the text quadratically
_PRE_TAGS = frozenset({"pre", "listing", "plaintext", "xmp"})
_HIDDEN_STYLE = re.compile(r"display:none|visibility:hidden")
_WHITESPACE = re.compile(r"\s+")


class _TextSink:
    """Collects text with block-level line breaks.

    Breaks are only written when more text follows, so blocks never leave blank lines at
    either end or stack up. Lines inside blockquotes get ``> `` per level; a blank line before
    a quote keeps the outer level, as mail clients quote it.
    """

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.breaks = 0
        self.quote_depth = 0
        self._break_depth = 0
        self._at_line_start = True

    def _want(self, breaks: int) -> None:
        if not self.breaks:
            self._break_depth = self.quote_depth
        self._break_depth = min(self._break_depth, self.quote_depth)
        self.breaks = breaks

    def block(self, newlines: int) -> None:
        self._want(max(self.breaks, newlines))

    def line_break(self) -> None:
        self._want(self.breaks + 1)

    def _start_line(self) -> None:
        if self.parts and self.breaks:
            self.parts[-1] = self.parts[-1].rstrip(" ")
            blank = "\n" + "> " * min(self._break_depth, self.quote_depth)
            self.parts.append(blank * (self.breaks - 1) + "\n" + "> " * self.quote_depth)
            self._at_line_start = True
        elif not self.parts and self.quote_depth:
            self.parts.append("> " * self.quote_depth)
        self.breaks = 0

    def text(self, value: str, *, pre: bool = False, verbatim: bool = False) -> None:
        """Add text: collapsed like HTML whitespace, kept as is in ``pre``, or ``verbatim``."""
        if pre:
            for number, line in enumerate(value.split("\n")):
                if number:
                    self.line_break()
                if line:
                    self._start_line()
                    self.parts.append(line)
                    self._at_line_start = False
            return
        if not verbatim:
            value = _WHITESPACE.sub(" ", value)
            if self._at_line_start or self.breaks or not self.parts:
                value = value.lstrip(" ")
            elif value.startswith(" ") and self.parts[-1].endswith(" "):
                value = value[1:]
        if not value:
            return
        self._start_line()
        self.parts.append(value)
        self._at_line_start = False

    def result(self) -> str:
        return "".join(self.parts)


def _hidden(tag: Tag) -> bool:
    style = "".join(str(tag.get("style") or "").split()).lower()
    return tag.has_attr("hidden") or bool(_HIDDEN_STYLE.search(style))


def _html_to_text(html: str) -> str:
    """Readable plain text from an HTML mail body.

    Blocks become lines and paragraphs, ``<br>`` a line break, list items ``- `` or ``1. ``,
    blockquotes ``> `` lines (so quote stripping treats them like quoted plain text), links
    ``text (url)``. Scripts, styles, comments and hidden elements are dropped. The walk is
    iterative: deeply nested hostile markup cannot exhaust the stack.
    """
    # The newline (insignificant whitespace) keeps BeautifulSoup from warning that a short
    # tagless body such as a lone link "looks like a URL" it was meant to fetch.
    soup = BeautifulSoup(html + "\n", "html.parser")
    sink = _TextSink()
    pre_depth = 0
    list_counters: list[int | None] = []  # None for <ul>, the next number for <ol>
    stack: list[tuple[PageElement, bool]] = [(soup, False)]
    while stack:
        node, closing = stack.pop()
        if isinstance(node, Tag):
            name = node.name.lower()
            if closing:
                _close_tag(node, name, sink, list_counters)
                pre_depth -= name in _PRE_TAGS
                continue
            if name in _SKIPPED_TAGS or _hidden(node):
                continue
            _open_tag(name, sink, list_counters)
            pre_depth += name in _PRE_TAGS
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node.contents))
        elif isinstance(node, NavigableString) and not isinstance(node, PreformattedString):
            sink.text(str(node), pre=pre_depth > 0)
    return _tidy(sink.result())


def _open_tag(name: str, sink: _TextSink, list_counters: list[int | None]) -> None:
    if name in _PARAGRAPH_TAGS:
        sink.block(2)
    elif name in _LINE_TAGS:
        sink.block(1)
    elif name in _LIST_TAGS:
        sink.block(1 if list_counters else 2)  # a nested list continues its item
        list_counters.append(1 if name == "ol" else None)
    if name == "br":
        sink.line_break()
    elif name in {"td", "th"}:
        sink.text(" ")
    elif name == "blockquote":
        sink.quote_depth += 1
    elif name == "li":
        indent = "  " * min(max(len(list_counters) - 1, 0), _MAX_LIST_INDENT)
        number = list_counters[-1] if list_counters else None
        if number is None:
            sink.text(f"{indent}- ", verbatim=True)
        else:
            sink.text(f"{indent}{number}. ", verbatim=True)
            list_counters[-1] = number + 1


def _close_tag(tag: Tag, name: str, sink: _TextSink, list_counters: list[int | None]) -> None:
    if name in _LIST_TAGS and list_counters:
        list_counters.pop()
        sink.block(1 if list_counters else 2)
    elif name == "blockquote":
        sink.quote_depth -= 1
    elif name == "a":
        href = str(tag.get("href") or "").strip()
        label = tag.get_text(" ", strip=True)
        if href.lower().startswith(("http://", "https://")) and (
            href.rstrip("/") != label.rstrip("/")
        ):
            sink.text(f" ({href})")
    if name in _PARAGRAPH_TAGS:
        sink.block(2)
    elif name in _LINE_TAGS:
        sink.block(1)


# --- quoted history and signatures ------------------------------------------------------------

# "On <date>, <someone> wrote:" in the clients' languages (Gmail, Apple Mail, Thunderbird and
# friends). Matched against at most three joined lines ending in a colon, and only when they
# hold a digit: every client puts the date there, while a customer's own sentence rarely does.
_ATTRIBUTIONS = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"On\s.+\swrote\s?:",  # en
        r"Am\s.+\sschrieb\s?.*:",  # de
        r"Le\s.+\sa\s+écrit\s?:",  # fr
        r"El\s.+\sescribió\s?:",  # es
        r"Em\s.+\sescreveu\s?:",  # pt
        r"Il\s.+\sha\s+scritto\s?:",  # it
        r"Op\s.+\s(?:schreef|geschreven)\s?.*:",  # nl
        r"(?:Den\s)?.+\sskrev\s?.*:",  # sv, da, no
        r".+\snapisał(?:\(a\))?\s?:",  # pl
        r".+\sнаписал(?:\(а\))?\s?:",  # ru  # noqa: RUF001 - Cyrillic on purpose
        r".+\s(?:kirjoitti|írta)\s?:",  # fi, hu
        r"\d{4}年\d{1,2}月\d{1,2}日.*[:\uff1a]",  # ja, zh (Gmail)
        r".+のメール\s?[:\uff1a]",  # ja (Apple Mail)
        r".+写道\s?[:\uff1a]",  # zh
        r".+작성\s?[:\uff1a]",  # ko
    )
)
# Outlook's and others' separator above the original message.
_SEPARATOR = re.compile(
    r"-{2,}\s*(?:Original Message|Ursprüngliche Nachricht|Message d'origine|Mensaje original"
    r"|Messaggio originale|Oorspronkelijk bericht|Originalmeddelande|Oprindelig meddelelse"
    r"|Opprinnelig melding|Wiadomość oryginalna|Исходное сообщение|Mensagem original"
    r"|元のメッセージ|原始邮件)\s*-{2,}",
    re.IGNORECASE,
)
# Outlook's header block ("From: … / Sent: … / To: … / Subject: …") in several languages.
_FROM_LABEL = re.compile(
    r"\*?(?:From|Von|De|Da|Van|Från|Fra|Od|От|Lähettäjä|Feladó|差出人|发件人|寄件者|보낸 사람)"
    r"\s?\*?\s?[:\uff1a]",
    re.IGNORECASE,
)
_OTHER_LABEL = re.compile(
    r"\*?(?:Sent|Date|To|Subject|Cc|Gesendet|Datum|An|Betreff|Envoyé|À|Objet|Enviado|Fecha"
    r"|Para|Asunto|Inviato|Data|A|Oggetto|Verzonden|Aan|Onderwerp|Skickat|Till|Ämne|Sendt|Til"
    r"|Emne|Wysłano|Do|Temat|Отправлено|Кому|Тема"
    r"|送信日時|宛先|件名|发送时间|收件人|主题)"
    r"\s?\*?\s?[:\uff1a]",
    re.IGNORECASE,
)
_FORWARD_MARKER = re.compile(
    r"-*\s*(?:Forwarded message|Weitergeleitete Nachricht|Message transféré|Mensaje reenviado"
    r"|Begin forwarded message|Anfang der weitergeleiteten (?:Nachricht|E-Mail)"
    r"|Début du message réexpédié)\s*:?\s*-*",
    re.IGNORECASE,
)
_RULE = re.compile(r"[_-]{10,}")
_SIGNATURE_DELIMITER = "--"  # "-- " once trailing whitespace is gone
_MOBILE_FOOTER = re.compile(
    r"(?:Sent from my .{1,40}|Sent from (?:Mail|Outlook) for .{1,40}|Get Outlook for .{1,40}"
    r"|Von meinem .{1,40} gesendet|Envoyé de mon .{1,40}|Enviado desde mi .{1,40}"
    r"|Inviato da .{1,40}|iPhoneから送信)",
    re.IGNORECASE,
)
_MAX_HEADER_LINE = 300


def _is_quoted(line: str) -> bool:
    return line.lstrip(" ").startswith(">")


def _history_start(lines: list[str]) -> tuple[int, int] | None:
    """Where quoted history starts: (first line, lines the attribution takes), or None.

    The attribution length is 0 for separators and header blocks, which begin a history that
    is not ``>``-quoted; only a "… wrote:" line may sit above a bottom-posted answer.
    """
    normalized = [" ".join(line.replace("\u202f", " ").split()) for line in lines]
    for index, line in enumerate(normalized):
        if not line or _is_quoted(line) or len(line) > _MAX_HEADER_LINE:
            continue
        if _SEPARATOR.fullmatch(line):
            return index, 0
        if _FROM_LABEL.match(line) and _is_header_block(normalized, index):
            return _rule_above(normalized, index), 0
        joined = ""
        for extra in range(3):
            following = normalized[index + extra] if index + extra < len(normalized) else ""
            if not following or _is_quoted(following):
                break
            joined = f"{joined} {following}".strip()
            if len(joined) > _MAX_HEADER_LINE:
                break
            if (
                joined.endswith((":", "\uff1a"))
                and any(ch.isdigit() for ch in joined)
                and _quote_follows(normalized, index + extra + 1)
                and any(pattern.fullmatch(joined) for pattern in _ATTRIBUTIONS)
            ):
                return index, extra + 1
    return None


def _quote_follows(lines: list[str], index: int) -> bool:
    """Whether the next non-blank line from ``index`` on is ``>``-quoted: clients always put
    the quote right under their "… wrote:" line, while a customer's "On 3 May I wrote:" is
    followed by their own words."""
    while index < len(lines) and not lines[index]:
        index += 1
    return index < len(lines) and _is_quoted(lines[index])


def _is_header_block(lines: list[str], index: int) -> bool:
    """A From line followed by at least two other header lines, not under a forward marker
    (forwarded content is the customer's to share, not history to drop)."""
    labels = sum(1 for line in lines[index + 1 : index + 7] if _OTHER_LABEL.match(line))
    if labels < 2:
        return False
    above = index - 1
    while above >= 0 and not lines[above]:
        above -= 1
    return above < 0 or not _FORWARD_MARKER.fullmatch(lines[above])


def _rule_above(lines: list[str], index: int) -> int:
    """Outlook draws a rule of underscores above its header block; start the history there."""
    above = index - 1
    while above >= 0 and not lines[above]:
        above -= 1
    return above if above >= 0 and _RULE.fullmatch(lines[above]) else index


def _reply_text(text: str, *, is_reply: bool) -> str:
    """The new part of a message: without quoted history, ``>`` lines and signature.

    History is only looked for in replies (by In-Reply-To, References or a "Re:" subject), so
    a new message that shows a shell prompt, "> 90% CPU" or pasted mail headers keeps them.
    When nothing is left above a "… wrote:" line, the answer was written below or between the
    quotes, and those lines are kept.
    """
    lines = text.split("\n")
    if is_reply:
        start = _history_start(lines)
        if start is not None:
            index, attribution_lines = start
            above = lines[:index]
            if not attribution_lines or any(
                line.strip() and not _is_quoted(line) for line in above
            ):
                lines = above
            else:
                lines = above + lines[index + attribution_lines :]
        lines = [line for line in lines if not _is_quoted(line)]
    lines = [line.rstrip() for line in lines]
    if _SIGNATURE_DELIMITER in lines:
        lines = lines[: lines.index(_SIGNATURE_DELIMITER)]
    own = [line for line in lines if line.strip()]
    if own and _MOBILE_FOOTER.fullmatch(own[-1].strip()):
        lines = lines[: len(lines) - lines[::-1].index(own[-1]) - 1]
    return _tidy("\n".join(lines))


# --- attachments ------------------------------------------------------------------------------

# Report metadata: neither text for a person nor a file anyone attached.
_REPORT_PARTS = frozenset(
    {"message/delivery-status", "message/disposition-notification", "text/rfc822-headers"}
)
_MIME_TYPES = mimetypes.MimeTypes()  # Python's built-in table only: same answers on any host
_WINDOWS_RESERVED = re.compile(r"(?:con|prn|aux|nul|com[0-9]|lpt[0-9])(?:\..*)?", re.IGNORECASE)
_WINDOWS_FORBIDDEN = re.compile(r'[<>:"|?*]')


def _filename_of(part: Message) -> str:
    try:
        return _scrub(part.get_filename() or "")
    except Exception:
        return ""


def _leaves(message: EmailMessage) -> Iterator[EmailMessage]:
    """Every part that is not a multipart container, in order; attached messages stay whole."""
    stack = [message]
    while stack:
        part = stack.pop()
        if part.get_content_maintype() == "multipart" and part.is_multipart():
            payload = part.get_payload()
            if isinstance(payload, list):
                stack.extend(
                    child for child in reversed(payload) if isinstance(child, EmailMessage)
                )
            continue
        yield part


def _content_of(part: Message) -> bytes:
    """A part's decoded bytes; an attached message as the RFC 822 text it was."""
    if part.get_content_type() == "message/rfc822":
        payload = part.get_payload()
        inner = payload[0] if isinstance(payload, list) and payload else None
        if isinstance(inner, Message):
            for generator_policy in (inner.policy, policy.compat32):
                try:
                    return inner.as_bytes(policy=generator_policy)
                except Exception:  # noqa: S112 - try the plainer generator
                    continue
        return b""
    try:
        content = part.get_payload(decode=True)
    except Exception:
        return b""
    return content if isinstance(content, bytes) else b""


def safe_filename(name: str, content_type: str = "application/octet-stream") -> str:
    """A filename that is safe as one path component on any system.

    Keeps only the last path segment (so ``../../etc/passwd`` is ``passwd``, and
    ``C:\\evil\\x.exe`` is ``x.exe``), drops control and invisible format characters (such as
    the right-to-left override that turns ``txt.exe`` into a lookalike), replaces characters
    Windows forbids, strips leading dots (no hidden files) and trailing dots and spaces, defuses
    reserved device names and cuts the name to ``MAX_FILENAME_BYTES`` bytes of UTF-8 keeping
    its extension. Empty results get ``attachment`` plus an extension for the content type.
    """
    name = unicodedata.normalize("NFC", name).replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch for ch in name if unicodedata.category(ch) not in {"Cc", "Cf", "Cs"})
    name = " ".join(_WINDOWS_FORBIDDEN.sub("_", name).split()).strip(" .")
    if _WINDOWS_RESERVED.fullmatch(name):
        name = f"_{name}"
    if len(name.encode()) > MAX_FILENAME_BYTES:
        stem, dot, extension = name.rpartition(".")
        if not dot or not stem or len(extension) > 16:
            stem, extension = name, ""
        suffix = f".{extension}" if extension else ""
        budget = MAX_FILENAME_BYTES - len(suffix.encode())
        stem = stem.encode()[:budget].decode("utf-8", "ignore").rstrip(" .")
        name = f"{stem}{suffix}"
    if not name:
        name = f"attachment{_MIME_TYPES.guess_extension(content_type) or '.bin'}"
    return name


def _deduplicated(name: str, taken: set[str]) -> str:
    """``name``, or ``name-2``, ``name-3``… (before the extension) if the message used it."""
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem:
        stem, extension = name, ""
    candidate, number = name, 1
    while candidate.lower() in taken:
        number += 1
        candidate = f"{stem}-{number}.{extension}" if extension else f"{stem}-{number}"
    taken.add(candidate.lower())
    return candidate


def _type_allowed(content_type: str, allowed: frozenset[str]) -> bool:
    return content_type in allowed or f"{content_type.split('/')[0]}/*" in allowed


def _attachments(
    message: EmailMessage, *, max_bytes: int, allowed: frozenset[str] | None
) -> tuple[tuple[InboundAttachment, ...], tuple[tuple[str, str], ...]]:
    """The files the message carries (inline images too), and those refused with a reason.

    Text parts without a filename are the body, not files. A declared
    ``application/octet-stream`` is replaced by the type the filename's extension names, since
    many clients label every file so.
    """
    kept: list[InboundAttachment] = []
    refused: list[tuple[str, str]] = []
    taken: set[str] = set()
    for part in _leaves(message):
        content_type = part.get_content_type()
        if content_type in _REPORT_PARTS or _is_body_part(part):
            continue
        original = _filename_of(part)
        filename = safe_filename(original, content_type)
        if content_type == "application/octet-stream":
            content_type = _MIME_TYPES.guess_type(filename)[0] or content_type
        shown = _one_line(original) or filename
        if allowed is not None and not _type_allowed(content_type, allowed):
            refused.append((shown, f"type {content_type} is not allowed"))
            continue
        content = _content_of(part)
        if len(content) > max_bytes:
            refused.append(
                (shown, f"too large: {len(content)} bytes, the limit is {max_bytes} bytes")
            )
            continue
        kept.append(InboundAttachment(_deduplicated(filename, taken), content_type, content))
    return tuple(kept), tuple(refused)
