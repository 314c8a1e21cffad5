#!/bin/sh
# Conan Exiles: the dedicated server (Steam app 443030) through SteamCMD.
set -eu
server_dir=$(pwd)
export HOME="$server_dir"  # SteamCMD keeps its state in $HOME/Steam: here
app_id=443030
set -- +login anonymous
# Windows-only dedicated server: SteamCMD fetches the Windows build; it runs under Wine.
set -- +@sSteamCmdForcePlatformType windows "$@"
# include: ../_shared/steamcmd.sh

# include: ../_shared/wine-prefix.sh
