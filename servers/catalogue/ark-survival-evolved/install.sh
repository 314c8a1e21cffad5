#!/bin/sh
# ARK: Survival Evolved: the dedicated server (Steam app 376030) through SteamCMD.
set -eu
server_dir=$(pwd)
export HOME="$server_dir"  # SteamCMD keeps its state in $HOME/Steam: here
app_id=376030
set -- +login anonymous
# include: ../_shared/steamcmd.sh
