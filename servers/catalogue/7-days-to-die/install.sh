#!/bin/sh
# 7 Days to Die: the dedicated server (Steam app 294420) through SteamCMD.
set -eu
server_dir=$(pwd)
export HOME="$server_dir"  # SteamCMD keeps its state in $HOME/Steam: here
app_id=294420
set -- +login anonymous
# include: ../_shared/steamcmd.sh
