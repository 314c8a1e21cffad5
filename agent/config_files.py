"""A template's ``config_files``: edits of the server's configuration files that the agent makes
before each start, as Pterodactyl's Wings does (PROTOCOL.md "Configuration files").

Each file is read and written through ``agent.files`` as the server's user and beneath its
folder (openat2 ``RESOLVE_BENEATH``: a link out of the folder is refused, the file outside left
as it is; the write replaces the file atomically, keeping its mode, owned by the server's
user). A file that is too large, not text or does not parse is left untouched and said in the
console; the start goes on. The editors are pure functions of text, one per parser:

- ``properties``: Java properties; the lines are kept (comments, order, continuations) but the
  edited key's, which becomes ``key=value`` escaped as Java writes it (``\\uXXXX`` beyond ASCII);
  a missing key is added at the end.
- ``file``: every line that starts with ``match`` becomes ``value``.
- ``yaml``, ``json``: a dotted path (``a.b.c``, ``list[0].x``, ``*`` for every key or element
  at that level); missing objects are created. The value is typed as Wings types it: a
  template's ``true``/``false`` or number stays that JSON type, and text that is a whole number
  (``"{{SERVER_PORT}}"`` once substituted) becomes a number; other text stays text. The file is
  written back as the parser writes it (YAML comments are lost, as under Wings).
- ``ini``: ``section.key`` (``[a.b].key`` for a section whose name holds dots), ``key`` for no
  section; the lines are kept but the edited key's value; a missing key or section is added.
- ``xml``: a dotted path from the root element (``*`` for every child); missing elements are
  created (the root too, in an empty file); a value ``[name='text']`` sets that attribute rather
  than the text. The document is re-indented by two spaces, as Wings does.

``if_value``: the edit is made only where the current value is that text (a number or true/false
as JSON writes it), or, for ``regex:<pattern>``, where the pattern matches it (as Wings reads
it); a key that is not there is then neither added nor created.
"""

import contextlib
import functools
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import yaml

from agent.errors import AgentError
from agent.files import FileConflict, NotFound, ServerFiles, TooLarge

PARSERS = ("properties", "yaml", "json", "ini", "xml", "file")
MAX_CONFIG_FILES = 32
MAX_REPLACEMENTS = 100
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_PATH_CHARS = 1024
MAX_MATCH_CHARS = 1024
MAX_VALUE_CHARS = 64 * 1024
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
# A line and its end (\r\n, \r or \n), the last one without.
LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
WHOLE_NUMBER = re.compile(r"[+-]?[0-9]+", re.ASCII)
XML_NAME = re.compile(r"[A-Za-z_][\w.-]*|\*")
XML_ATTRIBUTE = re.compile(r"\[(\w+)='(.*)'\]", re.DOTALL)
ARRAY_ELEMENT = re.compile(r"(.+?)\[([0-9]+)\]")
INT64 = 2**63

Value = str | int | float | bool


@dataclass(frozen=True)
class Replacement:
    match: str
    value: Value
    # None (or "", as Wings reads it): no condition.
    if_value: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"match": self.match, "value": self.value}
        if self.if_value is not None:
            data["if_value"] = self.if_value
        return data


@dataclass(frozen=True)
class ConfigFile:
    file: str
    parser: str
    replace: tuple[Replacement, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "parser": self.parser,
            "replace": [item.to_json() for item in self.replace],
        }


class ConfigProblem(Exception):
    """Why a file is left as it is (a sentence for the console)."""


def safe_relative_path(path: str) -> bool:
    """A file's path inside the server's folder: relative, no ``..``, no empty or ``.`` part."""
    if not path or len(path) > MAX_PATH_CHARS or path.startswith("/"):
        return False
    if any(ord(char) < 0x20 for char in path):
        return False
    return all(part not in ("", ".", "..") for part in path.split("/"))


# -- values -------------------------------------------------------------------------------------


def render(value: Value, substitutions: dict[str, str]) -> Value:
    """``value`` with each known ``{{KEY}}`` replaced by its value as it is (not shell-quoted)."""
    if not isinstance(value, str):
        return value

    def replace(match: re.Match[str]) -> str:
        return substitutions.get(match.group(1), match.group(0))

    return PLACEHOLDER.sub(replace, value)


def as_text(value: Any) -> str:
    """A value as the text parsers write it (JSON's spelling for true, false and numbers)."""
    if isinstance(value, str):
        return value
    return json.dumps(value)


