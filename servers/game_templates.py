"""How a node agent installs, starts and stops the dedicated server of each game of the catalogue.

``TEMPLATES`` maps a game's slug to ``{"name", "default_port", "template", "variables"}``. The
``template`` is what the agent's protocol calls a server's template (agent/PROTOCOL.md, "A
server's spec"); ``variables`` are the settings a server of that game takes, in the catalogue's
format (``servers.services.validation.validate_variables``), keeping the keys the catalogue
already had.

How the agent uses a template, and what these rely on:

- ``{{KEY}}`` is replaced by the value of a variable or a built-in (``SERVER_IP``,
  ``SERVER_PORT``, ``SERVER_MEMORY`` in MB, ``SERVER_ID``, ``AGENT_WORKLOADS``), **shell-quoted**.
  A placeholder therefore only ever stands as a whole shell word or as a variable assignment's
  value (``name={{SERVER_NAME}}``), never inside quotes, where the quotes would become part of
  the value; the scripts use the shell variable from there on.
- The install script runs with ``/bin/sh`` in the server's directory, as an unprivileged user:
  POSIX sh with curl, tar, unzip, sed, awk; SteamCMD is fetched into ``./steamcmd``, and ``HOME``
  is the server's directory, as in a Pterodactyl container, so Steam's files stay with the
  server. Booleans are tested as ``true``/``True``/``1`` whichever way the agent spells them.
- The start command is a ``sh -c`` script run in the server's directory. It first writes the
  settings that come from variables into the game's own configuration (the way Pterodactyl's
  configuration parsers do at every boot), then replaces itself with the server (``exec``), so
  that the process the agent supervises, signals and writes the stop command to is the game.
  (7 Days to Die, whose graceful stop goes through its telnet console, is the exception: the
  shell stays, and turns the stop signal into that.) The agent sends the stop signal to the
  whole process group. Games that only log to a file get that
  file followed onto standard output until the server's pid (the shell's, kept by ``exec``) is
  gone.
- A server is given one port. Games that need more listen on the next ports, as most of them do
  on their own (Valheim port+1, Arma port+1…+4); the extra ones these templates set (Steam query,
  RCON, telnet, reliable messaging) are fixed offsets from the game port, noted per game.
- Windows-only dedicated servers (ARK: Survival Ascended, Conan Exiles, Enshrouded, V Rising,
  Space Engineers) run under Wine in a prefix inside the server's directory, as Pterodactyl's
  eggs do (whose Wine image also provides a virtual X display; a node without one must give
  ``DISPLAY`` to the games that want it).

This module is plain data and imports only the standard library.
"""

import copy

BUILT_INS = frozenset({"SERVER_IP", "SERVER_PORT", "SERVER_MEMORY", "SERVER_ID", "AGENT_WORKLOADS"})

TEMPLATE_KEYS = frozenset(
    {
        "install_script",
        "start_command",
        "ready_pattern",
        "stop_command",
        "stop_signal",
        "stop_timeout_seconds",
        "ready_timeout_seconds",
        "backup_commands",
    }
)
# Console commands around a backup's archive (sent in the backup call, not in the spec):
# "before" while the server runs, "after" once the archive is written (also when it failed).
NO_BACKUP_COMMANDS: dict[str, list[str]] = {"before": [], "after": []}


# --- Variables ------------------------------------------------------------------------------


def _integer(key: str, name: str, default: int, low: int, high: int) -> dict:
    return {
        "key": key,
        "name": name,
        "type": "integer",
        "default": default,
        "min": low,
        "max": high,
    }


def _string(
    key: str,
    name: str,
    default: str | None = "",
    *,
    max_length: int = 64,
    min_length: int | None = None,
    required: bool = False,
) -> dict:
    variable: dict = {"key": key, "name": name, "type": "string"}
    if default is not None:
        variable["default"] = default
    if required:
        variable["required"] = True
    if min_length is not None:
        variable["min_length"] = min_length
    variable["max_length"] = max_length
    return variable


def _boolean(key: str, name: str, default: bool) -> dict:
    return {"key": key, "name": name, "type": "boolean", "default": default}


def _enum(key: str, name: str, default: str, choices: list[str]) -> dict:
    return {"key": key, "name": name, "type": "enum", "default": default, "choices": choices}


def _max_players(default: int, high: int, low: int = 1) -> dict:
    return _integer("MAX_PLAYERS", "Max players", default, low, high)


def _server_name(default: str, max_length: int = 64) -> dict:
    return _string("SERVER_NAME", "Server name in the browser", default, max_length=max_length)


EULA = {
    "key": "EULA",
    "name": "Accept the Minecraft EULA",
    "type": "boolean",
    "required": True,
    "must_be": True,
}
SERVER_PASSWORD = _string("SERVER_PASSWORD", "Password to join (empty: none)", "")
RCON_PASSWORD = _string("RCON_PASSWORD", "RCON password (empty: RCON off)", "")
GSLT = _string(
    "GSLT", "Steam game server login token (empty: anonymous, not listed)", "", max_length=32
)
STEAM_USER = _string(
    "STEAM_USER", "Steam account to download the server with", None, max_length=64, required=True
)
STEAM_PASS = _string(
    "STEAM_PASS", "Password of that Steam account", None, max_length=128, required=True
)


# --- Shell helpers the scripts share ---------------------------------------------------------

_ONELINE = r"""oneline() {  # $1 on one line: settings files take a value a line
    printf '%s' "$1" | tr '\r\n' '  '
}"""

_IS_TRUE = r"""is_true() {  # a boolean variable, however the agent spells it
    case "$1" in true | True | TRUE | 1 | yes) return 0 ;; *) return 1 ;; esac
}"""

_SETPROP = r"""setprop() {  # file key value: key=value in a .properties file, replaced or added
    touch "$1"
    grep -v "^$2=" "$1" > "$1.new" || true
    printf '%s=%s\n' "$2" "$(oneline "$3")" >> "$1.new"
    mv "$1.new" "$1"
}"""

_JSON = r"""json() {  # $1 as a JSON string
    printf '"%s"' "$(oneline "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')"
}"""

_SED_ESCAPE = r"""sedesc() {  # $1 safe as the replacement of a sed s|||
    oneline "$1" | sed -e 's/[\\&|]/\\&/g'
}"""

_INISET = r"""iniset() {  # file section key value: key=value in [section] of an INI file
    mkdir -p "$(dirname "$1")"
    touch "$1"
    INI_SECTION="[$2]" INI_KEY="$3" INI_VALUE="$(oneline "$4")" awk '
        function put() { print ENVIRON["INI_KEY"] "=" ENVIRON["INI_VALUE"]; done = 1 }
        function flush() { printf "%s", blanks; blanks = "" }
        {
            line = $0
            sub(/\r$/, "", line)
            if (line ~ /^[ \t]*$/) {
                blanks = blanks $0 "\n"
                next
            }
            if (line ~ /^\[.*\]$/) {
                if (inside && !done) put()
                inside = (line == ENVIRON["INI_SECTION"])
            } else if (inside && index(line, ENVIRON["INI_KEY"] "=") == 1) {
                flush()
                if (!done) put()
                next
            }
            flush()
            print
        }
        END {
            if (inside && !done) put()
            flush()
            if (!done) {
                if (NR > 0) print ""
                print ENVIRON["INI_SECTION"]
                put()
            }
        }
    ' "$1" > "$1.new"
    mv "$1.new" "$1"
}"""


def _follow_log(path: str) -> str:
    """Shell lines that copy a game's log file onto standard output while the server runs.

    The server takes over the shell's pid (``exec``); the follower stops once that pid is gone
    or a zombie (whoever reaps it may wait for the output to end first).
    """
    directory = path.rsplit("/", 1)[0]
    return (
        f"# The game logs to {path} only: follow it for the console and the ready line.\n"
        f"mkdir -p {directory}\n"
        f": > {path}\n"
        f"tail -n +1 -F {path} 2>/dev/null &\n"
        "follower=$!\n"
        "(\n"
        "    while [ -r /proc/$$/stat ] \\\n"
        "        && [ \"$(sed 's/.*) //' /proc/$$/stat | cut -d ' ' -f 1)\" != Z ]; do\n"
        "        sleep 1\n"
        "    done\n"
        '    kill "$follower"\n'
        ") > /dev/null 2>&1 &"
    )


