"""The words of a game's template, and how the catalogue's scripts are written.

Each game of the catalogue is a folder of data, ``servers/catalogue/<slug>/`` (a ``game.toml``
manifest and its shell scripts), read by ``servers.catalogue``. A game's ``template`` is what the
agent's protocol calls a server's template (agent/PROTOCOL.md, "A server's spec"), its keys
``TEMPLATE_KEYS``; its ``variables`` are the settings a server of that game takes, in the
catalogue's format (``servers.services.validation.validate_variables``).

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

This module is plain data and imports nothing.
"""

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
