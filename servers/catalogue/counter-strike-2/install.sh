#!/bin/sh
# Counter-Strike 2: the dedicated server (Steam app 730) through SteamCMD.
set -eu
server_dir=$(pwd)
export HOME="$server_dir"  # SteamCMD keeps its state in $HOME/Steam: here
app_id=730
set -- +login anonymous
# include: ../_shared/steamcmd.sh
