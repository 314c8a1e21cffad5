export HOME="$PWD"
# include: ../_shared/oneline.sh
# include: ../_shared/iniset.sh
# Names and passwords go to GameUserSettings.ini: on the command line, ARK's option
# string (Map?key=value?…) cannot hold spaces or question marks.
iniset ShooterGame/Saved/Config/LinuxServer/GameUserSettings.ini SessionSettings SessionName {{SERVER_NAME}}
iniset ShooterGame/Saved/Config/LinuxServer/GameUserSettings.ini ServerSettings ServerPassword {{SERVER_PASSWORD}}
iniset ShooterGame/Saved/Config/LinuxServer/GameUserSettings.ini ServerSettings ServerAdminPassword {{ADMIN_PASSWORD}}
map={{MAP}}
port={{SERVER_PORT}}
players={{MAX_PLAYERS}}
url="$map?listen?Port=$port?QueryPort=$((port + 2))?MaxPlayers=$players"
# The game logs to ShooterGame/Saved/Logs/ShooterGame.log only: follow it for the console and the ready line.
mkdir -p ShooterGame/Saved/Logs
: > ShooterGame/Saved/Logs/ShooterGame.log
tail -n +1 -F ShooterGame/Saved/Logs/ShooterGame.log 2>/dev/null &
# include: ../_shared/end-follower.sh
# The game port and port+1 (raw UDP), Steam query on port+2.
exec ./ShooterGame/Binaries/Linux/ShooterGameServer "$url" \
    -server -log -MultiHome={{SERVER_IP}}
