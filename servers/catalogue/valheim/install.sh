#!/bin/sh
# Valheim: the dedicated server (Steam app 896660) through SteamCMD.
set -eu
server_dir=$(pwd)
export HOME="$server_dir"  # SteamCMD keeps its state in $HOME/Steam: here
app_id=896660
set -- +login anonymous
# include: ../_shared/steamcmd.sh
