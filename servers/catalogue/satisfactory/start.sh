export HOME="$PWD"
# include: ../_shared/oneline.sh
# include: ../_shared/iniset.sh
iniset FactoryGame/Saved/Config/LinuxServer/Game.ini /Script/Engine.GameSession \
    MaxPlayers {{MAX_PLAYERS}}
port={{SERVER_PORT}}
# The game and its HTTPS API on port (UDP and TCP), reliable messaging on its named port. The
# server's name and admin password are set when it is claimed from the game.
exec ./Engine/Binaries/Linux/FactoryServer-Linux-Shipping FactoryGame -Port="$port" \
    -ReliablePort={{PORT_RELIABLE}} -multihome={{SERVER_IP}} -log -unattended
