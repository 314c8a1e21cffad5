#!/bin/sh
# Garry's Mod: the dedicated server (Steam app 4020) through SteamCMD.
set -eu
server_dir=$(pwd)
export HOME="$server_dir"  # SteamCMD keeps its state in $HOME/Steam: here
app_id=4020
set -- +login anonymous
# include: ../_shared/steamcmd.sh
