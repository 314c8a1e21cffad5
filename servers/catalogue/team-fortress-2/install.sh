#!/bin/sh
# Team Fortress 2: the dedicated server (Steam app 232250) through SteamCMD.
set -eu
server_dir=$(pwd)
export HOME="$server_dir"  # SteamCMD keeps its state in $HOME/Steam: here
app_id=232250
set -- +login anonymous
# include: ../_shared/steamcmd.sh
