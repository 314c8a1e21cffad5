"""Every string a person reads on the dashboard, in e-mails and in PDFs is marked for translation.

The check reads each template as a translator's tool would: text outside ``{% translate %}`` and
``{% blocktranslate %}`` that contains a word, and the attributes people read (``title``,
``placeholder``, ``aria-label``, ``alt``, ``label``), must be marked; so must a quoted literal
handed to a tag or filter (``|default:"None yet"``, ``with label="Name"``), written ``_("...")``.
What is not words is left alone: numbers, punctuation, symbols, and the acronyms and units that
read the same in every language (``API``, ``SFTP``, ``GB``, ``ms``; ``NOT_WORDS``).
"""

import re
from html.parser import HTMLParser
from pathlib import Path

import polib
import pytest
from django.conf import settings

TEMPLATES = Path(settings.BASE_DIR) / "templates"
# Templates with no text of their own: drf-spectacular's page frame (the API docs, English like
# the API) and allauth's elements (markup our pages fill with their own, marked, words).
SKIPPED = ("drf_spectacular/", "allauth/elements/")
ATTRIBUTES = {"title", "placeholder", "aria-label", "alt", "label", "data-confirm"}
# Words that read the same in English, German, French and Spanish: acronyms, units, names.
NOT_WORDS = re.compile(
    r"\b(?:[A-Z][A-Z0-9]+s?|ms|px|GiB|MiB|KiB|vCPU|IPv[46]|\w+\.(?:com|example|org|txt|pub|sh|json|yml|yaml|toml)"
    r"|Hosting\s+Management|Stripe|PayPal|Discord|GitHub|Google|Minecraft|OpenAPI|WebAuthn|OpenSSH"
    r"|FileZilla|WinSCP|Chromium|Redis|PostgreSQL|MariaDB|MySQL|Python|Node\.js|npm|PyPI|e\.g)\b"
)
WORD = re.compile(r"[^\W\d_]{2,}")
ENTITY = re.compile(r"&[#\w]+;")
COMMENTS = re.compile(r"\{#.*?#\}|\{%\s*comment\b.*?%\}.*?\{%\s*endcomment\s*%\}", re.S)
BLOCKS = re.compile(
    r"\{%\s*(blocktranslate|blocktrans)\b.*?%\}.*?\{%\s*end(?:blocktranslate|blocktrans)\s*%\}",
    re.S,
)
TAG = re.compile(r"\{%.*?%\}|\{\{.*?\}\}", re.S)
LITERAL = re.compile(r"""(_\()?(["'])((?:(?!\2).)*)\2""")
# Where a quoted literal in a tag is a name, a path or a format, not text.
NOT_TEXT_TAGS = re.compile(
    r"^\{%\s*(?:extends|include|url|static|load|translate|trans|now|cycle|with|if|elif|"
    r"firstof|ifchanged|regroup|widthratio|templatetag|csrf_token|block|for|empty|else|"
    r"spaceless|autoescape|filter|verbatim|get_current_language|get_available_languages)\b"
)


HYPHENED = re.compile(r"(?<![\w-])[a-z][\w]*-[\w-]*|\b\w+-(?!\w)")  # class names: app-, change-form
FORMAT_ARGUMENT = re.compile(r"\|(?:date|time|stringformat|floatformat|join|cut)\s*:\s*$")
COMPARED_BEFORE = re.compile(r"(?:==|!=|\bin|\bnot in)\s*$")
COMPARED_AFTER = re.compile(r"^\s*(?:==|!=|in\b)")
FILE_NAME = re.compile(r"[\w.-]+\.(?:html|txt|js|css|svg|png)$")
PLACEHOLDERS = re.compile(r"%\(\w+\)[sd]|\{\w*\}|%[sd]")


def _is_words(text: str) -> bool:
    text = ENTITY.sub(" ", text)
    text = HYPHENED.sub(" ", text)
    text = NOT_WORDS.sub(" ", text)
    return bool(WORD.search(text))


class _TextFinder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.found: list[tuple[int, str]] = []
        self._skipping: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self._skipping.append(tag)
        for name, value in attrs:
            if name in ATTRIBUTES and value and _is_words(value.replace("\x00", " ")):
                self.found.append((self.getpos()[0], f'{name}="{value}"'))

    def handle_endtag(self, tag):
        if self._skipping and self._skipping[-1] == tag:
            self._skipping.pop()

    def handle_data(self, data):
        if not self._skipping and _is_words(data.replace("\x00", " ")):
            self.found.append((self.getpos()[0], data.strip()))


def _blank(match: re.Match) -> str:
    """The same number of lines, so a finding's line number is the template's."""
    return "\x00" + "\n" * match.group(0).count("\n")


