#!/bin/sh
# Satisfactory: the dedicated server (Steam app 1690800) through SteamCMD.
set -eu
server_dir=$(pwd)
export HOME="$server_dir"  # SteamCMD keeps its state in $HOME/Steam: here
app_id=1690800
set -- +login anonymous
# include: ../_shared/steamcmd.sh
