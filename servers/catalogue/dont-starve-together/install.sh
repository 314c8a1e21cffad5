#!/bin/sh
# Don't Starve Together: the dedicated server (Steam app 343050) through SteamCMD.
set -eu
server_dir=$(pwd)
export HOME="$server_dir"  # SteamCMD keeps its state in $HOME/Steam: here
app_id=343050
set -- +login anonymous
# include: ../_shared/steamcmd.sh
