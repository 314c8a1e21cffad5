#!/bin/sh
# Enshrouded: the dedicated server (Steam app 2278520) through SteamCMD.
set -eu
server_dir=$(pwd)
export HOME="$server_dir"  # SteamCMD keeps its state in $HOME/Steam: here
app_id=2278520
set -- +login anonymous
# Windows-only dedicated server: SteamCMD fetches the Windows build; it runs under Wine.
set -- +@sSteamCmdForcePlatformType windows "$@"
# include: ../_shared/steamcmd.sh

# include: ../_shared/wine-prefix.sh
