export HOME="$PWD"
# include: ../_shared/oneline.sh
# include: ../_shared/iniset.sh
# include: ../_shared/derived_port.sh
# Names and passwords go to GameUserSettings.ini: on the command line, ARK's option
# string (Map?key=value?…) cannot hold spaces or question marks.
iniset ShooterGame/Saved/Config/LinuxServer/GameUserSettings.ini SessionSettings SessionName {{SERVER_NAME}}
iniset ShooterGame/Saved/Config/LinuxServer/GameUserSettings.ini ServerSettings ServerPassword {{SERVER_PASSWORD}}
iniset ShooterGame/Saved/Config/LinuxServer/GameUserSettings.ini ServerSettings ServerAdminPassword {{ADMIN_PASSWORD}}
map={{MAP}}
port={{SERVER_PORT}}
query={{PORT_QUERY}}
players={{MAX_PLAYERS}}
# ARK opens the game port + 1 (raw UDP) itself.
derived_port raw {{PORT_RAW}} "$((port + 1))"
url="$map?listen?Port=$port?QueryPort=$query?MaxPlayers=$players"
# The game logs to ShooterGame/Saved/Logs/ShooterGame.log only: follow it for the console and the ready line.
mkdir -p ShooterGame/Saved/Logs
: > ShooterGame/Saved/Logs/ShooterGame.log
tail -n +1 -F ShooterGame/Saved/Logs/ShooterGame.log 2>/dev/null &
# include: ../_shared/end-follower.sh
exec ./ShooterGame/Binaries/Linux/ShooterGameServer "$url" \
    -server -log -MultiHome={{SERVER_IP}}
