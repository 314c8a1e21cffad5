# include: ../_shared/wine-env.sh
# include: ../_shared/oneline.sh
# include: ../_shared/iniset.sh
# include: ../_shared/derived_port.sh
config=ConanSandbox/Saved/Config/WindowsServer
iniset "$config/Engine.ini" OnlineSubsystem ServerName {{SERVER_NAME}}
iniset "$config/Engine.ini" OnlineSubsystem ServerPassword {{SERVER_PASSWORD}}
iniset "$config/Game.ini" /Script/Engine.GameSession MaxPlayers {{MAX_PLAYERS}}
port={{SERVER_PORT}}
# Conan Exiles opens the game port + 1 (raw UDP) itself.
derived_port raw {{PORT_RAW}} "$((port + 1))"
# The game logs to ConanSandbox/Saved/Logs/ConanSandbox.log only: follow it for the console and the ready line.
mkdir -p ConanSandbox/Saved/Logs
: > ConanSandbox/Saved/Logs/ConanSandbox.log
tail -n +1 -F ConanSandbox/Saved/Logs/ConanSandbox.log 2>/dev/null &
# include: ../_shared/end-follower.sh
exec wine ./ConanSandbox/Binaries/Win64/ConanSandboxServer-Win64-Shipping.exe -log \
    -MultiHome={{SERVER_IP}} -Port="$port" -QueryPort={{PORT_QUERY}}
