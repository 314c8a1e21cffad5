#!/bin/sh
# Project Zomboid: the dedicated server (Steam app 380870) through SteamCMD.
set -eu
server_dir=$(pwd)
export HOME="$server_dir"  # SteamCMD keeps its state in $HOME/Steam: here
app_id=380870
set -- +login anonymous
# include: ../_shared/steamcmd.sh