_STEAM_START = 'export HOME="$PWD"'
_WINE_START = (
    "# A Windows-only server: it runs under Wine, in the prefix the install made.\n"
    'export HOME="$PWD" WINEPREFIX="$PWD/.wine" WINEARCH=win64 WINEDEBUG=-all'
)


def _script(*parts: str) -> str:
    return "\n".join(parts) + "\n"


def _steamcmd_install(
    title: str,
    app_id: int,
    *,
    account: bool = False,
    windows: bool = False,
    after: str = "",
) -> str:
    """An install script: SteamCMD installs (or updates and validates) ``app_id`` here."""
    if account:
        login = (
            "# This dedicated server cannot be downloaded anonymously: it takes a Steam account\n"
            "# (one without Steam Guard codes, or one that has logged in here once already).\n"
            "steam_user={{STEAM_USER}}\n"
            "steam_pass={{STEAM_PASS}}\n"
            'set -- +login "$steam_user" "$steam_pass"'
        )
    else:
        login = "set -- +login anonymous"
    platform = ""
    if windows:
        platform = (
            "# Windows-only dedicated server: SteamCMD fetches the Windows build; it runs under"
            " Wine.\n"
            'set -- +@sSteamCmdForcePlatformType windows "$@"\n'
        )
    wine = ""
    if windows:
        wine = (
            "\n# The Wine prefix the server runs in, inside the server's directory.\n"
            'export WINEPREFIX="$server_dir/.wine" WINEARCH=win64 WINEDEBUG=-all\n'
            "wineboot --init\n"
            "wineserver -w\n"
        )
    body = (
        "#!/bin/sh\n"
        f"# {title}: the dedicated server (Steam app {app_id}) through SteamCMD.\n"
        "set -eu\n"
        "server_dir=$(pwd)\n"
        'export HOME="$server_dir"  # SteamCMD keeps its state in $HOME/Steam: here\n'
        f"app_id={app_id}\n"
        f"{login}\n"
        f"{platform}"
        "mkdir -p steamcmd steamapps\n"
        "if [ ! -x steamcmd/steamcmd.sh ]; then\n"
        "    curl -fsSL https://steamcdn-a.akamaihd.net/client/installer/steamcmd_linux.tar.gz \\\n"
        "        | tar -xzf - -C steamcmd\n"
        "fi\n"
        "# SteamCMD updates itself on its first run and sometimes gives up half way: try again.\n"
        "attempt=1\n"
        'until ./steamcmd/steamcmd.sh +force_install_dir "$server_dir" "$@" \\\n'
        '    +app_update "$app_id" validate +quit; do\n'
        '    if [ "$attempt" -ge 3 ]; then\n'
        '        echo "SteamCMD failed $attempt times." >&2\n'
        "        exit 1\n"
        "    fi\n"
        "    attempt=$((attempt + 1))\n"
        "done\n"
        '# SteamCMD can end "successfully" without installing anything (a refused login, say).\n'
        'if [ ! -f "steamapps/appmanifest_$app_id.acf" ]; then\n'
        '    echo "SteamCMD did not install app $app_id." >&2\n'
        "    exit 1\n"
        "fi\n"
        "# The Steam API of the server loads these from $HOME/.steam.\n"
        "mkdir -p .steam/sdk32 .steam/sdk64\n"
        "cp steamcmd/linux32/steamclient.so .steam/sdk32/steamclient.so\n"
        "cp steamcmd/linux64/steamclient.so .steam/sdk64/steamclient.so\n"
        f"{wine}"
    )
    if after:
        body += "\n" + after.rstrip("\n") + "\n"
    return body


def _template(
    install_script: str,
    start_command: str,
    ready_pattern: str,
    *,
    stop_command: str = "",
    stop_signal: str = "SIGTERM",
    stop_timeout: int = 60,
    ready_timeout: int = 300,
    backup_commands: dict[str, list[str]] | None = None,
) -> dict:
    return {
        "install_script": install_script,
        "start_command": start_command.strip("\n"),
        "ready_pattern": ready_pattern,
        "stop_command": stop_command,
        "stop_signal": stop_signal,
        "stop_timeout_seconds": stop_timeout,
        "ready_timeout_seconds": ready_timeout,
        "backup_commands": copy.deepcopy(backup_commands or NO_BACKUP_COMMANDS),
    }


# --- Minecraft: Java Edition -----------------------------------------------------------------

_MINECRAFT_JAVA_INSTALL = r"""#!/bin/sh
# Minecraft: Java Edition: Mojang's vanilla server jar of the chosen version, from the version
# manifest (piston-meta), checked against its SHA-1. eula.txt only when the owner accepted it.
set -eu
version={{VERSION}}
eula={{EULA}}
# The JSON, blanks removed (ids, hashes and URLs have none), one object a line, for sed.
flatten() {
    tr -d ' \t\r\n' | tr '{}' '\n\n'
}
curl -fsSL https://piston-meta.mojang.com/mc/game/version_manifest_v2.json | flatten > .manifest
case "$version" in
    latest | "") version=$(sed -n 's/.*"release":"\([^"]*\)".*/\1/p' .manifest | head -n 1) ;;
    snapshot) version=$(sed -n 's/.*"snapshot":"\([^"]*\)".*/\1/p' .manifest | head -n 1) ;;
esac
version_url=$(grep -F "\"id\":\"$version\"," .manifest | sed -n 's/.*"url":"\([^"]*\)".*/\1/p' \
    | head -n 1)
rm -f .manifest
if [ -z "$version" ] || [ -z "$version_url" ]; then
    echo "Minecraft version ${version:-?} is not in Mojang's version manifest." >&2
    exit 1
fi
server=$(curl -fsSL "$version_url" | tr -d ' \t\r\n' | sed -n 's/.*"server":{\([^}]*\)}.*/\1/p')
jar_url=$(printf '%s\n' "$server" | sed -n 's/.*"url":"\([^"]*\)".*/\1/p')
jar_sha1=$(printf '%s\n' "$server" | sed -n 's/.*"sha1":"\([0-9a-f]*\)".*/\1/p')
if [ -z "$jar_url" ] || [ -z "$jar_sha1" ]; then
    echo "Minecraft $version has no server download." >&2
    exit 1
fi
echo "Downloading the Minecraft $version server."
curl -fsSL -o server.jar.part "$jar_url"
echo "$jar_sha1  server.jar.part" | sha1sum -c - > /dev/null
mv server.jar.part server.jar
case "$eula" in
    true | True | 1)
        printf '%s\n' '# The server owner accepted https://aka.ms/MinecraftEULA' 'eula=true' \
            > eula.txt
        ;;
    *)
        echo "The Minecraft EULA is not accepted: no eula.txt, the server will refuse to start."
        ;;
esac
"""

_MINECRAFT_JAVA_START = _script(
    _ONELINE,
    _SETPROP,
    "setprop server.properties server-ip {{SERVER_IP}}",
    "setprop server.properties server-port {{SERVER_PORT}}",
    "setprop server.properties query.port {{SERVER_PORT}}",
    "setprop server.properties max-players {{MAX_PLAYERS}}",
    "setprop server.properties difficulty {{DIFFICULTY}}",
    "exec java -Xms128M -Xmx{{SERVER_MEMORY}}M -jar server.jar nogui",
)

# --- Minecraft: Bedrock Edition --------------------------------------------------------------

_MINECRAFT_BEDROCK_INSTALL = r"""#!/bin/sh
# Minecraft: Bedrock Edition: Mojang's bedrock-server zip for Linux, the newest or the chosen
# version. An update keeps the worlds, server.properties, permissions.json and allowlist.json.
set -eu
version={{VERSION}}
eula={{EULA}}
case "$eula" in
    true | True | 1) ;;
    *)
        echo "Downloading the Bedrock server needs the Minecraft EULA accepted." >&2
        exit 1
        ;;
esac
# Mojang's download servers refuse curl's own user agent.
agent='Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)'
links=https://net-secondary.web.minecraft-services.net/api/v1.0/download/links
if [ -z "$version" ] || [ "$version" = latest ]; then
    url=$(curl -fsSL -A "$agent" "$links" \
        | tr -d ' \t\r\n' | tr '{}' '\n\n' | grep -F '"downloadType":"serverBedrockLinux"' \
        | sed -n 's/.*"downloadUrl":"\([^"]*\)".*/\1/p' | head -n 1)
else
    url="https://www.minecraft.net/bedrockdedicatedserver/bin-linux/bedrock-server-$version.zip"
fi
if [ -z "$url" ]; then
    echo "Could not find the Bedrock server's download." >&2
    exit 1
fi
echo "Downloading $url"
curl -fsSL -A "$agent" -o bedrock-server.zip "$url"
rm -rf .bedrock-new
mkdir .bedrock-new
unzip -q bedrock-server.zip -d .bedrock-new
for kept in server.properties permissions.json allowlist.json; do
    if [ -f "$kept" ]; then
        rm -f ".bedrock-new/$kept"
    fi
done
cp -R .bedrock-new/. .
rm -rf .bedrock-new bedrock-server.zip
chmod +x bedrock_server
"""

