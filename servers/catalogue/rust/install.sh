#!/bin/sh
# Rust: the dedicated server (Steam app 258550) through SteamCMD.
set -eu
server_dir=$(pwd)
export HOME="$server_dir"  # SteamCMD keeps its state in $HOME/Steam: here
app_id=258550
set -- +login anonymous
# include: ../_shared/steamcmd.sh