def unmarked(source: str, *, html: bool = True) -> list[tuple[int, str]]:
    """(line, text) of each string in a template's source that is not marked for translation."""
    found: list[tuple[int, str]] = []
    source = COMMENTS.sub(_blank, source)
    source = BLOCKS.sub(_blank, source)
    for match in TAG.finditer(source):
        tag = match.group(0)
        line = source.count("\n", 0, match.start()) + 1
        for literal in LITERAL.finditer(tag):
            marked, _quote, text = literal.groups()
            before = tag[: literal.start()]
            if marked or FORMAT_ARGUMENT.search(before):
                continue
            if COMPARED_BEFORE.search(before) or COMPARED_AFTER.search(tag[literal.end() :]):
                continue  # compared with a value: a code, not text
            if NOT_TEXT_TAGS.match(tag) and not re.search(r"\w+\s*=\s*$", before):
                continue  # the tag's own argument (a path, a name); ``with label="..."`` is text
            if FILE_NAME.search(text) or text.endswith("_FORMAT"):
                continue
            if re.search(r"[A-Z][a-z]+|[a-z]+ [a-z]+", text) and _is_words(text):
                found.append((line, text))
    source = TAG.sub(_blank, source)
    if html:
        finder = _TextFinder()
        finder.feed(source)
        finder.close()
        found.extend(finder.found)
    else:
        for number, line in enumerate(source.splitlines(), start=1):
            if _is_words(line.replace("\x00", " ")):
                found.append((number, line.strip()))
    return sorted(found)


def _templates() -> list[Path]:
    return sorted(
        path
        for path in TEMPLATES.rglob("*")
        if path.suffix in (".html", ".txt")
        and not str(path.relative_to(TEMPLATES)).startswith(SKIPPED)
    )


@pytest.mark.parametrize("path", _templates(), ids=lambda p: str(p.relative_to(TEMPLATES)))
def test_each_string_of_the_template_is_marked_for_translation(path):
    findings = unmarked(path.read_text(), html=path.suffix == ".html")
    assert not findings, "\n".join(f"{path.relative_to(TEMPLATES)}:{n}: {t!r}" for n, t in findings)


def test_the_check_finds_what_is_not_marked_and_passes_what_is():
    assert unmarked("<p>Hello there</p>") == [(1, "Hello there")]
    assert unmarked('<input placeholder="Your name">') == [(1, 'placeholder="Your name"')]
    assert unmarked('{{ value|default:"None yet" }}') == [(1, "None yet")]
    assert unmarked('{% include "x.html" with label="Name" %}') == [(1, "Name")]
    assert unmarked("Dear customer,\n{{ name }}", html=False) == [(1, "Dear customer,")]
    marked = (
        '{% load i18n %}<p>{% translate "Hello there" %}</p>'
        '<input placeholder="{% translate "Your name" %}">'
        '{{ value|default:_("None yet") }}{% include "x.html" with label=_("Name") %}'
        "{% blocktranslate %}Dear {{ name }},{% endblocktranslate %}"
        '<p>12 GB · API · SFTP</p>{% if status == "Running" %}{% endif %}'
        '<script>const words = "not checked";</script>{# a comment #}'
    )
    assert unmarked(marked) == []


# Catalogues still being translated: the test runs and must fail for them (strict), so that
# whoever completes one removes it from here. Their untranslated strings show in English.
UNFINISHED: dict[str, str] = {}
LANGUAGES = [
    pytest.param(code, marks=pytest.mark.xfail(strict=True, reason=UNFINISHED[code]))
    if code in UNFINISHED
    else code
    for code, _name in settings.LANGUAGES
    if code != "en"
]


@pytest.mark.parametrize("language", LANGUAGES)
def test_each_language_translates_every_string_and_its_compiled_catalogue_is_current(language):
    """No string left untranslated or fuzzy, the placeholders kept, and the .mo the .po's."""
    for domain in ("django", "djangojs"):
        po_path = Path(settings.BASE_DIR) / "locale" / language / "LC_MESSAGES" / f"{domain}.po"
        if domain == "djangojs" and not po_path.exists():
            continue
        catalogue = polib.pofile(str(po_path))
        untranslated = [entry.msgid for entry in catalogue.untranslated_entries()]
        assert untranslated == [], untranslated
        assert [entry.msgid for entry in catalogue.fuzzy_entries()] == []
        for entry in catalogue.translated_entries():
            wanted = sorted(PLACEHOLDERS.findall(entry.msgid))
            if entry.msgid_plural:  # a singular may say "one" instead of its number
                continue
            assert sorted(PLACEHOLDERS.findall(entry.msgstr)) == wanted, (entry.msgid, entry.msgstr)
        compiled = polib.mofile(str(po_path.with_suffix(".mo")))
        stale = f"locale/{language}/LC_MESSAGES/{domain}.mo is stale: run compilemessages"
        assert {(e.msgctxt, e.msgid): e.msgstr for e in compiled if e.msgid} == {
            (e.msgctxt, e.msgid): e.msgstr for e in catalogue.translated_entries()
        }, stale


def test_a_stored_text_is_shown_in_the_active_language_and_an_empty_one_stays_empty():
    from django.utils import translation

    from hosting.i18n import stored_text_shown

    with translation.override("de"):
        assert stored_text_shown("The card was declined.") == "Die Karte wurde abgelehnt."
        assert stored_text_shown("Insufficient funds (code 51).") == "Insufficient funds (code 51)."
        assert stored_text_shown("") == ""  # not the catalogue's header