_MINECRAFT_BEDROCK_START = _script(
    _ONELINE,
    _SETPROP,
    "port={{SERVER_PORT}}",
    "setprop server.properties server-name {{SERVER_NAME}}",
    "setprop server.properties gamemode {{GAMEMODE}}",
    "setprop server.properties max-players {{MAX_PLAYERS}}",
    'setprop server.properties server-port "$port"',
    "# Bedrock also listens on IPv6, on the next port.",
    'setprop server.properties server-portv6 "$((port + 1))"',
    "export LD_LIBRARY_PATH=.",
    "exec ./bedrock_server",
)

# --- Rust ------------------------------------------------------------------------------------

_RUST_START = r"""export HOME="$PWD"
export LD_LIBRARY_PATH="$PWD/RustDedicated_Data/Plugins/x86_64:${LD_LIBRARY_PATH:-}"
port={{SERVER_PORT}}
# Game port (UDP), then Steam query on port+1, RCON (WebSocket) on port+2, Rust+ on port+3.
exec ./RustDedicated -batchmode -nographics \
    +server.ip {{SERVER_IP}} +server.port "$port" +server.queryport "$((port + 1))" \
    +rcon.ip {{SERVER_IP}} +rcon.port "$((port + 2))" +rcon.web 1 +rcon.password {{RCON_PASSWORD}} \
    +app.port "$((port + 3))" +server.identity main +server.hostname {{SERVER_NAME}} \
    +server.level {{LEVEL}} +server.seed {{SEED}} +server.worldsize {{WORLD_SIZE}} \
    +server.maxplayers {{MAX_PLAYERS}} +server.saveinterval 300
"""

# --- Valheim ---------------------------------------------------------------------------------

_VALHEIM_START = _script(
    _IS_TRUE,
    'export HOME="$PWD" SteamAppId=892970 LD_LIBRARY_PATH="$PWD/linux64:${LD_LIBRARY_PATH:-}"',
    "public=0",
    "if is_true {{PUBLIC}}; then public=1; fi",
    "set --",
    "if is_true {{CROSSPLAY}}; then set -- -crossplay; fi",
    "# Valheim also listens on port+1 (Steam query).",
    "exec ./valheim_server.x86_64 -nographics -batchmode -name {{SERVER_NAME}} \\",
    "    -port {{SERVER_PORT}} -world {{WORLD_NAME}} -password {{SERVER_PASSWORD}} \\",
    '    -public "$public" -savedir "$PWD/saves" "$@"',
)

# --- Counter-Strike 2 ------------------------------------------------------------------------

_CS2_START = r"""export HOME="$PWD"
export LD_LIBRARY_PATH="$PWD/game/bin/linuxsteamrt64:${LD_LIBRARY_PATH:-}"
case {{GAME_MODE}} in
    competitive) game_type=0 game_mode=1 ;;
    wingman) game_type=0 game_mode=2 ;;
    arms_race) game_type=1 game_mode=0 ;;
    deathmatch) game_type=1 game_mode=2 ;;
    *) game_type=0 game_mode=0 ;;
esac
exec ./game/bin/linuxsteamrt64/cs2 -dedicated -console -usercon -ip {{SERVER_IP}} \
    -port {{SERVER_PORT}} -maxplayers {{MAX_PLAYERS}} +game_type "$game_type" \
    +game_mode "$game_mode" +map {{MAP}} +hostname {{SERVER_NAME}} \
    +sv_password {{SERVER_PASSWORD}} +rcon_password {{RCON_PASSWORD}} +sv_setsteamaccount {{GSLT}}
"""

# --- Terraria --------------------------------------------------------------------------------

_TERRARIA_INSTALL = r"""#!/bin/sh
# Terraria: Re-Logic's dedicated server zip (terraria.org), the newest or the chosen version.
set -eu
version={{VERSION}}
if [ -z "$version" ] || [ "$version" = latest ]; then
    # The names of the server zips, newest first: ["terraria-server-1449.zip", ...]
    file=$(curl -fsSL https://terraria.org/api/get/dedicated-servers-names \
        | tr -d '[] "\r\n' | tr ',' '\n' | head -n 1)
else
    file="terraria-server-$(printf '%s' "$version" | tr -d .).zip"
fi
case "$file" in
    terraria-server-*.zip) ;;
    *)
        echo "Could not find the Terraria server's download." >&2
        exit 1
        ;;
esac
number=${file#terraria-server-}
number=${number%.zip}
echo "Downloading $file"
curl -fsSL -o terraria-server.zip "https://terraria.org/api/download/pc-dedicated-server/$file"
rm -rf .terraria
unzip -q terraria-server.zip -d .terraria
cp -R ".terraria/$number/Linux/." .
rm -rf .terraria terraria-server.zip
chmod +x TerrariaServer.bin.x86_64
mkdir -p worlds
"""

_TERRARIA_START = _script(
    _ONELINE,
    "world=$(oneline {{WORLD_NAME}})",
    "world_file=$(printf '%s' \"$world\" | tr -c 'A-Za-z0-9_-' '_')",
    "case {{WORLD_SIZE}} in small) size=1 ;; large) size=3 ;; *) size=2 ;; esac",
    "case {{DIFFICULTY}} in",
    "    expert) difficulty=1 ;;",
    "    master) difficulty=2 ;;",
    "    journey) difficulty=3 ;;",
    "    *) difficulty=0 ;;",
    "esac",
    "players={{MAX_PLAYERS}}",
    "port={{SERVER_PORT}}",
    "password=$(oneline {{SERVER_PASSWORD}})",
    "motd=$(oneline {{SERVER_NAME}})",
    "mkdir -p worlds",
    "# autocreate only applies while the world file does not exist yet.",
    'printf \'%s\\n\' "world=$PWD/worlds/$world_file.wld" "worldpath=$PWD/worlds" \\',
    '    "worldname=$world" "autocreate=$size" "difficulty=$difficulty" \\',
    '    "maxplayers=$players" "port=$port" "password=$password" "motd=$motd" \\',
    '    "secure=1" "upnp=0" > serverconfig.txt',
    "exec ./TerrariaServer.bin.x86_64 -config serverconfig.txt -ip {{SERVER_IP}}",
)

# --- ARK: Survival Evolved / Ascended ----------------------------------------------------------


def _ark_start(*, ascended: bool) -> str:
    platform = "WindowsServer" if ascended else "LinuxServer"
    settings = f"ShooterGame/Saved/Config/{platform}/GameUserSettings.ini"
    if ascended:
        launch = (
            "# BattlEye does not run under Wine. ASA needs no separate query port.\n"
            'exec wine ./ShooterGame/Binaries/Win64/ArkAscendedServer.exe "$url" \\\n'
            '    -WinLiveMaxPlayers="$players" -MultiHome={{SERVER_IP}} -NoBattlEye -servergamelog'
        )
        url = 'url="$map?listen?Port=$port?MaxPlayers=$players"'
    else:
        launch = (
            "# The game port and port+1 (raw UDP), Steam query on port+2.\n"
            'exec ./ShooterGame/Binaries/Linux/ShooterGameServer "$url" \\\n'
            "    -server -log -MultiHome={{SERVER_IP}}"
        )
        url = 'url="$map?listen?Port=$port?QueryPort=$((port + 2))?MaxPlayers=$players"'
    return _script(
        _WINE_START if ascended else _STEAM_START,
        _ONELINE,
        _INISET,
        "# Names and passwords go to GameUserSettings.ini: on the command line, ARK's option",
        "# string (Map?key=value?…) cannot hold spaces or question marks.",
        f"iniset {settings} SessionSettings SessionName {{{{SERVER_NAME}}}}",
        f"iniset {settings} ServerSettings ServerPassword {{{{SERVER_PASSWORD}}}}",
        f"iniset {settings} ServerSettings ServerAdminPassword {{{{ADMIN_PASSWORD}}}}",
        "map={{MAP}}",
        "port={{SERVER_PORT}}",
        "players={{MAX_PLAYERS}}",
        url,
        _follow_log("ShooterGame/Saved/Logs/ShooterGame.log"),
        launch,
    )