def typed(value: Value) -> Value:
    """A value as YAML and JSON files get it: text that is a whole number becomes a number."""
    if isinstance(value, str) and WHOLE_NUMBER.fullmatch(value):
        number = int(value)
        if -INT64 <= number < INT64:
            return number
    return value


def _current_text(value: Any) -> str | None:
    """What ``if_value`` is compared with; None for what is no single value."""
    if isinstance(value, dict | list):
        return None
    if value is None:
        return "null"
    return as_text(value)


def _condition(replacement: Replacement) -> str | None:
    return replacement.if_value or None


@functools.lru_cache(maxsize=256)
def _pattern(text: str) -> re.Pattern[str] | None:
    try:
        return re.compile(text)
    except re.error:
        return None


def _meets(current: str | None, condition: str) -> bool:
    """Whether the current value meets ``if_value``: equal to it, or, for ``regex:<pattern>``
    (as Wings reads it), matched by the pattern somewhere (an invalid pattern matches nothing)."""
    if current is None:
        return False
    if condition.startswith("regex:"):
        pattern = _pattern(condition[len("regex:") :])
        return pattern is not None and pattern.search(current) is not None
    return current == condition


# -- properties ---------------------------------------------------------------------------------

PROPERTY_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
PROPERTY_BLANKS = " \t\f"


