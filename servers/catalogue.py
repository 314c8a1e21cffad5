"""The catalogue as data: each game is a folder of ``servers/catalogue/<slug>/`` holding a
manifest, ``game.toml``, and the shell scripts it names (``install.sh``, ``start.sh``).

A manifest is TOML (read with the standard library's ``tomllib``: comments, multi-line values
and no dependency; a script stays a file of its own, so shellcheck and an editor read it as
shell). Its keys (README, "Catalogue")::

    name = "Minecraft: Java Edition"    # shown to customers
    slug = "minecraft-java"             # the folder's name
    default_port = 25565

    [template]                          # what the node agent reads (agent/PROTOCOL.md)
    install_script = { file = "install.sh" }   # any text key: inline, or a file beside it
    start_command = { file = "start.sh" }
    ready_pattern = 'Done \\('
    ...

    [[variables]]                       # the settings a server takes, one table each
    key = "MAX_PLAYERS"
    ...

A script file may include the shell the games share: a line ``# include: ../_shared/<name>.sh``
stands for the text of that file of the catalogue's ``_shared/`` folder (``SHARED_DIR``), so the
template holds the expanded script, as if it had been written out. Only files directly in
``_shared/`` are included, and they include nothing themselves; an include that names another
file, or one that is missing, is a problem of the manifest like any other.
``expand_includes`` also tells where each line came from (``scripts/shellcheck_catalogue.py``
reports a finding at the file and line it is in). ``_shared/`` holds no manifest, so it is no
game.

``load_game`` reads one folder and returns the entry a ``Game`` row holds (``name``,
``default_port``, ``template``, ``variables``), or raises ``ManifestError`` listing every
problem as ``<file>: <key path>: <problem>``. The rules on the values are the ones
``Game.clean`` applies (``servers.game_checks``), so a manifest loads exactly when staff could
save the same game in admin or the staff API.

Adding a template key is one line in ``TEMPLATE_FIELDS`` (with the key in
``servers.game_templates.TEMPLATE_KEYS`` when every game has it, else in
``servers.game_checks.OPTIONAL_TEMPLATE_KEYS``); a top-level key, one line in ``GAME_FIELDS``.

Standard library only (and the plain-data checks of ``servers.game_checks``).
"""

import re
import tomllib
from pathlib import Path
from typing import Any, NamedTuple

from servers.game_checks import template_problems, variables_problems

CATALOGUE_DIR = Path(__file__).resolve().parent / "catalogue"
MANIFEST = "game.toml"
MAX_SCRIPT_BYTES = 64 * 1024
SHARED_DIR = "_shared"  # beside the game folders: the shell pieces their scripts include
INCLUDE = re.compile(r"# include: (.*)\n?")  # a whole line of a script file

# key: (the type its value has, required). The order is the order of the rendered template
# (a node receives it as JSON in this order). Text keys may name a file instead: { file = "x" }.
TEMPLATE_FIELDS: dict[str, tuple[type, bool]] = {
    "install_script": (str, True),
    "start_command": (str, True),
    "ready_pattern": (str, True),
    "stop_command": (str, True),
    "stop_signal": (str, True),
    "stop_timeout_seconds": (int, True),
    "ready_timeout_seconds": (int, True),
    "backup_commands": (dict, True),
    "ports": (list, False),  # [[template.ports]] name, protocol, offset?, description: named ports
    "query": (dict, False),  # [template.query] protocol, port: how the agent asks for players
    "install_shell": (str, False),  # "sh" (the default) or "bash": the install script's shell
    "config_files": (list, False),  # [[template.config_files]]: edits made before each start
}
# Top-level keys besides the template and the variables, in the entry's order.
GAME_FIELDS: dict[str, tuple[type, bool]] = {
    "name": (str, True),
    "default_port": (int, True),
}
# A file's text is taken as it is, but a command's final newline (an editor adds one) is not
# part of the command the agent runs.
STRIP_FINAL_NEWLINE = frozenset({"start_command", "stop_command"})
TYPE_NAMES = {str: "text", int: "an integer", dict: "a table", list: "a list", bool: "true/false"}