# --- Palworld --------------------------------------------------------------------------------

_PALWORLD_START = _script(
    _STEAM_START,
    _ONELINE,
    _IS_TRUE,
    _SED_ESCAPE,
    "settings=Pal/Saved/Config/LinuxServer/PalWorldSettings.ini",
    "mkdir -p Pal/Saved/Config/LinuxServer",
    'if ! grep -q "^OptionSettings=" "$settings" 2>/dev/null; then',
    "    if [ -f DefaultPalWorldSettings.ini ]; then",
    '        cp DefaultPalWorldSettings.ini "$settings"',
    "    else  # Palworld takes its defaults for the fields left out",
    "        printf '%s\\n' '[/Script/Pal.PalGameWorldSettings]' \\",
    '            \'OptionSettings=(ServerName="",ServerPassword="",AdminPassword="")\' \\',
    '            > "$settings"',
    "    fi",
    "fi",
    "palset() {  # field value: a text field of the OptionSettings=(…) line",
    '    value=$(sedesc "$2" | tr -d \'"\')',
    '    sed -i "s|\\([(,]$1=\\)\\"[^\\"]*\\"|\\1\\"$value\\"|" "$settings"',
    "}",
    "palset ServerName {{SERVER_NAME}}",
    "palset ServerPassword {{SERVER_PASSWORD}}",
    "palset AdminPassword {{ADMIN_PASSWORD}}",
    "port={{SERVER_PORT}}",
    "set --",
    "if is_true {{COMMUNITY}}; then set -- -publiclobby; fi",
    "# The game port (UDP), Steam query on port+1.",
    'exec ./Pal/Binaries/Linux/PalServer-Linux-Shipping Pal -port="$port" \\',
    '    -queryport="$((port + 1))" -players={{MAX_PLAYERS}} -useperfthreads \\',
    '    -NoAsyncLoadingThread -UseMultithreadForDS "$@"',
)

# --- Source engine games (Garry's Mod, Team Fortress 2) ----------------------------------------


def _srcds_start(game: str, *extra: str) -> str:
    return _script(
        _STEAM_START,
        f"exec ./srcds_run -game {game} -console -norestart -strictportbind \\",
        "    -ip {{SERVER_IP}} -port {{SERVER_PORT}} -maxplayers {{MAX_PLAYERS}} +map {{MAP}} \\",
        *extra,
        "    +hostname {{SERVER_NAME}} +sv_setsteamaccount {{GSLT}}",
    )


# --- Factorio --------------------------------------------------------------------------------

_FACTORIO_INSTALL = r"""#!/bin/sh
# Factorio: the headless server from factorio.com ("stable", "latest" or a version such as 2.0.28).
set -eu
version={{VERSION}}
echo "Downloading the Factorio headless server ($version)."
curl -fsSL -o factorio-headless.tar.xz "https://factorio.com/get-download/$version/headless/linux64"
tar -xJf factorio-headless.tar.xz --strip-components=1
rm -f factorio-headless.tar.xz
chmod +x bin/x64/factorio
mkdir -p saves
"""

_FACTORIO_START = _script(
    _ONELINE,
    _JSON,
    "name={{SERVER_NAME}}",
    "description={{SERVER_DESCRIPTION}}",
    "password={{GAME_PASSWORD}}",
    "user={{FACTORIO_USERNAME}}",
    "token={{FACTORIO_TOKEN}}",
    "players={{MAX_PLAYERS}}",
    "save=$(oneline {{SAVE_NAME}} | tr -c 'A-Za-z0-9_-' '_')",
    "# Listed on the public server browser only with a factorio.com account and its token.",
    "public=false",
    'if [ -n "$user" ] && [ -n "$token" ]; then public=true; fi',
    "{",
    "    printf '{\\n'",
    '    printf \'  "name": %s,\\n\' "$(json "$name")"',
    '    printf \'  "description": %s,\\n\' "$(json "$description")"',
    "    printf '  \"tags\": [],\\n'",
    '    printf \'  "max_players": %s,\\n\' "$players"',
    '    printf \'  "visibility": {"public": %s, "lan": true},\\n\' "$public"',
    '    printf \'  "username": %s,\\n\' "$(json "$user")"',
    '    printf \'  "token": %s,\\n\' "$(json "$token")"',
    '    printf \'  "game_password": %s,\\n\' "$(json "$password")"',
    "    printf '  \"require_user_verification\": true,\\n'",
    '    printf \'  "allow_commands": "admins-only",\\n\'',
    "    printf '  \"autosave_interval\": 10,\\n'",
    "    printf '  \"autosave_slots\": 5,\\n'",
    "    printf '  \"auto_pause\": true,\\n'",
    "    printf '  \"autosave_only_on_server\": true\\n'",
    "    printf '}\\n'",
    "} > server-settings.json",
    'if [ ! -f "saves/$save.zip" ]; then',
    '    ./bin/x64/factorio --create "saves/$save.zip"',
    "fi",
    "exec ./bin/x64/factorio --bind {{SERVER_IP}} --port {{SERVER_PORT}} \\",
    '    --server-settings server-settings.json --start-server "saves/$save.zip"',
)

# --- 7 Days to Die ---------------------------------------------------------------------------

_SEVEN_DAYS_START = r"""export HOME="$PWD" LD_LIBRARY_PATH="$PWD:${LD_LIBRARY_PATH:-}"
port={{SERVER_PORT}}
# The game on port (TCP and UDP) to port+2 (UDP); the console's telnet on TCP port+1, loopback
# only (no password). 7 Days to Die reads no commands from standard input, and a signal may
# cost it the world's last changes: the graceful stop is "shutdown" on the telnet console.
# The agent sends the stop signal (SIGUSR1) to the whole process group: the server ignores it,
# this shell, which stays, turns it into that "shutdown" (or SIGTERM when nc is missing).
telnet_port=$((port + 1))
pid=
shutdown() {
    pid=${pid:-$!}
    if [ -z "$pid" ]; then
        exit 143  # stopped before the server was started
    fi
    if ! { command -v nc > /dev/null 2>&1 \
        && printf 'shutdown\n' | nc -w 5 127.0.0.1 "$telnet_port" > /dev/null 2>&1; }; then
        kill -TERM "$pid" 2> /dev/null
    fi
}
trap shutdown USR1 INT TERM
(
    trap '' USR1
    exec ./7DaysToDieServer.x86_64 -quit -batchmode -nographics -dedicated \
        -configfile=serverconfig.xml -logfile /dev/stdout -ServerPort="$port" \
        -ServerName={{SERVER_NAME}} -ServerPassword={{SERVER_PASSWORD}} \
        -ServerMaxPlayerCount={{MAX_PLAYERS}} -GameDifficulty={{DIFFICULTY}} \
        -TelnetEnabled=true -TelnetPort="$telnet_port" -TelnetPassword=
) &
pid=$!
status=0
while kill -0 "$pid" 2> /dev/null; do
    wait "$pid"
    status=$?
done
exit "$status"
"""

# --- Project Zomboid -------------------------------------------------------------------------

_ZOMBOID_START = _script(
    _STEAM_START,
    _ONELINE,
    _SETPROP,
    "port={{SERVER_PORT}}",
    "memory={{SERVER_MEMORY}}",
    "# The JVM's heap: three quarters of the server's memory, the rest is the JVM's own.",
    "if [ -f ProjectZomboid64.json ]; then",
    '    sed -i "s/-Xmx[0-9]*[kKmMgG]/-Xmx$((memory * 3 / 4))m/" ProjectZomboid64.json',
    "fi",
    "settings=Zomboid/Server/main.ini",
    "mkdir -p Zomboid/Server",
    'setprop "$settings" PublicName {{SERVER_NAME}}',
    'setprop "$settings" MaxPlayers {{MAX_PLAYERS}}',
    'setprop "$settings" Password {{SERVER_PASSWORD}}',
    "# The game port, and port+1 for direct UDP connections.",
    'exec ./start-server.sh -cachedir="$PWD/Zomboid" -servername main -adminusername admin \\',
    '    -adminpassword {{ADMIN_PASSWORD}} -ip {{SERVER_IP}} -port "$port" \\',
    '    -udpport "$((port + 1))"',
)

