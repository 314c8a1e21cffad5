#!/bin/sh
# Starbound: the dedicated server (Steam app 211820) through SteamCMD.
set -eu
server_dir=$(pwd)
export HOME="$server_dir"  # SteamCMD keeps its state in $HOME/Steam: here
app_id=211820
# This dedicated server cannot be downloaded anonymously: it takes a Steam account
# (one without Steam Guard codes, or one that has logged in here once already).
steam_user={{STEAM_USER}}
steam_pass={{STEAM_PASS}}
set -- +login "$steam_user" "$steam_pass"
# include: ../_shared/steamcmd.sh