class ManifestError(ValueError):
    """A manifest that does not load; ``problems`` are its lines."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def _is(value: Any, kind: type) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _fields(
    data: dict,
    fields: dict[str, tuple[type, bool]],
    where: str,
    problems: list[str],
    reported: frozenset[str] = frozenset(),
) -> dict:
    """The values of ``fields`` found in ``data``, in ``fields``' order; problems noted (none
    more for the keys already ``reported``)."""
    found = {}
    for key, (kind, required) in fields.items():
        path = f"{where}{key}"
        if key not in data:
            if required and key not in reported:
                problems.append(f"{path}: is required.")
            continue
        if not _is(data[key], kind):
            problems.append(f"{path}: is {TYPE_NAMES[kind]}, not {data[key]!r}.")
            continue
        found[key] = data[key]
    return found


class Line(NamedTuple):
    """A line of an expanded script: the file it is in, its number there, its text."""

    file: Path
    number: int
    text: str


def _text(target: Path) -> str:
    """The text of a script file; a ``ValueError`` names what is wrong with it."""
    data = target.read_bytes()
    if len(data) > MAX_SCRIPT_BYTES:
        raise ValueError(f"is larger than {MAX_SCRIPT_BYTES} bytes")
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise ValueError("is not UTF-8 text") from None


def _lines(file: Path, text: str) -> list[Line]:
    return [Line(file, number, line) for number, line in enumerate(text.splitlines(True), 1)]


def expand_includes(script: Path, text: str) -> tuple[list[Line], list[str]]:
    """The lines of ``text`` (the script file ``script`` of a game folder) with each include
    line replaced by the lines of the shared file it names, and the problems of its includes
    (``line <n> includes '<path>', which …``)."""
    shared = (script.parent.parent / SHARED_DIR).resolve()
    lines: list[Line] = []
    problems = []
    for line in _lines(script, text):
        include = INCLUDE.fullmatch(line.text)
        if include is None:
            lines.append(line)
            continue
        reference = include[1]
        target = (script.parent / reference).resolve()
        which = f"line {line.number} includes {reference!r}, which"
        if target.parent != shared:
            problems.append(f"{which} is outside the catalogue's {SHARED_DIR}/ folder.")
            continue
        if not target.is_file():
            problems.append(f"{which} is no file of the catalogue's {SHARED_DIR}/ folder.")
            continue
        try:
            included = _lines(target, _text(target))
        except ValueError as error:
            problems.append(f"{which} {error}.")
            continue
        if any(INCLUDE.fullmatch(piece.text) for piece in included):
            problems.append(f"{which} includes another file: shared files include nothing.")
            continue
        if line.text.endswith("\n") and included and not included[-1].text.endswith("\n"):
            included[-1] = included[-1]._replace(text=included[-1].text + "\n")
        lines += included
    return lines, problems


def _read_file(folder: Path, key: str, reference: Any, problems: list[str]) -> str | None:
    path = f"template.{key}"
    if set(reference) != {"file"} or not isinstance(reference["file"], str):
        problems.append(f'{path}: is text or {{ file = "name.sh" }}, not {reference!r}.')
        return None
    name = reference["file"]
    target = (folder / name).resolve()
    if target.parent != folder.resolve() or not target.is_file():
        problems.append(f"{path}.file: {name!r} is no file beside the manifest.")
        return None
    try:
        text = _text(target)
    except ValueError as error:
        problems.append(f"{path}.file: {name!r} {error}.")
        return None
    lines, include_problems = expand_includes(folder / name, text)
    if include_problems:
        problems += [f"{path}.file: {name!r} {problem}" for problem in include_problems]
        return None
    text = "".join(line.text for line in lines)
    if len(text.encode()) > MAX_SCRIPT_BYTES:
        problems.append(f"{path}.file: {name!r} is larger than {MAX_SCRIPT_BYTES} bytes.")
        return None
    if key in STRIP_FINAL_NEWLINE and text.endswith("\n"):
        text = text[:-1]
    return text


def check_manifest(data: dict, folder: Path) -> tuple[dict, list[str]]:
    """The entry ``data`` (a parsed manifest in ``folder``) describes, and its problems as
    ``<key path>: <problem>`` lines (none: it is fine)."""
    problems: list[str] = []
    known = {*GAME_FIELDS, "slug", "template", "variables"}
    problems += [f"{key}: is not a manifest key." for key in sorted(set(data) - known)]
    entry = _fields(data, GAME_FIELDS, "", problems)
    slug = data.get("slug")
    if slug != folder.name:
        problems.append(f"slug: is the folder's name, {folder.name!r}, not {slug!r}.")
    port = entry.get("default_port")
    if port is not None and not 1 <= port <= 65535:
        problems.append(f"default_port: is a port, 1 to 65535, not {port}.")

    template = data.get("template")
    if not isinstance(template, dict):
        problems.append("template: is required, a table.")
        template = {}
    problems += [
        f"template.{key}: is not a template key."
        for key in sorted(set(template) - set(TEMPLATE_FIELDS))
    ]
    resolved, unread = {}, set()
    for key, value in template.items():
        if isinstance(value, dict) and TEMPLATE_FIELDS.get(key, (dict,))[0] is str:
            text = _read_file(folder, key, value, problems)
            if text is None:
                unread.add(key)
                continue
            value = text
        resolved[key] = value
    entry["template"] = _fields(resolved, TEMPLATE_FIELDS, "template.", problems, frozenset(unread))

    variables = data.get("variables", [])
    if not isinstance(variables, list):
        problems.append("variables: is a list of tables ([[variables]]).")
        variables = []
    entry["variables"] = variables
    # The rules on values Game.clean applies (servers.game_checks), under their key paths.
    problems += [f"variables: {problem}" for problem in variables_problems(variables)]
    keys = {v["key"] for v in variables if isinstance(v, dict) and isinstance(v.get("key"), str)}
    if not [p for p in problems if p.startswith("template.")]:
        problems += [f"template: {problem}" for problem in template_problems(resolved, keys)]
    return entry, problems


def load_game(folder: Path) -> dict:
    """The entry of the game in ``folder`` (name, default port, template, variables), or
    ``ManifestError`` naming the file, the key path and the problem of each mistake."""
    manifest = folder / MANIFEST
    try:
        data = tomllib.loads(manifest.read_text())
    except FileNotFoundError:
        raise ManifestError([f"{manifest}: there is no manifest."]) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ManifestError([f"{manifest}: is not TOML ({error})."]) from None
    entry, problems = check_manifest(data, folder)
    if problems:
        raise ManifestError([f"{manifest}: {problem}" for problem in problems])
    return entry


def game_folders(root: Path = CATALOGUE_DIR) -> list[Path]:
    """The catalogue's game folders (each with a manifest), by slug."""
    return sorted(path.parent for path in root.glob(f"*/{MANIFEST}"))


def load_catalogue(root: Path = CATALOGUE_DIR) -> dict[str, dict]:
    """Every game of the catalogue by slug; ``ManifestError`` lists the problems of all."""
    games, problems = {}, []
    for folder in game_folders(root):
        try:
            games[folder.name] = load_game(folder)
        except ManifestError as error:
            problems += error.problems
    if problems:
        raise ManifestError(problems)
    return games


def template_for(slug: str, root: Path = CATALOGUE_DIR) -> dict | None:
    """The entry of that game (name, default port, template, variables), read afresh; or None
    when the catalogue has no such game."""
    folder = root / slug
    if not slug or "/" in slug or not (folder / MANIFEST).is_file():
        return None
    return load_game(folder)