# --- Satisfactory ----------------------------------------------------------------------------

_SATISFACTORY_START = _script(
    _STEAM_START,
    _ONELINE,
    _INISET,
    "iniset FactoryGame/Saved/Config/LinuxServer/Game.ini /Script/Engine.GameSession \\",
    "    MaxPlayers {{MAX_PLAYERS}}",
    "port={{SERVER_PORT}}",
    "# The game and its HTTPS API on port (UDP and TCP), reliable messaging on TCP port+1. The",
    "# server's name and admin password are set when it is claimed from the game.",
    'exec ./Engine/Binaries/Linux/FactoryServer-Linux-Shipping FactoryGame -Port="$port" \\',
    '    -ReliablePort="$((port + 1))" -multihome={{SERVER_IP}} -log -unattended',
)

# --- Enshrouded (Windows, Wine) --------------------------------------------------------------

_ENSHROUDED_START = _script(
    _WINE_START,
    _ONELINE,
    _JSON,
    "name={{SERVER_NAME}}",
    "password={{SERVER_PASSWORD}}",
    "ip={{SERVER_IP}}",
    "port={{SERVER_PORT}}",
    "players={{MAX_PLAYERS}}",
    "# The game port, the Steam query port on port+1.",
    "{",
    "    printf '{\\n'",
    '    printf \'  "name": %s,\\n\' "$(json "$name")"',
    '    printf \'  "saveDirectory": "./savegame",\\n\'',
    '    printf \'  "logDirectory": "./logs",\\n\'',
    '    printf \'  "ip": %s,\\n\' "$(json "$ip")"',
    '    printf \'  "gamePort": %s,\\n\' "$port"',
    '    printf \'  "queryPort": %s,\\n\' "$((port + 1))"',
    '    printf \'  "slotCount": %s,\\n\' "$players"',
    '    printf \'  "userGroups": [{"name": "Default", "password": %s, \' "$(json "$password")"',
    '    printf \'"canKickBan": false, "canAccessInventories": true, "canEditBase": true, \'',
    '    printf \'"canExtendBase": true, "reservedSlots": 0}]\\n\'',
    "    printf '}\\n'",
    "} > enshrouded_server.json",
    _follow_log("logs/enshrouded_server.log"),
    "exec wine ./enshrouded_server.exe",
)

# --- V Rising (Windows, Wine) ----------------------------------------------------------------

_V_RISING_START = _script(
    _WINE_START,
    "password={{SERVER_PASSWORD}}",
    "port={{SERVER_PORT}}",
    "# The game port, the Steam query port on port+1. Without -logFile it logs to the console.",
    "set -- -persistentDataPath save-data -serverName {{SERVER_NAME}} -saveName {{SAVE_NAME}} \\",
    '    -address {{SERVER_IP}} -gamePort "$port" -queryPort "$((port + 1))" \\',
    "    -maxConnectedUsers {{MAX_PLAYERS}}",
    'if [ -n "$password" ]; then set -- "$@" -password "$password"; fi',
    'exec wine ./VRisingServer.exe "$@"',
)

# --- Conan Exiles (Windows, Wine) ------------------------------------------------------------

_CONAN_START = _script(
    _WINE_START,
    _ONELINE,
    _INISET,
    "config=ConanSandbox/Saved/Config/WindowsServer",
    'iniset "$config/Engine.ini" OnlineSubsystem ServerName {{SERVER_NAME}}',
    'iniset "$config/Engine.ini" OnlineSubsystem ServerPassword {{SERVER_PASSWORD}}',
    'iniset "$config/Game.ini" /Script/Engine.GameSession MaxPlayers {{MAX_PLAYERS}}',
    "port={{SERVER_PORT}}",
    _follow_log("ConanSandbox/Saved/Logs/ConanSandbox.log"),
    "# The game port and port+1 (raw UDP), Steam query on port+2.",
    "exec wine ./ConanSandbox/Binaries/Win64/ConanSandboxServer-Win64-Shipping.exe -log \\",
    '    -MultiHome={{SERVER_IP}} -Port="$port" -QueryPort="$((port + 2))"',
)

# --- Don't Starve Together -------------------------------------------------------------------

_DST_START = _script(
    _STEAM_START,
    _ONELINE,
    "# One shard (the surface, no caves), its cluster under ./dst/config/Cluster_1.",
    'root="$PWD/dst"',
    'cluster="$root/config/Cluster_1"',
    'mkdir -p "$cluster/Master"',
    "token=$(oneline {{CLUSTER_TOKEN}})",
    "name=$(oneline {{SERVER_NAME}})",
    "password=$(oneline {{SERVER_PASSWORD}})",
    "mode={{GAME_MODE}}",
    "players={{MAX_PLAYERS}}",
    "port={{SERVER_PORT}}",
    'printf \'%s\\n\' "$token" > "$cluster/cluster_token.txt"',
    "printf '%s\\n' '[GAMEPLAY]' \"game_mode = $mode\" \"max_players = $players\" 'pvp = false' \\",
    "    'pause_when_empty = true' '' '[NETWORK]' \"cluster_name = $name\" \\",
    "    \"cluster_password = $password\" 'cluster_intention = cooperative' '' '[MISC]' \\",
    "    'console_enabled = true' '' '[SHARD]' 'shard_enabled = false' > \"$cluster/cluster.ini\"",
    "# The game port (UDP), Steam's master server and authentication ports on port+1, port+2.",
    "printf '%s\\n' '[NETWORK]' \"server_port = $port\" '' '[SHARD]' 'is_master = true' '' \\",
    '    \'[STEAM]\' "master_server_port = $((port + 1))" "authentication_port = $((port + 2))" \\',
    '    > "$cluster/Master/server.ini"',
    "cd bin64 && exec ./dontstarve_dedicated_server_nullrenderer_x64 -console \\",
    '    -persistent_storage_root "$root" -conf_dir config -cluster Cluster_1 -shard Master',
)

# --- Unturned --------------------------------------------------------------------------------

_UNTURNED_START = _script(
    _STEAM_START,
    _ONELINE,
    'export LD_LIBRARY_PATH="$PWD/linux64:${LD_LIBRARY_PATH:-}"',
    "name=$(oneline {{SERVER_NAME}})",
    "password=$(oneline {{SERVER_PASSWORD}})",
    "map=$(oneline {{MAP}})",
    "gslt={{GSLT}}",
    "ip={{SERVER_IP}}",
    "port={{SERVER_PORT}}",
    "players={{MAX_PLAYERS}}",
    "commands=Servers/main/Server/Commands.dat",
    "mkdir -p Servers/main/Server",
    "# The game port and port+1. The commands Unturned runs as it starts:",
    'printf \'%s\\n\' "Name $name" "Bind $ip" "Port $port" "MaxPlayers $players" "Map $map" \\',
    '    > "$commands"',
    'if [ -n "$password" ]; then printf \'Password %s\\n\' "$password" >> "$commands"; fi',
    "# Listed on the internet with a game server login token, a LAN server without one.",
    "set -- +LanServer/main",
    'if [ -n "$gslt" ]; then set -- -GSLT "$gslt" +InternetServer/main; fi',
    'exec ./Unturned_Headless.x86_64 -batchmode -nographics "$@"',
)

# --- Space Engineers (Windows, Wine) ---------------------------------------------------------

_SPACE_ENGINEERS_AFTER = r"""# Space Engineers' dedicated server is a .NET Framework program.
winetricks -q vcrun2019 dotnet48
mkdir -p config
if [ ! -f config/SpaceEngineers-Dedicated.cfg ]; then
    # A new world from the Star System scenario; the start command fills in the rest.
    printf '%s\n' '<?xml version="1.0"?>' \
        '<MyConfigDedicated>' \
        '  <SessionSettings>' '    <GameMode>Survival</GameMode>' '    <MaxPlayers>4</MaxPlayers>' \
        '  </SessionSettings>' '  <IP>0.0.0.0</IP>' '  <SteamPort>8766</SteamPort>' \
        '  <ServerPort>27016</ServerPort>' '  <ServerName>Space Engineers</ServerName>' \
        '  <WorldName>World</WorldName>' \
        '  <PremadeCheckpointPath>Content\CustomWorlds\Star System</PremadeCheckpointPath>' \
        '</MyConfigDedicated>' > config/SpaceEngineers-Dedicated.cfg
fi"""

