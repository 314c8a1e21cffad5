#!/bin/sh
# Palworld: the dedicated server (Steam app 2394010) through SteamCMD.
set -eu
server_dir=$(pwd)
export HOME="$server_dir"  # SteamCMD keeps its state in $HOME/Steam: here
app_id=2394010
set -- +login anonymous
# include: ../_shared/steamcmd.sh
