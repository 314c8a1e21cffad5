#!/bin/sh
# Space Engineers: the dedicated server (Steam app 298740) through SteamCMD.
set -eu
server_dir=$(pwd)
export HOME="$server_dir"  # SteamCMD keeps its state in $HOME/Steam: here
app_id=298740
set -- +login anonymous
# Windows-only dedicated server: SteamCMD fetches the Windows build; it runs under Wine.
set -- +@sSteamCmdForcePlatformType windows "$@"
# include: ../_shared/steamcmd.sh

# include: ../_shared/wine-prefix.sh

# Space Engineers' dedicated server is a .NET Framework program.
winetricks -q vcrun2019 dotnet48
mkdir -p config
if [ ! -f config/SpaceEngineers-Dedicated.cfg ]; then
    # A new world from the Star System scenario; the start command fills in the rest.
    printf '%s\n' '<?xml version="1.0"?>' \
        '<MyConfigDedicated>' \
        '  <SessionSettings>' '    <GameMode>Survival</GameMode>' '    <MaxPlayers>4</MaxPlayers>' \
        '  </SessionSettings>' '  <IP>0.0.0.0</IP>' '  <SteamPort>8766</SteamPort>' \
        '  <ServerPort>27016</ServerPort>' '  <ServerName>Space Engineers</ServerName>' \
        '  <WorldName>World</WorldName>' \
        '  <PremadeCheckpointPath>Content\CustomWorlds\Star System</PremadeCheckpointPath>' \
        '</MyConfigDedicated>' > config/SpaceEngineers-Dedicated.cfg
fi