def _continues(line: str) -> bool:
    """Whether a logical line goes on: it ends with an odd number of backslashes."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _unescape_property(text: str) -> str:
    result, index = [], 0
    while index < len(text):
        char = text[index]
        if char != "\\" or index + 1 == len(text):
            result.append(char)
            index += 1
            continue
        following = text[index + 1]
        if following == "u":
            digits = text[index + 2 : index + 6]
            if not re.fullmatch(r"[0-9A-Fa-f]{4}", digits):
                raise ConfigProblem("it holds a malformed \\uXXXX escape")
            result.append(chr(int(digits, 16)))
            index += 6
            continue
        result.append(PROPERTY_ESCAPES.get(following, following))
        index += 2
    # Surrogate pairs (\ud83d\ude00) make one character, as Java reads them.
    return "".join(result).encode("utf-16", "surrogatepass").decode("utf-16")


def _split_property(line: str) -> tuple[str, str]:
    """(key, value) of a logical line that is not a comment, both unescaped."""
    index, end = 0, len(line)
    while index < end:
        char = line[index]
        if char == "\\":
            index += 2
            continue
        if char in "=:" or char in PROPERTY_BLANKS:
            break
        index += 1
    key = line[: min(index, end)]
    rest = line[min(index, end) :].lstrip(PROPERTY_BLANKS)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(PROPERTY_BLANKS)
    return _unescape_property(key), _unescape_property(rest)


def _escape_property(text: str, *, key: bool) -> str:
    result = []
    for index, char in enumerate(text):
        if char == "\\":
            result.append("\\\\")
        elif char in "\t\n\r\f":
            result.append("\\" + "tnrf"["\t\n\r\f".index(char)])
        elif char == " " and (key or index == 0):
            result.append("\\ ")
        elif key and char in "=:#!":
            result.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) > 0x7E:
            # Java reads \uXXXX, a character beyond U+FFFF as its UTF-16 surrogate pair.
            units = char.encode("utf-16-be", "surrogatepass")
            result.extend(
                f"\\u{int.from_bytes(units[i : i + 2]):04x}" for i in range(0, len(units), 2)
            )
        else:
            result.append(char)
    return "".join(result)


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def edit_properties(text: str, replacements: Iterable[Replacement]) -> str:
    lines = LINE.findall(text)
    newline = _newline(text)
    positions: dict[str, tuple[int, int]] = {}  # key: its first and last physical line
    values: dict[str, str] = {}
    index = 0
    while index < len(lines):
        first = index
        logical = lines[index].rstrip("\r\n")
        if not logical.lstrip(PROPERTY_BLANKS) or logical.lstrip(PROPERTY_BLANKS)[0] in "#!":
            index += 1
            continue
        while _continues(logical) and index + 1 < len(lines):
            index += 1
            logical = logical[:-1] + lines[index].rstrip("\r\n").lstrip(PROPERTY_BLANKS)
        if _continues(logical):
            logical = logical[:-1]
        key, value = _split_property(logical.lstrip(PROPERTY_BLANKS))
        positions[key], values[key] = (first, index), value  # the last one counts, as in Java
        index += 1
    added: dict[str, str] = {}
    for replacement in replacements:
        condition = _condition(replacement)
        if condition is not None and not _meets(values.get(replacement.match), condition):
            continue
        value = as_text(replacement.value)
        line = (
            f"{_escape_property(replacement.match, key=True)}="
            f"{_escape_property(value, key=False)}{newline}"
        )
        if replacement.match in positions:
            first, last = positions[replacement.match]
            lines[first : last + 1] = [line] + [""] * (last - first)
        else:
            added[replacement.match] = line
        values[replacement.match] = value
    body = "".join(lines)
    if added and body and not body.endswith(("\n", "\r")):
        body += newline
    return body + "".join(added.values())


# -- plain text ---------------------------------------------------------------------------------


def edit_file(text: str, replacements: Iterable[Replacement]) -> str:
    rules = list(replacements)
    lines = LINE.findall(text)
    for index, line in enumerate(lines):
        content = line.rstrip("\r\n")
        for rule in rules:
            condition = _condition(rule)
            if not content.startswith(rule.match):
                continue
            if condition is not None and not _meets(content[len(rule.match) :], condition):
                continue
            lines[index] = as_text(rule.value) + line[len(content) :]
            break
    return "".join(lines)


# -- YAML and JSON ------------------------------------------------------------------------------

MISSING = object()


def _path(match: str) -> list[str | int]:
    """``a.b[0].*`` as ["a", "b", 0, "*"]."""
    segments: list[str | int] = []
    for part in match.split("."):
        element = ARRAY_ELEMENT.fullmatch(part)
        if element:
            segments += [element.group(1), int(element.group(2))]
        else:
            segments.append(part)
    return segments


def _key(node: dict, segment: str) -> Any:
    """The key of ``node`` that ``segment`` names: itself, or a YAML number key so written."""
    if segment in node:
        return segment
    for key in node:
        if isinstance(key, int) and not isinstance(key, bool) and str(key) == segment:
            return key
    return segment


def _slot(node: Any, segment: str | int, where: str) -> tuple[Any, bool]:
    """(key or index, whether it exists) of ``segment`` in ``node``."""
    if isinstance(node, dict):
        key = _key(node, str(segment))
        return key, key in node
    if isinstance(node, list) and (isinstance(segment, int) or re.fullmatch("[0-9]+", segment)):
        index = int(segment)
        if index > len(node):
            raise ConfigProblem(f"{where} is past the end of a list of {len(node)}")
        return index, index < len(node)
    holder = "a list" if isinstance(node, list) else "no object"
    raise ConfigProblem(f"{where} cannot be set: {holder} holds it")


def _store(node: Any, slot: Any, value: Any) -> None:
    if isinstance(node, list) and slot == len(node):
        node.append(value)
    else:
        node[slot] = value


def _assign(
    node: Any, path: list[str | int], value: Any, condition: str | None, where: str
) -> None:
    segment, rest = path[0], path[1:]
    here = f"{where}.{segment}" if where else str(segment)
    if segment == "*":
        children = list(node) if isinstance(node, dict) else range(len(node))
        for child in children:
            if rest:
                if isinstance(node[child], dict | list):
                    _assign(node[child], rest, value, condition, f"{where}.{child}")
            elif condition is None or _meets(_current_text(node[child]), condition):
                node[child] = value
        return
    slot, exists = _slot(node, segment, here)
    if not rest:
        if condition is None or (exists and _meets(_current_text(node[slot]), condition)):
            _store(node, slot, value)
        return
    child = node[slot] if exists else None
    if child is None:
        if condition is not None:
            return  # a condition on what is not there: nothing to compare, nothing made
        child = [] if isinstance(rest[0], int) else {}
        _store(node, slot, child)
    if not isinstance(child, dict | list):
        raise ConfigProblem(f"{here} is neither an object nor a list")
    _assign(child, rest, value, condition, here)


def _edit_tree(data: Any, replacements: Iterable[Replacement]) -> Any:
    for replacement in replacements:
        path = _path(replacement.match)
        _assign(data, path, typed(replacement.value), _condition(replacement), "")
    return data


SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SafeDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def edit_yaml(text: str, replacements: Iterable[Replacement]) -> str:
    try:
        data = yaml.load(text, Loader=SafeLoader)  # noqa: S506 - the safe loader
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or "unreadable"
        raise ConfigProblem(f"it is not YAML ({problem}{where})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict | list):
        raise ConfigProblem("it is not a YAML mapping")
    data = _edit_tree(data, replacements)
    return yaml.dump(
        data, Dumper=SafeDumper, sort_keys=False, allow_unicode=True, default_flow_style=False
    )


def edit_json(text: str, replacements: Iterable[Replacement]) -> str:
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as error:
        raise ConfigProblem(f"it is not JSON ({error})") from None
    if not isinstance(data, dict | list):
        raise ConfigProblem("it is not a JSON object")
    data = _edit_tree(data, replacements)
    return json.dumps(data, indent=4, ensure_ascii=False) + "\n"


# -- INI ----------------------------------------------------------------------------------------


def _ini_path(match: str) -> tuple[str, str]:
    """(section, key) as Wings reads ``match``: the first dot outside brackets splits them,
    the brackets themselves are dropped; no dot: the key of no section."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in match:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "." and depth <= 0 and not parts:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return (parts[0], parts[1]) if len(parts) == 2 else ("", parts[0])