_SPACE_ENGINEERS_START = _script(
    _WINE_START,
    _ONELINE,
    _SED_ESCAPE,
    "config=config/SpaceEngineers-Dedicated.cfg",
    "xml() {  # $1 as XML text",
    "    oneline \"$1\" | sed -e 's/&/\\&amp;/g' -e 's/</\\&lt;/g' -e 's/>/\\&gt;/g'",
    "}",
    "xmlset() {  # tag value: the text of <tag> in the configuration",
    '    value=$(sedesc "$(xml "$2")")',
    '    sed -i "s|<$1>[^<]*</$1>|<$1>$value</$1>|" "$config"',
    "}",
    "port={{SERVER_PORT}}",
    "# The game port (UDP) and Steam's port on port+1.",
    'if [ -f "$config" ]; then',
    "    xmlset ServerName {{SERVER_NAME}}",
    "    xmlset WorldName {{WORLD_NAME}}",
    "    xmlset GameMode {{GAME_MODE}}",
    "    xmlset MaxPlayers {{MAX_PLAYERS}}",
    "    xmlset IP {{SERVER_IP}}",
    '    xmlset ServerPort "$port"',
    '    xmlset SteamPort "$((port + 1))"',
    "fi",
    "path=\"Z:$(printf '%s' \"$PWD/config\" | tr / '\\\\')\"",
    'exec wine ./DedicatedServer64/SpaceEngineersDedicated.exe -console -path "$path"',
)

# --- Arma 3 ----------------------------------------------------------------------------------

_ARMA3_START = _script(
    _STEAM_START,
    _ONELINE,
    "cfgstr() {  # $1 as a string of Arma's configuration files",
    '    printf \'"%s"\' "$(oneline "$1" | sed \'s/"/""/g\')"',
    "}",
    "name={{SERVER_NAME}}",
    "password={{SERVER_PASSWORD}}",
    "admin={{ADMIN_PASSWORD}}",
    "players={{MAX_PLAYERS}}",
    "{",
    '    printf \'hostname = %s;\\n\' "$(cfgstr "$name")"',
    '    printf \'password = %s;\\n\' "$(cfgstr "$password")"',
    '    printf \'passwordAdmin = %s;\\n\' "$(cfgstr "$admin")"',
    "    printf 'maxPlayers = %s;\\n' \"$players\"",
    "    printf '%s\\n' 'persistent = 1;' 'kickDuplicate = 1;' 'verifySignatures = 2;' \\",
    "        'BattlEye = 1;'",
    "} > server.cfg",
    "mkdir -p profiles",
    "# The game port; Steam query, Steam and BattlEye on port+1 to port+4.",
    "exec ./arma3server_x64 -ip={{SERVER_IP}} -port={{SERVER_PORT}} -config=server.cfg \\",
    "    -profiles=profiles -name=server",
)

# --- DayZ ------------------------------------------------------------------------------------

_DAYZ_START = _script(
    _STEAM_START,
    _ONELINE,
    _SED_ESCAPE,
    "cfgstr() {  # $1 as a string of DayZ's configuration files",
    '    printf \'"%s"\' "$(oneline "$1" | sed \'s/"/""/g\')"',
    "}",
    "config=serverDZ.cfg",
    "setcfg() {  # key value: the line 'key = value;' of serverDZ.cfg",
    '    touch "$config"',
    '    if grep -q "^[[:space:]]*$1[[:space:]]*=" "$config"; then',
    '        sed -i "s|^[[:space:]]*$1[[:space:]]*=.*|$1 = $(sedesc "$2");|" "$config"',
    "    else",
    '        printf \'%s = %s;\\n\' "$1" "$2" >> "$config"',
    "    fi",
    "}",
    "name={{SERVER_NAME}}",
    "password={{SERVER_PASSWORD}}",
    "admin={{ADMIN_PASSWORD}}",
    "port={{SERVER_PORT}}",
    'setcfg hostname "$(cfgstr "$name")"',
    'setcfg password "$(cfgstr "$password")"',
    'setcfg passwordAdmin "$(cfgstr "$admin")"',
    "setcfg maxPlayers {{MAX_PLAYERS}}",
    "# The game port and the next ones (BattlEye); Steam query on port+5.",
    'setcfg steamQueryPort "$((port + 5))"',
    "mkdir -p profiles",
    'exec ./DayZServer -config="$config" -ip={{SERVER_IP}} -port="$port" -profiles=profiles \\',
    "    -dologs -adminlog -netlog -freezecheck",
)

# --- Starbound -------------------------------------------------------------------------------

_STARBOUND_START = _script(
    _STEAM_START,
    _ONELINE,
    _JSON,
    _SED_ESCAPE,
    "config=storage/starbound_server.config",
    "name={{SERVER_NAME}}",
    "ip={{SERVER_IP}}",
    "port={{SERVER_PORT}}",
    "players={{MAX_PLAYERS}}",
    'jsonnum() {  # key number: the value of "key" : … in the configuration',
    '    sed -i "s|\\"$1\\"[[:space:]]*:[[:space:]]*[0-9]*|\\"$1\\" : $2|" "$config"',
    "}",
    "jsonstr() {  # key text",
    '    value=$(sedesc "$(json "$2")")',
    '    sed -i "s|\\"$1\\"[[:space:]]*:[[:space:]]*\\"[^\\"]*\\"|\\"$1\\" : $value|" "$config"',
    "}",
    "mkdir -p storage",
    'if [ -s "$config" ]; then',
    '    jsonnum gameServerPort "$port"',
    '    jsonnum maxPlayers "$players"',
    '    jsonstr gameServerBind "$ip"',
    '    jsonstr serverName "$name"',
    "else",
    "    # Starbound completes the file with its defaults on its first start.",
    '    printf \'{\\n  "gameServerBind" : %s,\\n  "gameServerPort" : %s,\\n\' \\',
    '        "$(json "$ip")" "$port" > "$config"',
    '    printf \'  "maxPlayers" : %s,\\n  "serverName" : %s\\n}\\n\' \\',
    '        "$players" "$(json "$name")" >> "$config"',
    "fi",
    "cd linux && exec ./starbound_server",
)

# --- The shipped test workload ---------------------------------------------------------------

_TEST_WORKLOAD_INSTALL = r"""#!/bin/sh
# The test workload: nothing to download (the agent ships gameserver.py); writes its settings.
set -eu
motd={{MOTD}}
delay={{READY_DELAY}}
motd=$(printf '%s' "$motd" | tr '\r\n' '  ')
printf '%s\n' '# Written by the install script of the test workload.' "motd=$motd" \
    "ready-delay=$delay" > server.properties
"""

_TEST_WORKLOAD_START = (
    "python3 {{AGENT_WORKLOADS}}/gameserver.py --host {{SERVER_IP}} --port {{SERVER_PORT}}"
    " --ready-delay {{READY_DELAY}}"
)


# --- The catalogue ---------------------------------------------------------------------------

