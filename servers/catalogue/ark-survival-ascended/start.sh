# include: ../_shared/wine-env.sh
# include: ../_shared/oneline.sh
# include: ../_shared/iniset.sh
# Names and passwords go to GameUserSettings.ini: on the command line, ARK's option
# string (Map?key=value?…) cannot hold spaces or question marks.
iniset ShooterGame/Saved/Config/WindowsServer/GameUserSettings.ini SessionSettings SessionName {{SERVER_NAME}}
iniset ShooterGame/Saved/Config/WindowsServer/GameUserSettings.ini ServerSettings ServerPassword {{SERVER_PASSWORD}}
iniset ShooterGame/Saved/Config/WindowsServer/GameUserSettings.ini ServerSettings ServerAdminPassword {{ADMIN_PASSWORD}}
map={{MAP}}
port={{SERVER_PORT}}
players={{MAX_PLAYERS}}
url="$map?listen?Port=$port?MaxPlayers=$players"
# The game logs to ShooterGame/Saved/Logs/ShooterGame.log only: follow it for the console and the ready line.
mkdir -p ShooterGame/Saved/Logs
: > ShooterGame/Saved/Logs/ShooterGame.log
tail -n +1 -F ShooterGame/Saved/Logs/ShooterGame.log 2>/dev/null &
# include: ../_shared/end-follower.sh
# BattlEye does not run under Wine. ASA needs no separate query port.
exec wine ./ShooterGame/Binaries/Win64/ArkAscendedServer.exe "$url" \
    -WinLiveMaxPlayers="$players" -MultiHome={{SERVER_IP}} -NoBattlEye -servergamelog