def _ini_section(line: str) -> str | None:
    stripped = line.strip()
    if stripped.startswith("[") and "]" in stripped:
        return stripped[1 : stripped.rindex("]")].strip()
    return None


def _ini_entry(line: str) -> tuple[str, str, str] | None:
    """(key, the line up to its value, the value) of a ``key = value`` line."""
    content = line.rstrip("\r\n")
    stripped = content.strip()
    if not stripped or stripped[0] in ";#" or _ini_section(content) is not None:
        return None
    found = [position for position in (content.find("="), content.find(":")) if position >= 0]
    if not found:
        return None
    delimiter = min(found)
    after = content[delimiter + 1 :]
    prefix = content[: delimiter + 1] + after[: len(after) - len(after.lstrip())]
    return content[:delimiter].strip(), prefix, after.strip()


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`":
        return value[1:-1]
    return value


def _edit_ini_once(lines: list[str], replacement: Replacement, newline: str) -> None:
    section, key = _ini_path(replacement.match)
    condition = _condition(replacement)
    value = " ".join(as_text(replacement.value).splitlines())
    in_section, found = section == "", False
    # The section's last line that is not blank, where a missing key goes (its header's line
    # for an empty section; None: no such section yet, or no line before any section).
    last_line: int | None = None
    for index, line in enumerate(lines):
        name = _ini_section(line)
        if name is not None:
            in_section = name == section
            if in_section:
                last_line = index
            continue
        if not in_section:
            continue
        if line.strip():
            last_line = index
        entry = _ini_entry(line)
        if entry is None or entry[0] != key:
            continue
        found = True
        if condition is None or _meets(_unquoted(entry[2]), condition):
            lines[index] = entry[1] + value + line[len(line.rstrip("\r\n")) :]
    if found or condition is not None:
        return
    addition = f"{key}={value}{newline}"
    if last_line is not None:
        if not lines[last_line].endswith(("\n", "\r")):
            lines[last_line] += newline
        lines.insert(last_line + 1, addition)
    elif section == "":
        lines.insert(0, addition)
    else:
        if lines and not lines[-1].endswith(("\n", "\r")):
            lines[-1] += newline
        if any(line.strip() for line in lines):
            lines.append(newline)
        lines += [f"[{section}]{newline}", addition]


def edit_ini(text: str, replacements: Iterable[Replacement]) -> str:
    lines = LINE.findall(text)
    newline = _newline(text)
    for replacement in replacements:
        _edit_ini_once(lines, replacement, newline)
    return "".join(lines)


# -- XML ----------------------------------------------------------------------------------------


def _children(element: ET.Element, tag: str) -> list[ET.Element]:
    return [child for child in element if isinstance(child.tag, str) and tag in ("*", child.tag)]


def _xml_set(element: ET.Element, value: str, condition: str | None) -> None:
    attribute = XML_ATTRIBUTE.fullmatch(value)
    if attribute:
        name, text = attribute.groups()
        if condition is None or _meets(element.get(name), condition):
            element.set(name, text)
    elif condition is None or _meets((element.text or "").strip(), condition):
        element.text = value


def edit_xml(text: str, replacements: Iterable[Replacement]) -> str:
    if re.search(r"<!DOCTYPE|<!ENTITY", text, re.IGNORECASE):
        raise ConfigProblem("it declares a DOCTYPE, which rewriting it would lose")
    root: ET.Element | None = None
    if text.strip():
        builder = ET.TreeBuilder(insert_comments=True, insert_pis=True)
        parser = ET.XMLParser(target=builder)  # noqa: S314 - no DTD (refused above)
        try:
            root = ET.fromstring(text, parser=parser)  # noqa: S314
        except ET.ParseError as error:
            raise ConfigProblem(f"it is not XML ({error})") from None
    for replacement in replacements:
        parts = replacement.match.split(".")
        bad = next((part for part in parts if not XML_NAME.fullmatch(part)), None)
        if bad is not None:
            raise ConfigProblem(f"{replacement.match!r} names no element ({bad!r})")
        condition = _condition(replacement)
        if root is None:
            if parts[0] == "*" or condition is not None:
                continue
            root = ET.Element(parts[0])
        if root.tag.startswith("{"):
            raise ConfigProblem("it uses XML namespaces, which are not edited")
        if parts[0] not in ("*", root.tag):
            raise ConfigProblem(f"its root element is <{root.tag}>, not <{parts[0]}>")
        if "*" not in parts and condition is None:
            element = root
            for tag in parts[1:]:
                found = _children(element, tag)
                element = found[0] if found else ET.SubElement(element, tag)
        targets = [root]
        for tag in parts[1:]:
            targets = [child for element in targets for child in _children(element, tag)]
        for element in targets:
            _xml_set(element, as_text(replacement.value), condition)
    if root is None:
        return text
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


EDITORS: dict[str, Callable[[str, Iterable[Replacement]], str]] = {
    "properties": edit_properties,
    "file": edit_file,
    "yaml": edit_yaml,
    "json": edit_json,
    "ini": edit_ini,
    "xml": edit_xml,
}


def edit(parser: str, text: str, replacements: Iterable[Replacement]) -> str:
    """``text`` with ``replacements`` made; ``ConfigProblem`` when it cannot be."""
    try:
        return EDITORS[parser](text, replacements)
    except RecursionError:
        raise ConfigProblem("it is nested too deeply") from None


# -- the server's files ---------------------------------------------------------------------------


def _make_parents(files: ServerFiles, path: str) -> None:
    parts = path.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        with contextlib.suppress(FileConflict):
            files.create_folder("/".join(parts[:depth]))


def apply_one(files: ServerFiles, config: ConfigFile, substitutions: dict[str, str]) -> None:
    """Edit one file (as the server's user: call through ``files.run``); ``ConfigProblem``
    says why it was left as it is."""
    replacements = [
        Replacement(item.match, render(item.value, substitutions), item.if_value)
        for item in config.replace
    ]
    try:
        current = files.read_text(config.file, max_bytes=MAX_FILE_BYTES)
    except NotFound:
        current = None
    except TooLarge:
        raise ConfigProblem(f"it is larger than {MAX_FILE_BYTES:,} bytes") from None
    except AgentError as error:
        raise ConfigProblem(error.message.rstrip(".")) from None
    if current is None and config.parser == "file":
        return  # no line to replace: nothing is made
    text = current["content"] if current else ""
    edited = edit(config.parser, text, replacements)
    # Unchanged; or missing and nothing put in it (each edit had an if_value): left alone.
    if edited == text or (current is None and edited == edit(config.parser, "", [])):
        return
    if len(edited.encode()) > MAX_FILE_BYTES:
        raise ConfigProblem(f"it would be larger than {MAX_FILE_BYTES:,} bytes")
    try:
        if current is None:
            _make_parents(files, config.file)
        files.write_text(config.file, edited, if_match=current["version"] if current else None)
    except AgentError as error:
        raise ConfigProblem(error.message.rstrip(".")) from None


def apply(
    files: ServerFiles, configs: Iterable[ConfigFile], substitutions: dict[str, str]
) -> list[str]:
    """Every file's edits; the console lines of those left as they were."""
    problems = []
    for config in configs:
        try:
            files.run(apply_one, files, config, substitutions)
        except ConfigProblem as problem:
            problems.append(f"The configuration file {config.file} was left unchanged: {problem}.")
    return problems