TEMPLATES: dict[str, dict] = {
    "minecraft-java": {
        "name": "Minecraft: Java Edition",
        "default_port": 25565,
        "template": _template(
            _MINECRAFT_JAVA_INSTALL,
            _MINECRAFT_JAVA_START,
            r"Done \(",
            stop_command="stop",
            stop_timeout=60,
            ready_timeout=300,
            # Nothing written to the world while it is archived, all of it on disk first.
            backup_commands={"before": ["save-off", "save-all"], "after": ["save-on"]},
        ),
        "variables": [
            EULA,
            _string(
                "VERSION",
                'Minecraft version ("latest", "snapshot" or e.g. 1.21.4)',
                "latest",
                max_length=16,
            ),
            _max_players(20, 1000),
            _enum("DIFFICULTY", "Difficulty", "normal", ["peaceful", "easy", "normal", "hard"]),
        ],
    },
    "minecraft-bedrock": {
        "name": "Minecraft: Bedrock Edition",
        "default_port": 19132,
        "template": _template(
            _MINECRAFT_BEDROCK_INSTALL,
            _MINECRAFT_BEDROCK_START,
            r"Server started\.",
            stop_command="stop",
            stop_timeout=30,
            ready_timeout=180,
        ),
        "variables": [
            EULA,
            _max_players(10, 100),
            _enum("GAMEMODE", "Game mode", "survival", ["survival", "creative", "adventure"]),
            _string(
                "VERSION",
                'Bedrock server version ("latest" or e.g. 1.21.51.02)',
                "latest",
                max_length=16,
            ),
            _server_name("Dedicated Server"),
        ],
    },
    "rust": {
        "name": "Rust",
        "default_port": 28015,
        "template": _template(
            _steamcmd_install("Rust", 258550),
            _RUST_START,
            r"Server startup complete",
            # Ctrl+C makes Rust save and quit (LinuxGSM stops it so); its console reads no stdin.
            stop_signal="SIGINT",
            stop_timeout=120,
            ready_timeout=900,
        ),
        "variables": [
            _max_players(100, 500),
            _integer("WORLD_SIZE", "World size", 3500, 1000, 6000),
            _integer("SEED", "World seed", 12345, 0, 2147483647),
            _server_name("A Rust server"),
            _enum(
                "LEVEL",
                "Map",
                "Procedural Map",
                ["Procedural Map", "Barren", "HapisIsland", "CraggyIsland", "SavasIsland"],
            ),
            RCON_PASSWORD,
        ],
    },
    "valheim": {
        "name": "Valheim",
        "default_port": 2456,
        "template": _template(
            _steamcmd_install("Valheim", 896660),
            _VALHEIM_START,
            r"Game server connected|DungeonDB Start",
            # Valheim saves the world and exits on Ctrl+C.
            stop_signal="SIGINT",
            stop_timeout=60,
            ready_timeout=300,
        ),
        "variables": [
            _string("WORLD_NAME", "World name", "Dedicated", max_length=32),
            _string(
                "SERVER_PASSWORD",
                "Server password (5+ characters)",
                None,
                required=True,
                min_length=5,
                max_length=64,
            ),
            _server_name("A Valheim server"),
            _boolean("PUBLIC", "List in the community servers", True),
            _boolean("CROSSPLAY", "Crossplay (Xbox and Game Pass players)", False),
        ],
    },
    "counter-strike-2": {
        "name": "Counter-Strike 2",
        "default_port": 27015,
        "template": _template(
            _steamcmd_install("Counter-Strike 2", 730),
            _CS2_START,
            r"Connection to Steam servers successful|gameserver Steam ID",
            stop_command="quit",
            stop_timeout=30,
            ready_timeout=300,
        ),
        "variables": [
            _max_players(10, 64, low=2),
            _server_name("A Counter-Strike 2 server"),
            _string("MAP", "Start map", "de_dust2", max_length=64),
            _enum(
                "GAME_MODE",
                "Game mode",
                "competitive",
                ["casual", "competitive", "wingman", "arms_race", "deathmatch"],
            ),
            GSLT,
            SERVER_PASSWORD,
            RCON_PASSWORD,
        ],
    },
    "terraria": {
        "name": "Terraria",
        "default_port": 7777,
        "template": _template(
            _TERRARIA_INSTALL,
            _TERRARIA_START,
            r"Server started",
            stop_command="exit",
            stop_timeout=30,
            ready_timeout=600,
        ),
        "variables": [
            _max_players(8, 255),
            _string("SERVER_NAME", "Message of the day", "Welcome!", max_length=64),
            _string(
                "VERSION", 'Server version ("latest" or e.g. 1.4.4.9)', "latest", max_length=16
            ),
            _string("WORLD_NAME", "World name", "world", max_length=32),
            _enum("WORLD_SIZE", "World size (new worlds)", "medium", ["small", "medium", "large"]),
            _enum(
                "DIFFICULTY",
                "Difficulty (new worlds)",
                "classic",
                ["classic", "expert", "master", "journey"],
            ),
            SERVER_PASSWORD,
        ],
    },
    "ark-survival-evolved": {
        "name": "ARK: Survival Evolved",
        "default_port": 7777,
        "template": _template(
            _steamcmd_install("ARK: Survival Evolved", 376030),
            _ark_start(ascended=False),
            r"has successfully started|Full Startup:",
            # Ctrl+C saves the world and exits (ARK has no console on standard input).
            stop_signal="SIGINT",
            stop_timeout=300,
            ready_timeout=1800,
        ),
        "variables": [
            _max_players(70, 255),
            _server_name("An ARK server", max_length=128),
            _enum(
                "MAP",
                "Map",
                "TheIsland",
                [
                    "TheIsland",
                    "TheCenter",
                    "ScorchedEarth_P",
                    "Ragnarok",
                    "Aberration_P",
                    "Extinction",
                    "Valguero_P",
                    "Genesis",
                    "CrystalIsles",
                    "Gen2",
                    "LostIsland",
                    "Fjordur",
                ],
            ),
            SERVER_PASSWORD,
            _string(
                "ADMIN_PASSWORD", "Admin password", None, required=True, min_length=8, max_length=64
            ),
        ],
    },
    "ark-survival-ascended": {
        "name": "ARK: Survival Ascended",
        "default_port": 7777,
        "template": _template(
            _steamcmd_install("ARK: Survival Ascended", 2430930, windows=True),
            _ark_start(ascended=True),
            r"has successfully started|advertising for join",
            stop_signal="SIGINT",
            stop_timeout=300,
            ready_timeout=1800,
        ),
        "variables": [
            _max_players(70, 127),
            _server_name("An ARK server", max_length=128),
            _enum(
                "MAP",
                "Map",
                "TheIsland_WP",
                [
                    "TheIsland_WP",
                    "ScorchedEarth_WP",
                    "TheCenter_WP",
                    "Aberration_WP",
                    "Extinction_WP",
                    "Ragnarok_WP",
                ],
            ),
            SERVER_PASSWORD,
            _string(
                "ADMIN_PASSWORD", "Admin password", None, required=True, min_length=8, max_length=64
            ),
        ],
    },
    "palworld": {
        "name": "Palworld",
        "default_port": 8211,
        "template": _template(
            _steamcmd_install("Palworld", 2394010),
            _PALWORLD_START,
            r"Running Palworld dedicated server on|Setting breakpad minidump AppID = 2394010",
            stop_signal="SIGINT",
            stop_timeout=120,
            ready_timeout=600,
        ),
        "variables": [
            _max_players(32, 32),
            _server_name("A Palworld server"),
            SERVER_PASSWORD,
            _string("ADMIN_PASSWORD", "Admin password (empty: no admins)", ""),
            _boolean("COMMUNITY", "List in the community servers", False),
        ],
    },
    "garrys-mod": {
        "name": "Garry's Mod",
        "default_port": 27015,
        "template": _template(
            _steamcmd_install("Garry's Mod", 4020),
            _srcds_start("garrysmod", "    +gamemode {{GAMEMODE}} \\"),
            r"gameserver Steam ID|Connection to Steam servers successful",
            stop_command="quit",
            stop_timeout=30,
            ready_timeout=300,
        ),
        "variables": [
            _max_players(16, 128, low=2),
            _server_name("A Garry's Mod server"),
            _string("MAP", "Start map", "gm_flatgrass", max_length=64),
            _string("GAMEMODE", "Gamemode", "sandbox", max_length=64),
            GSLT,
        ],
    },
    "factorio": {
        "name": "Factorio",
        "default_port": 34197,
        "template": _template(
            _FACTORIO_INSTALL,
            _FACTORIO_START,
            r"Hosting game at IP ADDR",
            stop_command="/quit",
            stop_timeout=60,
            ready_timeout=300,
        ),
        "variables": [
            _max_players(16, 256),
            _server_name("A Factorio server", max_length=100),
            _string(
                "VERSION", 'Version ("stable", "latest" or e.g. 2.0.28)', "stable", max_length=16
            ),
            _string("SAVE_NAME", "Save name", "world", min_length=1, max_length=64),
            _string("SERVER_DESCRIPTION", "Description", "", max_length=200),
            _string("GAME_PASSWORD", "Password to join (empty: none)", ""),
            _string("FACTORIO_USERNAME", "factorio.com username (to be listed publicly)", ""),
            _string("FACTORIO_TOKEN", "factorio.com token (to be listed publicly)", ""),
        ],
    },
    "7-days-to-die": {
        "name": "7 Days to Die",
        "default_port": 26900,
        "template": _template(
            _steamcmd_install("7 Days to Die", 294420),
            _SEVEN_DAYS_START,
            r"INF StartGame done",
            # The start command turns this into "shutdown" on the server's telnet console.
            stop_signal="SIGUSR1",
            stop_timeout=120,
            ready_timeout=900,
        ),
        "variables": [
            _max_players(8, 64),
            _server_name("A 7 Days to Die server"),
            SERVER_PASSWORD,
            _integer("DIFFICULTY", "Difficulty (0 easiest to 5 hardest)", 2, 0, 5),
        ],
    },
    "project-zomboid": {
        "name": "Project Zomboid",
        "default_port": 16261,
        "template": _template(
            _steamcmd_install("Project Zomboid", 380870),
            _ZOMBOID_START,
            r"SERVER STARTED",
            stop_command="quit",
            stop_timeout=60,
            ready_timeout=600,
        ),
        "variables": [
            _max_players(16, 100),
            _server_name("A Project Zomboid server"),
            SERVER_PASSWORD,
            _string(
                "ADMIN_PASSWORD",
                "Password of the admin user",
                None,
                required=True,
                min_length=1,
                max_length=64,
            ),
        ],
    },
    "satisfactory": {
        "name": "Satisfactory",
        "default_port": 7777,
        "template": _template(
            _steamcmd_install("Satisfactory", 1690800),
            _SATISFACTORY_START,
            r"Server startup time elapsed and saving/level loading is done"
            r"|\(Engine Initialization\) Total time",
            stop_signal="SIGINT",
            stop_timeout=120,
            ready_timeout=600,
        ),
        "variables": [
            _max_players(4, 16),
            # Kept from the catalogue; Satisfactory takes its name when claimed in the game.
            _string(
                "SERVER_NAME",
                "Server name (Satisfactory asks for it when the server is claimed in game)",
                "A Satisfactory server",
            ),
        ],
    },
    "enshrouded": {
        "name": "Enshrouded",
        "default_port": 15636,
        "template": _template(
            _steamcmd_install("Enshrouded", 2278520, windows=True),
            _ENSHROUDED_START,
            r"\[Session\] ('HostOnline' \(up\)|finished transition .*'Host_Online')",
            stop_signal="SIGINT",
            stop_timeout=60,
            ready_timeout=600,
        ),
        "variables": [
            _max_players(16, 16),
            _server_name("An Enshrouded server"),
            SERVER_PASSWORD,
        ],
    },
    "team-fortress-2": {
        "name": "Team Fortress 2",
        "default_port": 27015,
        "template": _template(
            _steamcmd_install("Team Fortress 2", 232250),
            _srcds_start(
                "tf", "    +sv_password {{SERVER_PASSWORD}} +rcon_password {{RCON_PASSWORD}} \\"
            ),
            r"gameserver Steam ID|Connection to Steam servers successful",
            stop_command="quit",
            stop_timeout=30,
            ready_timeout=300,
        ),
        "variables": [
            _max_players(24, 100, low=2),
            _server_name("A Team Fortress 2 server"),
            _string("MAP", "Start map", "ctf_2fort", max_length=64),
            GSLT,
            SERVER_PASSWORD,
            RCON_PASSWORD,
        ],
    },
    "v-rising": {
        "name": "V Rising",
        "default_port": 9876,
        "template": _template(
            _steamcmd_install("V Rising", 1829350, windows=True),
            _V_RISING_START,
            r"\[Server\] Startup Completed",
            stop_signal="SIGINT",
            stop_timeout=60,
            ready_timeout=600,
        ),
        "variables": [
            _max_players(40, 128),
            _server_name("A V Rising server"),
            _string("SAVE_NAME", "Save name", "world1", min_length=1, max_length=32),
            SERVER_PASSWORD,
        ],
    },
    "conan-exiles": {
        "name": "Conan Exiles",
        "default_port": 7777,
        "template": _template(
            _steamcmd_install("Conan Exiles", 443030, windows=True),
            _CONAN_START,
            r"Started SourceServerQueries|LogServerStats: Sending report",
            stop_signal="SIGINT",
            stop_timeout=120,
            ready_timeout=900,
        ),
        "variables": [
            _max_players(40, 70),
            _server_name("A Conan Exiles server"),
            SERVER_PASSWORD,
        ],
    },
    "dont-starve-together": {
        "name": "Don't Starve Together",
        "default_port": 10999,
        "template": _template(
            _steamcmd_install("Don't Starve Together", 343050),
            _DST_START,
            r"Sim paused|Registering master server in",
            # The console's shutdown (it saves first); console_enabled = true reads stdin.
            stop_command="c_shutdown(true)",
            stop_timeout=60,
            ready_timeout=600,
        ),
        "variables": [
            _max_players(6, 64),
            _server_name("A Don't Starve Together server"),
            _string(
                "CLUSTER_TOKEN",
                "Klei server token (accounts.klei.com)",
                None,
                required=True,
                min_length=1,
                max_length=255,
            ),
            _enum("GAME_MODE", "Game mode", "survival", ["survival", "endless", "wilderness"]),
            SERVER_PASSWORD,
        ],
    },
    "unturned": {
        "name": "Unturned",
        "default_port": 27015,
        "template": _template(
            _steamcmd_install("Unturned", 1110390),
            _UNTURNED_START,
            r"Loading level: 100%",
            stop_command="shutdown",
            stop_timeout=60,
            ready_timeout=600,
        ),
        "variables": [
            _max_players(24, 200),
            _server_name("An Unturned server", max_length=50),
            _string("MAP", "Map", "PEI", max_length=64),
            GSLT,
            SERVER_PASSWORD,
        ],
    },
    "space-engineers": {
        "name": "Space Engineers",
        "default_port": 27016,
        "template": _template(
            _steamcmd_install(
                "Space Engineers", 298740, windows=True, after=_SPACE_ENGINEERS_AFTER
            ),
            _SPACE_ENGINEERS_START,
            r"Game ready\.\.\.",
            stop_signal="SIGINT",
            stop_timeout=120,
            ready_timeout=900,
        ),
        "variables": [
            _max_players(4, 64),
            _server_name("A Space Engineers server"),
            _string("WORLD_NAME", "World name", "World", max_length=32),
            _enum("GAME_MODE", "Game mode (new worlds)", "Survival", ["Survival", "Creative"]),
        ],
    },
    "arma-3": {
        "name": "Arma 3",
        "default_port": 2302,
        "template": _template(
            _steamcmd_install("Arma 3", 233780, account=True),
            _ARMA3_START,
            r"Host identity created",
            stop_signal="SIGINT",
            stop_timeout=60,
            ready_timeout=600,
        ),
        "variables": [
            _max_players(32, 256),
            _server_name("An Arma 3 server"),
            STEAM_USER,
            STEAM_PASS,
            SERVER_PASSWORD,
            _string("ADMIN_PASSWORD", "Admin password (empty: no admin login)", ""),
        ],
    },
    "dayz": {
        "name": "DayZ",
        "default_port": 2302,
        "template": _template(
            _steamcmd_install("DayZ", 223350, account=True),
            _DAYZ_START,
            r"Mission read",
            stop_signal="SIGINT",
            stop_timeout=60,
            ready_timeout=600,
        ),
        "variables": [
            _max_players(60, 127),
            _server_name("A DayZ server"),
            STEAM_USER,
            STEAM_PASS,
            SERVER_PASSWORD,
            _string("ADMIN_PASSWORD", "Admin password (empty: no admin login)", ""),
        ],
    },
    "starbound": {
        "name": "Starbound",
        "default_port": 21025,
        "template": _template(
            _steamcmd_install("Starbound", 211820, account=True),
            _STARBOUND_START,
            r"UniverseServer: listening for incoming TCP connections|Starting UniverseServer",
            stop_signal="SIGINT",
            stop_timeout=30,
            ready_timeout=300,
        ),
        "variables": [
            _max_players(8, 64),
            _server_name("A Starbound server"),
            STEAM_USER,
            STEAM_PASS,
        ],
    },
    "test-workload": {
        "name": "Test workload (TCP)",
        "default_port": 27960,
        "template": _template(
            _TEST_WORKLOAD_INSTALL,
            _TEST_WORKLOAD_START,
            r"Server ready on",
            stop_command="stop",
            stop_timeout=10,
            ready_timeout=90,
        ),
        "variables": [
            _integer("READY_DELAY", "Seconds before it is ready", 0, 0, 60),
            _string("MOTD", "Message of the day", "A test server", max_length=64),
        ],
    },
}


def template_for(slug: str) -> dict | None:
    """The entry of that game (name, default port, template, variables), a copy; or None."""
    entry = TEMPLATES.get(slug)
    return copy.deepcopy(entry) if entry is not None else None
