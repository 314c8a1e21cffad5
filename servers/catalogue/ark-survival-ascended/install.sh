#!/bin/sh
# ARK: Survival Ascended: the dedicated server (Steam app 2430930) through SteamCMD.
set -eu
server_dir=$(pwd)
export HOME="$server_dir"  # SteamCMD keeps its state in $HOME/Steam: here
app_id=2430930
set -- +login anonymous
# Windows-only dedicated server: SteamCMD fetches the Windows build; it runs under Wine.
set -- +@sSteamCmdForcePlatformType windows "$@"
# include: ../_shared/steamcmd.sh

# include: ../_shared/wine-prefix.sh
